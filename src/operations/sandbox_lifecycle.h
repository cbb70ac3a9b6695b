/* sandbox_lifecycle: the state machine of a sandbox. Submitting an action checks and moves
 * the state and stores the operation in one transaction, then queues it; the handlers do
 * the side effects and write the final state. */
#pragma once

#include "spaced/space_error.h"
#include "state_store/state_store.h"

struct spaced_context;

enum sandbox_action { SANDBOX_ACTION_STOP, SANDBOX_ACTION_START, SANDBOX_ACTION_PAUSE, SANDBOX_ACTION_RESUME, SANDBOX_ACTION_DESTROY };

int sandbox_action_from_name(const char *name, enum sandbox_action *ret);

/* Creates the row (state creating) and its sandbox.create operation, and queues it. */
int sandbox_lifecycle_create(struct spaced_context *ctx, struct sandbox *sb, struct operation *ret_op, struct space_error *err);
int sandbox_lifecycle_submit(struct spaced_context *ctx, const char *id, enum sandbox_action action,
                             struct operation *ret_op, struct space_error *err);

int sandbox_op_create(struct spaced_context *ctx, const struct operation *op, struct space_error *err);
int sandbox_op_start(struct spaced_context *ctx, const struct operation *op, struct space_error *err);
int sandbox_op_stop(struct spaced_context *ctx, const struct operation *op, struct space_error *err);
int sandbox_op_pause(struct spaced_context *ctx, const struct operation *op, struct space_error *err);
int sandbox_op_resume(struct spaced_context *ctx, const struct operation *op, struct space_error *err);
int sandbox_op_destroy(struct spaced_context *ctx, const struct operation *op, struct space_error *err);
