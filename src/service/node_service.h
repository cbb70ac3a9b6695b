/* node_service: the nodes of the fleet (docs/fleet.md), as the platform sees them. */
#pragma once

#include <stddef.h>

#include "auth/principal.h"
#include "spaced/space_error.h"
#include "state_store/state_store.h"

struct spaced_context;

/* Every node, by id: the platform's only (forbidden for anyone else). */
int node_service_list(struct spaced_context *ctx, const struct principal *p, struct node_record **ret, size_t *ret_n,
                      struct space_error *err);
/* Where the data plane of sandbox id is served (api/node_forward.h): 0 here (this node owns
 * it, no node does yet, or there is no such sandbox: the handler answers that); 1 on
 * another node that is live (ready, heartbeating within --claim-lease), its row in *ret; -1
 * with err node_unavailable when that node is lost or silent. Reads nothing for a single
 * spaced (no --database). */
int node_service_locate(struct spaced_context *ctx, const char *sandbox_id, struct node_record *ret, struct space_error *err);
