/* egress_dns: the few DNS messages space-egress reads and writes (RFC 1035): a sandbox's
 * query, the query it forwards to the resolver, the resolver's answer (A records only) and
 * the reply to the sandbox. Every length is checked: both sides are untrusted. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EGRESS_DNS_MAX 512 /* UDP without EDNS */
#define EGRESS_DNS_A 1
#define EGRESS_DNS_AAAA 28
#define EGRESS_DNS_NOERROR 0
#define EGRESS_DNS_FORMERR 1
#define EGRESS_DNS_SERVFAIL 2
#define EGRESS_DNS_NXDOMAIN 3
#define EGRESS_DNS_REFUSED 5

struct egress_dns_question {
        uint16_t id;
        bool rd;
        char name[256]; /* dotted, as asked (letters, digits, '-', '_') */
        uint16_t qtype, qclass;
};

/* A standard query with one question: 0, or -EBADMSG. */
int egress_dns_parse_query(const uint8_t *msg, size_t len, struct egress_dns_question *ret);
/* The reply to q with rcode and the given A records. Returns its length, 0 if it does not fit. */
size_t egress_dns_build_reply(const struct egress_dns_question *q, int rcode, const uint32_t *addrs, size_t n, uint32_t ttl,
                              uint8_t *buf, size_t size);
/* A recursive query for (name, qtype) with id. Returns its length, 0 on a bad name. */
size_t egress_dns_build_query(uint16_t id, const char *name, uint16_t qtype, uint8_t *buf, size_t size);
/* The A records of a response to id (host byte order, at most max), its rcode and the lowest
 * TTL. 0, or -EBADMSG (malformed, not a response, another id). */
int egress_dns_parse_answer(const uint8_t *msg, size_t len, uint16_t id, uint32_t *addrs, size_t max, size_t *ret_n,
                            int *ret_rcode, uint32_t *ret_ttl);
