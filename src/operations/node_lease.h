/* node_lease: this node's row in the store's nodes table (docs/fleet.md). Registering it
 * lets go of the claims an earlier process of this node held; a thread then heartbeats it,
 * which keeps every claim of this node alive (a claim lapses --claim-lease after its
 * node's last heartbeat), takes what is claimable (new work, and the claims of nodes whose
 * lease lapsed) onto the local queue, and marks nodes silent for --node-lost-after lost. */
#pragma once

#include "spaced/space_error.h"

struct spaced_context;
struct node_lease;

/* Writes ctx->node_id's row (address: this node's API URL) and lets go of its old claims.
 * Before reconciler_startup, which claims what this node then runs. A store that cannot be
 * written (a full or failed disk) is no reason to stay down — health says what is wrong —
 * so on failure the lease thread tries again each beat, and the node claims nothing until
 * its row is there. */
int node_lease_register(struct spaced_context *ctx, const char *address, struct space_error *err);
int node_lease_start(struct spaced_context *ctx, struct node_lease **ret);
/* Stops heartbeating: the node's claims lapse a lease later (or at its next start). */
void node_lease_free(struct node_lease *nl);
