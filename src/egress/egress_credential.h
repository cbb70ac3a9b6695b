/* egress_credential: the platform-held credentials one sandbox's requests get (docs/network.md),
 * as spaced sends them in its policy line ("credentials", operations/credential_binding.h):
 * which destination (an egress_rule of a name, exact or *.wildcard, and a port), which
 * header, its whole value, and for which methods. Values are plaintext: they live in this
 * process only, in memory erased when the entry is released. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "egress/egress_rule.h"

#define EGRESS_CREDENTIALS_MAX 64
#define EGRESS_CREDENTIALS_BYTES_MAX 32768 /* headers and values of one sandbox, all together */

struct egress_credential {
        struct egress_rule match;
        char binding[32];
        char secret[64];
        char header[65];
        char *value; /* the header's value */
        size_t value_len;
        char methods[16][17]; /* none: every method */
        size_t n_methods;
        int64_t expires_at_ms; /* wall clock; 0: none (a grant's deadline) */
};

struct egress_credentials {
        struct egress_credential *items;
        size_t n;
};

/* Parses the "credentials" array (NULL or absent: none). 0, or -EINVAL with why, -ENOMEM. */
int egress_credentials_from_json(const json_t *list, struct egress_credentials *ret, char *why, size_t why_size);
/* Erases the values and frees. */
void egress_credentials_release(struct egress_credentials *c);
/* Whether any credential is for (name, port): the connection's requests are rewritten. */
bool egress_credentials_any_for(const struct egress_credentials *c, const char *name, uint16_t port);
/* Whether the credential applies to a request of method now (not past its deadline). */
bool egress_credential_for_method(const struct egress_credential *cr, const char *method);
