/* sandbox_lifecycle: the state machine of a sandbox. Submitting an action checks and moves
 * the state and stores the operation in one transaction, then queues it; the handlers do
 * the side effects and write the final state. */
#pragma once

#include "spaced/space_error.h"
#include <stdbool.h>
#include <stdint.h>

#include "state_store/state_store.h"

struct spaced_context;

enum sandbox_action {
        SANDBOX_ACTION_STOP,
        SANDBOX_ACTION_START,
        SANDBOX_ACTION_PAUSE,
        SANDBOX_ACTION_RESUME,
        SANDBOX_ACTION_DESTROY
};

int sandbox_action_from_name(const char *name, enum sandbox_action *ret);

/* Creates the row (state creating) and its sandbox.create operation, and queues it. */
int sandbox_lifecycle_create(struct spaced_context *ctx, struct sandbox *sb, struct operation *ret_op, struct space_error *err);
/* The two halves of create. bind: the template (or snapshot) it is made from, its environment
 * binding and env, and the runtime that runs it; nothing is stored. insert: a fresh id, the
 * row in state creating and its sandbox.create operation, queued. */
int sandbox_lifecycle_bind(struct spaced_context *ctx, struct sandbox *sb, struct space_error *err);
int sandbox_lifecycle_insert(struct spaced_context *ctx, struct sandbox *sb, struct operation *ret_op, struct space_error *err);
/* A bound sandbox that already runs under sb->id with sb->runtime_state (a warm pool's,
 * controller/warm_pool.h): its row in state running and its create, already succeeded,
 * stored in one transaction; nothing is queued. */
int sandbox_lifecycle_insert_running(struct spaced_context *ctx, struct sandbox *sb, struct operation *ret_op,
                                     struct space_error *err);
int sandbox_lifecycle_submit(struct spaced_context *ctx, const char *id, enum sandbox_action action, struct operation *ret_op,
                             struct space_error *err);
/* The same with the operation's params (taken: a new reference, may be NULL). */
int sandbox_lifecycle_submit_with(struct spaced_context *ctx, const char *id, enum sandbox_action action, json_t *params,
                                  struct operation *ret_op, struct space_error *err);
/* Like sandbox_lifecycle_submit_with, for an action taken on a sandbox in state held, which
 * it keeps until the operation settles it (the hibernation of a paused sandbox). */
int sandbox_lifecycle_submit_held(struct spaced_context *ctx, const char *id, enum sandbox_action action, enum sandbox_state held,
                                  json_t *params, struct operation *ret_op, struct space_error *err);

int sandbox_op_create(struct spaced_context *ctx, struct operation *op, struct space_error *err);
int sandbox_op_start(struct spaced_context *ctx, struct operation *op, struct space_error *err);
int sandbox_op_stop(struct spaced_context *ctx, struct operation *op, struct space_error *err);
int sandbox_op_pause(struct spaced_context *ctx, struct operation *op, struct space_error *err);
int sandbox_op_resume(struct spaced_context *ctx, struct operation *op, struct space_error *err);
int sandbox_op_destroy(struct spaced_context *ctx, struct operation *op, struct space_error *err);

/* Steps shared with sandbox_history.c. */
int sandbox_step_load(struct spaced_context *ctx, const char *id, struct sandbox *sb, struct space_error *err);
/* The error of a step whose sandbox is not in the state the step moves it from (expected:
 * "creating", "restoring", ...). When a destroy accepted after the step has superseded it
 * (the sandbox is destroying or destroyed) the message says so: nothing failed but the
 * order of the calls. */
void sandbox_step_wrong_state(const struct sandbox *sb, const char *expected, struct space_error *err);
/* Compare-and-set of the state; invalid_state if another change came first. */
int sandbox_step_move(struct spaced_context *ctx, const char *id, unsigned from, enum sandbox_state to, const char *reason,
                      struct space_error *err);
/* When the sandbox's timeout would end it if armed now (0: no timeout). */
int64_t sandbox_step_expiry_at(const struct sandbox *sb);
/* The handler's last step: the move from `from` (with what `set` adds) and the operation's
 * end, in one transaction. op ends succeeded, or failed with fail_err when given. On
 * invalid_state (another change came first) op is left running and nothing is written. */
int sandbox_step_settle(struct spaced_context *ctx, struct operation *op, const char *id, struct sandbox_settlement *set,
                        const struct space_error *fail_err, struct space_error *err);
/* Starts the sandbox's processes and records the runtime handle. */
/* At start, with quotas on: every sandbox that has a rootfs gets its disk limit and joins
 * the quota group (those left running while spaced was away are not launched again, and
 * quotas may have just been turned on). Failures are logged; returns -errno only when the
 * store cannot be read. */
int sandbox_lifecycle_disk_limits(struct spaced_context *ctx);
int sandbox_step_launch(struct spaced_context *ctx, struct sandbox *sb, struct space_error *err);
/* Launches processes (disk limit, start, egress); record: stores the runtime handle too
 * (false for a sandbox that has no row yet). On failure leaves nothing running. */
int sandbox_step_launch_as(struct spaced_context *ctx, struct sandbox *sb, bool record, struct space_error *err);
/* Like sandbox_step_launch, the processes coming back from a checkpoint image in image_dir
 * (runtime_driver_ops.start_from_image) on the rootfs in place. */
int sandbox_step_launch_image(struct spaced_context *ctx, struct sandbox *sb, const char *image_dir, struct space_error *err);
