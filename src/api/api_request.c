#include "api/api_request.h"

#include <errno.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct query_check {
        const struct api_request *req;
        struct space_error *err;
        bool bad;
};

static bool query_name_allowed(const char *const *allowed, const char *key, size_t key_size)
{
        for (; allowed && *allowed; allowed++) {
                size_t n = strlen(*allowed);
                if (n && (*allowed)[n - 1] == '.' ? key_size > n && memcmp(key, *allowed, n) == 0
                                                  : key_size == n && memcmp(key, *allowed, n) == 0)
                        return true;
        }
        return false;
}

/* "wait, timeout_s" for the message that refuses another one. */
static void query_names(const char *const *allowed, char *buf, size_t size)
{
        size_t len = 0;
        buf[0] = '\0';
        for (; allowed && *allowed && len < size; allowed++) {
                size_t n = strlen(*allowed);
                int w = snprintf(buf + len, size - len, "%s%s%s", len ? ", " : "", *allowed,
                                 n && (*allowed)[n - 1] == '.' ? "<key>" : "");
                if (w < 0)
                        break;
                len += (size_t)w;
        }
}

static enum MHD_Result query_arg(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size, const char *value,
                                 size_t value_size)
{
        struct query_check *c = cls;
        if (memchr(key, 0, key_size) || (value && memchr(value, 0, value_size)))
                space_error_set(c->err, SPACE_E_INVALID_REQUEST, "query parameter %.64s holds a NUL byte", key);
        else if (!query_name_allowed(c->req->query_allowed, key, key_size)) {
                char names[256];
                query_names(c->req->query_allowed, names, sizeof(names));
                space_error_set(c->err, SPACE_E_INVALID_REQUEST, "unknown query parameter %.64s for %s %.128s (%s%s)", key,
                                c->req->method, c->req->path, names[0] ? "it takes: " : "it takes none", names);
        } else if (!value)
                space_error_set(c->err, SPACE_E_INVALID_REQUEST, "query parameter %.64s has no value (write %.64s=...)", key,
                                key);
        else
                return MHD_YES;
        c->bad = true;
        return MHD_NO;
}

int api_request_check_query(const struct api_request *req, struct space_error *err)
{
        if (req->query_allowed && req->query_allowed[0] && strcmp(req->query_allowed[0], "*") == 0)
                return 0;
        struct query_check c = { .req = req, .err = err };
        MHD_get_connection_values_n(req->conn, MHD_GET_ARGUMENT_KIND, query_arg, &c);
        return c.bad ? -1 : 0;
}

int api_request_check_body(const struct api_request *req, struct space_error *err)
{
        json_t *j = NULL;
        switch (req->body_rule) {
        case API_BODY_ANY:
                return 0;
        case API_BODY_NONE:
                if (req->body_len)
                        return space_error_set(err, SPACE_E_INVALID_REQUEST, "%s %s takes no request body", req->method,
                                               req->path);
                return 0;
        case API_BODY_NO_FIELDS:
                if (api_request_json(req, &j, err) < 0)
                        return -1;
                size_t n = json_object_size(j);
                json_decref(j);
                if (n)
                        return space_error_set(err, SPACE_E_INVALID_REQUEST, "%s %s takes no fields: send no body or {}",
                                               req->method, req->path);
                return 0;
        }
        return 0;
}

int api_request_check_announced_body(const struct api_request *req, struct space_error *err)
{
        if (req->body_rule != API_BODY_NONE)
                return 0;
        const char *len = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        const char *te = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
        if (te || (len && strspn(len, "0") != strlen(len)))
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "%s %s takes no request body", req->method, req->path);
        return 0;
}

/* "application/json", any case, alone or before parameters ("; charset=utf-8"). */
static bool is_json_type(const char *ct)
{
        return ct && strncasecmp(ct, "application/json", 16) == 0 &&
                (ct[16] == '\0' || ct[16] == ';' || ct[16] == ' ' || ct[16] == '\t');
}

const char *api_request_query(const struct api_request *req, const char *name)
{
        return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, name);
}

int api_request_query_bool(const struct api_request *req, const char *name, bool *ret, struct space_error *err)
{
        const char *v = api_request_query(req, name);
        if (!v)
                return 0;
        if (strcmp(v, "true") == 0 || strcmp(v, "1") == 0)
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
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "query parameter %s must be an integer in [%lld, %lld]",
                                       name, min, max);
        *ret = n;
        return 0;
}

int api_request_json(const struct api_request *req, json_t **ret, struct space_error *err)
{
        if (req->body_len == 0) {
                *ret = json_object();
                return 0;
        }
        if (!is_json_type(req->content_type))
                return space_error_set(err, SPACE_E_UNSUPPORTED_MEDIA_TYPE, "send the body as application/json, not %.64s",
                                       req->content_type ? req->content_type : "without a Content-Type");
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
