/* space_error: the error a caller of the API must see — a machine-readable code and a
 * message. Code below the operations layer returns -errno; code that fails for a reason the
 * client must learn fills a struct space_error. api_error.c is the one place that maps
 * codes to HTTP status. See docs/conventions.md. */
#pragma once

#include <stdarg.h>

enum space_error_code {
        SPACE_OK = 0,
        SPACE_E_INVALID_JSON,
        SPACE_E_INVALID_REQUEST,
        SPACE_E_UNAUTHORIZED,
        SPACE_E_NOT_FOUND,
        SPACE_E_METHOD_NOT_ALLOWED,
        SPACE_E_INVALID_STATE,
        SPACE_E_TEMPLATE_NOT_READY,
        SPACE_E_ALREADY_EXISTS,
        SPACE_E_PAYLOAD_TOO_LARGE,
        SPACE_E_UNSUPPORTED_MEDIA_TYPE,
        SPACE_E_UNSUPPORTED,
        SPACE_E_UNAVAILABLE,
        SPACE_E_TIMEOUT,
        SPACE_E_FORBIDDEN,
        SPACE_E_PERMISSION_DENIED,     /* the sandbox's own permissions refused a file operation */
        SPACE_E_CONFLICT,              /* the target's current content forbids it (a non-empty directory) */
        SPACE_E_RANGE_NOT_SATISFIABLE, /* a download's Range lies beyond the file */
        SPACE_E_INTERNAL,
        SPACE_E_BUILD_FAILED, /* a template build step failed (the log says why) */
        SPACE_E_CANCELLED,
        SPACE_E_GONE,             /* it existed, and what was asked for was removed (a destroyed sandbox's command log) */
        SPACE_E_POLICY_DENIED,    /* a policy of the project denies it (docs/governance.md) */
        SPACE_E_BAD_GATEWAY,      /* what the sandbox serves on a port failed (nothing listens, a malformed answer) */
        SPACE_E_NODE_UNAVAILABLE, /* the sandbox lives on a node of the fleet this spaced cannot reach (lost, gone) */
};

struct space_error {
        enum space_error_code code;
        char message[512];
};

/* Fills err (if not NULL) and returns -1 so callers can `return space_error_set(...)`. */
int space_error_set(struct space_error *err, enum space_error_code code, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
/* Like space_error_set with SPACE_E_INTERNAL (SPACE_E_TIMEOUT for ETIMEDOUT), appending
 * ": strerror(-r)". */
int space_error_errno(struct space_error *err, int r, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Prefixes context to an existing message: "context: message". */
void space_error_wrap(struct space_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

const char *space_error_code_name(enum space_error_code code);
enum space_error_code space_error_code_from_name(const char *name);
