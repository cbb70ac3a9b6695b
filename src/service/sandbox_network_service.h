/* sandbox_network_service: a sandbox's egress as a caller reads and changes it after its
 * create (GET and PUT /v1/sandboxes/{id}/network, E2B's PUT /sandboxes/{id}/network), and
 * the operator's egress profiles a caller may name (GET /v1/egress-profiles).
 *
 * A change replaces the sandbox's own allow and deny lists; its profile stays the one it
 * was made with (a caller cannot widen what the operator's profile allows, and a sandbox
 * of the profile none has no link to give rules to). It is stored first, then handed to
 * the gateway: new connections follow at once, open ones the new rules deny are closed
 * (docs/network.md). */
#pragma once

#include <jansson.h>

#include "auth/principal.h"
#include "spaced/space_error.h"
#include "state_store/state_store.h"

struct spaced_context;

/* request: {"profile"?, "allow"?, "deny"?} (sandbox_network_request.h); an absent list is
 * empty; a profile other than the sandbox's is invalid_request. not_found as
 * sandbox_access_load, invalid_state for a destroyed sandbox. *ret: the row afterwards. */
int sandbox_network_service_replace(struct spaced_context *ctx, const struct principal *p, const char *id, const json_t *request,
                                    struct sandbox *ret, struct space_error *err);

/* Returns a new reference: [{"name", "default", "rules"}, …] by name, every profile of this
 * server (none and public built in, the operator's file), for any caller that may create
 * sandboxes; which one is the server's default is *ret_default (borrowed from ctx). */
json_t *egress_profile_service_list_new(const struct spaced_context *ctx, const char **ret_default);
