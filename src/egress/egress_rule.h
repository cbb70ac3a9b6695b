/* egress_rule: one allow or deny rule of an egress policy, written as text:
 *   NAME[:PORT]      a domain, exact ("pypi.org") or every name under one ("*.pypi.org")
 *   A.B.C.D[/N][:PORT]  an IPv4 address or network
 * A domain rule matches the name a connection asked for (TLS SNI, HTTP Host, a DNS query);
 * a network rule matches the address that is dialled. PORT 0 (none given): every port.
 * Shared by spaced (validation at create) and space-egress (decisions). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EGRESS_NAME_MAX 253

enum egress_action { EGRESS_ALLOW, EGRESS_DENY };
enum egress_rule_kind { EGRESS_RULE_NAME, EGRESS_RULE_WILDCARD, EGRESS_RULE_CIDR };

struct egress_rule {
        enum egress_action action;
        enum egress_rule_kind kind;
        char name[EGRESS_NAME_MAX + 1]; /* lowercase; for a wildcard the part after "*." */
        uint32_t net, mask;             /* host byte order */
        uint16_t port;                  /* 0: any */
};

/* 0 and *ret, or -EINVAL with why filled (a sentence for the API caller). */
int egress_rule_parse(const char *text, enum egress_action action, struct egress_rule *ret, char *why, size_t why_size);
/* Lowercases name into buf without a trailing dot; false if it is not a valid domain name. */
bool egress_name_normalize(const char *name, char *buf, size_t size);
/* A rule matches (name, port) / (addr, port). Port 0 asks "for some port" (a DNS answer):
 * a port-limited allow rule matches it, a port-limited deny rule does not. */
bool egress_rule_matches_name(const struct egress_rule *r, const char *name, uint16_t port);
bool egress_rule_matches_addr(const struct egress_rule *r, uint32_t addr, uint16_t port);
/* Loopback, private, shared, link-local, multicast, reserved, documentation and broadcast
 * addresses: never dialled unless a network rule of the profile allows them. */
bool egress_addr_is_special(uint32_t addr);
