#include "api/api_request.h"

#include <errno.h>
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>

const char *api_request_query(const struct api_request *req, const char *name)
{
        return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, name);
}

int api_request_query_bool(const struct api_request *req, const char *name, bool *ret, struct space_error *err)
{
        const char *v = api_request_query(req, name);
        if (!v)
                return 0;
        if (strcmp(v, "true") == 0 || strcmp(v, "1") == 0 || strcmp(v, "") == 0)
                *ret = true;
        else if (strcmp(v, "false") == 0 || strcmp(v, "0") == 0)
                *ret = false;
        else
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "query parameter %s must be true or false", name);
        return 0;
}

int api_request_query_int(const struct api_request *req, const char *name, long long min, long long max, long long *ret,
                          struct space_error *err)
{
        const char *v = api_request_query(req, name);
        if (!v)
                return 0;
        char *end;
        errno = 0;
        long long n = strtoll(v, &end, 10);
        if (errno || end == v || *end || n < min || n > max)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "query parameter %s must be an integer in [%lld, %lld]", name,
                                       min, max);
        *ret = n;
        return 0;
}

int api_request_json(const struct api_request *req, json_t **ret, struct space_error *err)
{
        if (req->body_len == 0) {
                *ret = json_object();
                return 0;
        }
        if (req->content_type && strncasecmp(req->content_type, "application/json", 16) != 0)
                return space_error_set(err, SPACE_E_UNSUPPORTED_MEDIA_TYPE, "send the body as application/json, not %.64s",
                                       req->content_type);
        json_error_t jerr;
        json_t *j = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &jerr);
        if (!j)
                return space_error_set(err, SPACE_E_INVALID_JSON, "body is not valid JSON: %s (line %d, column %d)", jerr.text,
                                       jerr.line, jerr.column);
        if (!json_is_object(j)) {
                json_decref(j);
                return space_error_set(err, SPACE_E_INVALID_JSON, "body must be a JSON object");
        }
        *ret = j;
        return 0;
}
