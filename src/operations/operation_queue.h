/* operation_queue: runs lifecycle operations on worker threads. An operation row is
 * written (with the state change it implies) before it is queued; workers move it to
 * running, call its handler, and record success or failure. Operations on the same target
 * run one at a time. Unfinished operations found at start are queued again, so every
 * handler must be safe to run twice. With several nodes on one store (docs/fleet.md) a node
 * runs only what it has claimed, and a claim of a node that died is taken over by another:
 * the store's claim rules keep one operation per target at a time across nodes, and a
 * claim token fences every write of the operation's row. */
#pragma once

#include <stdbool.h>

#include "spaced/space_error.h"
#include "state_store/state_store.h"

struct spaced_context;

typedef int (*operation_handler)(struct spaced_context *ctx, struct operation *op, struct space_error *err);

struct operation_queue;

int operation_queue_new(struct spaced_context *ctx, int workers, struct operation_queue **ret);
/* Stops taking work, lets running handlers finish, joins the workers. Pending operations
 * stay pending in the store and are picked up at the next start. */
void operation_queue_free(struct operation_queue *q);

/* What the workers are doing now, for health checks. */
struct operation_queue_status {
        int workers;             /* threads running */
        int busy;                /* of which running an operation */
        size_t queued;           /* operations waiting for a worker */
        int64_t longest_busy_us; /* the longest any busy worker has been on its operation */
};
void operation_queue_status(struct operation_queue *q, struct operation_queue_status *ret);

/* Fills a fresh operation (id, kind, target, pending, created_at) for the caller to store. */
void operation_init(struct operation *op, const char *kind, const char *target);
/* Queues a stored operation. In a fleet (ctx->node_id set) it is claimed for this node
 * first (operation_claim); one this node may not claim now is left in the store for the
 * node that may (0 all the same). */
int operation_queue_push(struct operation_queue *q, const char *op_id);
/* Claims up to max operations this node may take (unclaimed ones, and those of nodes whose
 * lease lapsed: taken over) and queues them; how many. */
int operation_queue_claim_round(struct operation_queue *q, int max);
/* For submitters: the operation is stored, so it is accepted even when the queue is closing
 * (spaced is stopping): the next start runs it. Never fails. */
void operation_queue_submit(struct operation_queue *q, const char *op_id);
/* Waits until the operation has finished or timeout_ms passed; *ret holds its latest row.
 * Returns 0 finished, -ETIMEDOUT, or -errno. */
int operation_queue_wait(struct operation_queue *q, const char *op_id, int timeout_ms, struct operation *ret);
/* Fill the operation's final fields (state, finished_at; error from err) for a handler
 * that writes its end together with the sandbox's (sandbox_settle); the worker writes the
 * same row again afterwards, which changes nothing. */
void operation_mark_succeeded(struct operation *op);
void operation_mark_failed(struct operation *op, const struct space_error *err);
/* The operation's params / result as compact JSON text (params consumed). Both are stored
 * whole or not at all: text that does not fit the row's field is refused with
 * SPACE_E_INVALID_REQUEST (-1), never cut. */
int operation_set_params(struct operation *op, json_t *params, struct space_error *err);
int operation_set_result(struct operation *op, json_t *result, struct space_error *err);
/* The handler for a kind ("sandbox.create", …), or NULL. */
operation_handler operation_handler_for(const char *kind);
