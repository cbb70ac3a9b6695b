/* upstream_response: the HTTP/1.1 answer of a server inside a sandbox (hostile), read from
 * its connection for the port proxy (port_proxy.h): the status line and headers, bounded in
 * size and count, then the body as its framing says (Content-Length, chunked — decoded
 * here, the client's side frames it again — or until the server closes). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "spaced/space_error.h"

#define UPSTREAM_HEAD_MAX (16u << 10) /* status line and headers together */
#define UPSTREAM_HEADERS_MAX 100

struct upstream_header {
        char *name; /* point into head */
        char *value;
};

struct upstream_response {
        int fd; /* borrowed */
        unsigned status;
        struct upstream_header headers[UPSTREAM_HEADERS_MAX];
        unsigned nheaders;
        /* the body's framing */
        bool chunked;
        bool has_length;
        uint64_t length; /* with has_length: bytes still to come */
        bool body_done;
        /* chunked: bytes left of the current chunk; in_chunk says one is open */
        uint64_t chunk_left;
        bool in_chunk;
        /* read-ahead: head and what came after it */
        char buf[UPSTREAM_HEAD_MAX];
        size_t pos, len;
        char head[UPSTREAM_HEAD_MAX]; /* the head's text, NUL-separated in place */
};

/* Reads the head from fd (1xx answers other than 101 skipped). has_body: false for a HEAD
 * request. 0, or -1 with err: bad_gateway (closed, malformed, too large), timeout. */
int upstream_response_read_head(struct upstream_response *u, int fd, bool has_body, struct space_error *err);
/* The value of header name (any case), or NULL; the first when there are several. */
const char *upstream_response_header(const struct upstream_response *u, const char *name);
/* The next bytes of the body into buf: > 0, 0 at its end, -1 when the server broke it off
 * (closed early, timed out, a malformed chunk). */
ssize_t upstream_response_read_body(struct upstream_response *u, char *buf, size_t max);
/* Bytes read past the head (a 101's first bytes of the new protocol): *ret_n of them at the
 * returned pointer. */
const char *upstream_response_pending(const struct upstream_response *u, size_t *ret_n);
