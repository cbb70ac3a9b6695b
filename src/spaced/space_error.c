#include "spaced/space_error.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const char *const code_names[] = {
        [SPACE_OK] = "ok",
        [SPACE_E_INVALID_JSON] = "invalid_json",
        [SPACE_E_INVALID_REQUEST] = "invalid_request",
        [SPACE_E_UNAUTHORIZED] = "unauthorized",
        [SPACE_E_NOT_FOUND] = "not_found",
        [SPACE_E_METHOD_NOT_ALLOWED] = "method_not_allowed",
        [SPACE_E_INVALID_STATE] = "invalid_state",
        [SPACE_E_TEMPLATE_NOT_READY] = "template_not_ready",
        [SPACE_E_ALREADY_EXISTS] = "already_exists",
        [SPACE_E_PAYLOAD_TOO_LARGE] = "payload_too_large",
        [SPACE_E_UNSUPPORTED_MEDIA_TYPE] = "unsupported_media_type",
        [SPACE_E_UNSUPPORTED] = "unsupported",
        [SPACE_E_UNAVAILABLE] = "unavailable",
        [SPACE_E_TIMEOUT] = "timeout",
        [SPACE_E_FORBIDDEN] = "forbidden",
        [SPACE_E_PERMISSION_DENIED] = "permission_denied",
        [SPACE_E_CONFLICT] = "conflict",
        [SPACE_E_RANGE_NOT_SATISFIABLE] = "range_not_satisfiable",
        [SPACE_E_INTERNAL] = "internal",
        [SPACE_E_BUILD_FAILED] = "build_failed",
        [SPACE_E_CANCELLED] = "cancelled",
        [SPACE_E_GONE] = "gone",
        [SPACE_E_POLICY_DENIED] = "policy_denied",
        [SPACE_E_BAD_GATEWAY] = "bad_gateway",
        [SPACE_E_NODE_UNAVAILABLE] = "node_unavailable",
};

int space_error_set(struct space_error *err, enum space_error_code code, const char *fmt, ...)
{
        if (!err)
                return -1;
        va_list ap;
        va_start(ap, fmt);
        err->code = code;
        vsnprintf(err->message, sizeof(err->message), fmt, ap);
        va_end(ap);
        return -1;
}

int space_error_errno(struct space_error *err, int r, const char *fmt, ...)
{
        if (!err)
                return -1;
        char buf[384];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        /* A deadline that passed (an agent that did not answer in time) is the caller's 504,
         * not spaced's own failure. */
        err->code = (r < 0 ? -r : r) == ETIMEDOUT ? SPACE_E_TIMEOUT : SPACE_E_INTERNAL;
        snprintf(err->message, sizeof(err->message), "%s: %s", buf, strerror(r < 0 ? -r : r));
        return -1;
}

void space_error_wrap(struct space_error *err, const char *fmt, ...)
{
        if (!err)
                return;
        char prefix[256], old[sizeof(err->message)];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(prefix, sizeof(prefix), fmt, ap);
        va_end(ap);
        memcpy(old, err->message, sizeof(old));
        snprintf(err->message, sizeof(err->message), "%s: %s", prefix, old);
}

const char *space_error_code_name(enum space_error_code code)
{
        if ((size_t)code < sizeof(code_names) / sizeof(code_names[0]) && code_names[code])
                return code_names[code];
        return "internal";
}

enum space_error_code space_error_code_from_name(const char *name)
{
        for (size_t i = 0; i < sizeof(code_names) / sizeof(code_names[0]); i++)
                if (code_names[i] && name && strcmp(code_names[i], name) == 0)
                        return (enum space_error_code)i;
        return SPACE_E_INTERNAL;
}
