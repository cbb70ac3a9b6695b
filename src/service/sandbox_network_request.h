/* sandbox_network_request: the network member of a create body, checked and made into what
 * a sandbox stores (state_store.h, sandbox.network):
 *   {"profile": NAME, "allow": [RULE, …], "deny": [RULE, …]}   (egress/egress_policy.h)
 * Every member is optional: the profile defaults to the server's (--egress-profile). The
 * rules can only narrow the profile (egress_policy.h explains how), so any caller may give
 * them; a profile that does not exist, a rule that does not parse, or rules for the profile
 * none are refused (invalid_request: 400) and nothing is stored. */
#pragma once

#include <jansson.h>

#include "spaced/space_error.h"

struct spaced_context;

/* request: the body's member (borrowed; NULL when absent). *ret: a new reference, or NULL
 * for the profile none. 0, or -1 with err filled. */
int sandbox_network_request_parse(const struct spaced_context *ctx, const json_t *request, json_t **ret, struct space_error *err);
