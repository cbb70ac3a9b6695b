/* egress_http_inject: the client → server byte stream of a plain-HTTP connection whose
 * destination has credentials (docs/network.md), rewritten request by request: in each
 * request head the headers the credentials name are removed (whatever the client sent
 * under those names never reaches the server) and the platform's are added (for the
 * methods a credential allows); bodies (Content-Length or chunked) pass unchanged. A head
 * whose Host is not the connection's name, one too large, or framing it cannot follow
 * (obs-fold, bare CR or LF, conflicting lengths) ends the connection: the secret never
 * goes where the connection was not decided for. After an Upgrade or CONNECT the rest
 * passes as it is. The same rewriter holds a read-only sandbox to safe methods. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "egress/egress_credential.h"

#define EGRESS_INJECT_HEAD_MAX 16384
#define EGRESS_INJECT_IN_MAX 32768

enum egress_inject_state {
        EGRESS_INJECT_HEAD,
        EGRESS_INJECT_BODY,
        EGRESS_INJECT_CHUNK_SIZE,
        EGRESS_INJECT_CHUNK_DATA,
        EGRESS_INJECT_CHUNK_END,
        EGRESS_INJECT_TRAILER,
        EGRESS_INJECT_RAW,
};

struct egress_inject {
        enum egress_inject_state state;
        uint64_t left;
        uint8_t in[EGRESS_INJECT_IN_MAX]; /* what the client sent, not yet rewritten */
        size_t in_len;
};

/* Called for each credential put on a request. */
typedef void (*egress_inject_used)(void *arg, const struct egress_credential *cr, const char *method);

/* Rewrites what it can of ij->in into out (room bytes free), for the connection to name
 * (normalized) on port with the sandbox's credentials creds; read_only: a request of
 * another method than GET, HEAD or OPTIONS (or one asking for an Upgrade) is not sent.
 * *ret_written: bytes put in out. 0, or -EPROTO (framing), -EACCES (read-only): the
 * connection must end (what was written before that request still goes out). */
int egress_inject_run(struct egress_inject *ij, const struct egress_credentials *creds, const char *name, uint16_t port,
                      bool read_only, uint8_t *out, size_t room, size_t *ret_written, egress_inject_used used, void *arg);
