/* egress_peek: the name a client's first bytes ask for, read without trusting them: the
 * server_name of a TLS ClientHello or the Host header of an HTTP/1 request. Bounded: at most
 * EGRESS_PEEK_MAX bytes are ever looked at. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define EGRESS_PEEK_MAX 16384

enum egress_peek_result {
        EGRESS_PEEK_MALFORMED = -1, /* TLS or HTTP that breaks its own framing: refused */
        EGRESS_PEEK_MORE = 0,       /* a prefix of something that may still name a host */
        EGRESS_PEEK_NAME = 1,       /* *ret holds the name (not yet normalized) */
        EGRESS_PEEK_NO_NAME = 2,    /* complete, or another protocol: no name (decided by address) */
};

/* ret: at least 254 bytes. */
enum egress_peek_result egress_peek_name(const uint8_t *buf, size_t len, char *ret, size_t size);
