/* sandbox_history: a sandbox's state as addressable objects — snapshots of its filesystem,
 * restore to one of them, and forks into independent copies. Same pattern as
 * sandbox_lifecycle: submit writes rows + operation in one transaction, handlers are
 * idempotent and redone after a crash. */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "spaced/space_error.h"
#include "state_store/state_store.h"

struct spaced_context;

int sandbox_history_snapshot(struct spaced_context *ctx, const char *sandbox_id, const char *label, bool memory, bool rolling,
                             struct snapshot *ret_snap, struct operation *ret_op, struct space_error *err);
int sandbox_history_restore(struct spaced_context *ctx, const char *sandbox_id, const char *snapshot_id, struct operation *ret_op,
                            struct space_error *err);
/* Makes count new sandboxes (ids in ret_ids, caller frees) from the sandbox's current state
 * (memory: its processes too, through a memory snapshot taken for it), or from snapshot_id
 * when given (its processes too when that is a memory snapshot). metadata NULL: the parent's. */
int sandbox_history_fork(struct spaced_context *ctx, const char *sandbox_id, const char *snapshot_id, int count, bool memory,
                         json_t *metadata, char (**ret_ids)[32], struct operation *ret_op, struct space_error *err);
int sandbox_history_delete_snapshot(struct spaced_context *ctx, const char *snapshot_id, struct space_error *err);

int sandbox_op_snapshot(struct spaced_context *ctx, struct operation *op, struct space_error *err);
int sandbox_op_restore(struct spaced_context *ctx, struct operation *op, struct space_error *err);
int sandbox_op_fork(struct spaced_context *ctx, struct operation *op, struct space_error *err);
