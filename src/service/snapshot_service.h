/* snapshot_service: snapshots as a caller sees them (one at a time: snapshot_access.h) and
 * the rows of imported ones. Taking, restoring and deleting are operations/sandbox_history's. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "auth/principal.h"
#include "spaced/space_error.h"
#include "state_store/state_store.h"

struct spaced_context;

/* The snapshots p sees in project (as project_service_scope), of sandbox_id (NULL: any),
 * oldest first, paged. free(*ret). */
int snapshot_service_list(struct spaced_context *ctx, const struct principal *p, const char *project, const char *sandbox_id,
                          const struct store_page *page, struct snapshot **ret, size_t *ret_n, struct space_error *err);
/* The newest ready snapshot labelled label that p sees; not_found when none. */
int snapshot_service_by_label(struct spaced_context *ctx, const struct principal *p, const char *label, struct snapshot *ret,
                              struct space_error *err);
/* Whether a snapshot row named id exists, whoever's it is: snapshot ids are one namespace
 * on a server, so an import may not reuse one (its answer says "already here"). */
bool snapshot_service_id_taken(struct spaced_context *ctx, const char *id);
/* Stores the row of a snapshot p imported (snap->project_id must be one p sees). */
int snapshot_service_add_imported(struct spaced_context *ctx, const struct principal *p, const struct snapshot *snap,
                                  struct space_error *err);
