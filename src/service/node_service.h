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
