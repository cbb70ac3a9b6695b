/* egress_policy: what one sandbox may reach. An operator's profile (ordered rules and a
 * default) plus the sandbox's own allow and deny lists, which can only narrow it:
 *
 *   1. a sandbox deny rule that matches: denied;
 *   2. a sandbox with allow rules of its own: denied unless one of them matches;
 *   3. the profile's network rules, first match, on the dialled address: a deny holds
 *      whatever name was asked for; a special address (egress_addr_is_special) is denied
 *      unless a network rule allows it;
 *   4. the profile's domain rules, first match, on the name (SNI, Host, DNS query);
 *   5. an address allowed in 3; else the profile's default ("public": any address that is
 *      not special; "deny": nothing).
 *
 * Its JSON form, shared by the profiles file, the create body's network field and the map
 * spaced sends to space-egress:
 *   {"profile": NAME, "default": "deny"|"public", "rules": [{"allow": RULE} | {"deny": RULE}, …],
 *    "allow": [RULE, …], "deny": [RULE, …], "read_only": BOOL}
 * (RULE: egress_rule.h). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "egress/egress_rule.h"

#define EGRESS_RULES_MAX 256

struct egress_policy {
        char profile[64];
        bool default_public;
        bool read_only;            /* only GET, HEAD, OPTIONS over plain HTTP; what cannot be read that way is denied */
        struct egress_rule *rules; /* the profile's, in order */
        size_t n_rules;
        struct egress_rule *allow; /* the sandbox's */
        size_t n_allow;
        struct egress_rule *deny;
        size_t n_deny;
};

/* Parses the JSON form (every field optional: default "deny", no rules). 0, or -EINVAL
 * with why filled, -ENOMEM. */
int egress_policy_from_json(const json_t *j, struct egress_policy *ret, char *why, size_t why_size);
void egress_policy_release(struct egress_policy *p);
/* Parses a list of rule strings of one action ("allow" / "deny" of a sandbox). where names
 * the field in why. *ret is malloc'd (NULL for an empty list). */
int egress_rules_from_json(const json_t *list, enum egress_action action, const char *where, struct egress_rule **ret,
                           size_t *ret_n, char *why, size_t why_size);

/* The decision for dialling addr:port (host byte order) for name (normalized, or NULL when
 * the connection named none). port 0: for some port (a DNS answer). */
enum egress_action egress_policy_decide(const struct egress_policy *p, const char *name, uint32_t addr, uint16_t port);
/* Whether the name alone is already denied (step 1, 2 for a sandbox without network allow
 * rules, 4): a DNS query for it gets NXDOMAIN without being resolved. */
bool egress_policy_name_denied(const struct egress_policy *p, const char *name);
