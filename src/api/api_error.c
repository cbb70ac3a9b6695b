/* The one mapping from space_error codes to HTTP statuses and the error body shape
 * {"error": {"code": "...", "message": "..."}}. */
#include "api/api_request.h"

#include <string.h>

#include "api/output_encoding.h"

unsigned api_error_http_status(enum space_error_code code)
{
        switch (code) {
        case SPACE_OK:
                return 200;
        case SPACE_E_INVALID_JSON:
        case SPACE_E_INVALID_REQUEST:
                return 400;
        case SPACE_E_UNAUTHORIZED:
                return 401;
        case SPACE_E_FORBIDDEN:
                return 403;
        case SPACE_E_NOT_FOUND:
                return 404;
        case SPACE_E_METHOD_NOT_ALLOWED:
                return 405;
        case SPACE_E_INVALID_STATE:
        case SPACE_E_TEMPLATE_NOT_READY:
        case SPACE_E_ALREADY_EXISTS:
                return 409;
        case SPACE_E_PAYLOAD_TOO_LARGE:
                return 413;
        case SPACE_E_UNSUPPORTED_MEDIA_TYPE:
                return 415;
        case SPACE_E_UNSUPPORTED:
        case SPACE_E_BUILD_FAILED:
                return 422;
        case SPACE_E_CANCELLED:
                return 409;
        case SPACE_E_GONE:
                return 410;
        case SPACE_E_UNAVAILABLE:
        case SPACE_E_NODE_UNAVAILABLE:
                return 503;
        case SPACE_E_BAD_GATEWAY:
                return 502;
        case SPACE_E_TIMEOUT:
                return 504;
        case SPACE_E_PERMISSION_DENIED:
        case SPACE_E_POLICY_DENIED:
                return 403;
        case SPACE_E_CONFLICT:
                return 409;
        case SPACE_E_RANGE_NOT_SATISFIABLE:
                return 416;
        case SPACE_E_INTERNAL:
                return 500;
        }
        return 500;
}

void api_response_json(struct api_response *resp, unsigned status, json_t *body)
{
        json_decref(resp->body);
        resp->status = status;
        resp->body = body;
}

void api_response_error(struct api_response *resp, const struct space_error *err)
{
        /* Messages may quote request input: keep the body valid UTF-8 whatever it holds. */
        const char *msg = err->message[0] ? err->message : space_error_code_name(err->code);
        api_response_json(resp, api_error_http_status(err->code),
                          json_pack("{s:{s:s, s:o}}", "error", "code", space_error_code_name(err->code), "message",
                                    output_encoding_utf8((const uint8_t *)msg, strlen(msg))));
}
