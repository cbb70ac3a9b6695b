/* request_trail: what one HTTP request leaves behind, on both front doors. Begun when its
 * headers are in (the request id, taken from X-Request-Id or made: request_id.h), filled as
 * it is routed and authenticated (the principal, the route's action and target) and
 * answered (status, error code, bytes), and finished exactly once, when libmicrohttpd says
 * the request is over (after the last byte of a stream, or when the client left):
 *  - an access log line at info level (event=http.access);
 *  - an audit row (state_store audit_insert) for a mutating call, and for any call refused
 *    for who made it (401, 403), whatever its method.
 * Nothing else is recorded: never a header (Authorization), a query string, or a body.
 *
 * Writing the audit row fails open: the answer has gone out and the change, if any, is
 * made, so the request cannot be refused any more; a failed write is logged at error level
 * with the whole row (event=audit.write_failed), so the record is in the log instead. */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "api/api_request.h"
#include "api/request_id.h"

struct MHD_Connection;
struct spaced_context;

struct request_trail {
        char id[REQUEST_ID_SIZE];
        const char *door; /* "v1" | "e2b" */
        int64_t started_us;
        char method[8];
        char path[256];  /* without the query string */
        char source[64]; /* the client's address, "unix" on the local socket */
        /* the principal, once authenticated; role "" for data-plane tokens (their project is
         * their sandbox's) */
        char key_id[32];
        char project[64];
        char role[32];
        const char *action; /* the route's, a static string; NULL when no route matched */
        bool mutating;      /* the route changes something (audited whatever its answer) */
        char target[72];    /* the id in the path, else what a create made (resp->created), or "" */
        unsigned status;
        char error_code[32];
        atomic_uint_fast64_t bytes; /* of the response body sent */
        bool finished;
};

/* The client's address of conn (IPv4 or IPv6 text), "unix" on the local socket. */
void request_trail_client_address(struct MHD_Connection *conn, char *buf, size_t size);
/* Starts the trail of a request: its id from the client's X-Request-Id when well-formed. */
void request_trail_begin(struct request_trail *t, struct MHD_Connection *conn, const char *door, const char *method,
                         const char *url);
/* The route found: its action name, whether it changes anything, and the id in the path. */
void request_trail_route(struct request_trail *t, const char *action, bool mutating, const char *target);
/* The caller once authenticated (a key, or the key behind a session). */
void request_trail_principal(struct request_trail *t, const struct api_request *req);
/* The answer about to be sent: status and error code (from the body's error.code or code). */
void request_trail_answer(struct request_trail *t, const struct api_response *resp);
/* The end: writes the access log line and, when due, the audit row. Once; later calls do
 * nothing. completed: the whole answer went out. */
void request_trail_finish(struct request_trail *t, struct spaced_context *ctx, bool completed);
/* Whether a request with this method and answer is audited (exposed for tests). */
bool request_trail_audited(bool mutating, unsigned status);
