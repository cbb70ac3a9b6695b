#include "operations/operation_queue.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "spaced/fault_point.h"
#include "spaced/log.h"
#include "spaced/metrics.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

struct queued {
        char id[32];
        char target[sizeof(((struct operation *)0)->target)];
        struct queued *next;
};

struct operation_queue {
        struct spaced_context *ctx;
        pthread_mutex_t lock;
        pthread_cond_t work;     /* new work or stopping */
        pthread_cond_t finished; /* some operation ended (finished_gen moved) */
        uint64_t finished_gen;
        struct queued *head, *tail;
        bool stopping;
        int nworkers;
        pthread_t *workers;
        /* One operation at a time per target, in the order they were accepted: a worker
         * takes the first queued operation whose target no other worker is running (so a
         * fork accepted before a destroy of its parent runs before it), and never waits
         * behind a busy target while other work is runnable. running[i] is worker i's
         * target ("" idle); targets are compared whole, so unrelated ones never wait for
         * each other. */
        char (*running)[sizeof(((struct operation *)0)->target)];
        int64_t *busy_since_us; /* worker i's start of its current operation (monotonic), 0 idle */
};

void operation_init(struct operation *op, const char *kind, const char *target)
{
        memset(op, 0, sizeof(*op));
        random_id("op-", 8, op->id, sizeof(op->id));
        snprintf(op->kind, sizeof(op->kind), "%s", kind);
        snprintf(op->target, sizeof(op->target), "%s", target);
        op->state = OPERATION_PENDING;
        op->created_at_ms = wallclock_now_ms();
}

void operation_mark_succeeded(struct operation *op)
{
        op->state = OPERATION_SUCCEEDED;
        op->finished_at_ms = wallclock_now_ms();
        op->error_code[0] = op->error_message[0] = '\0';
}

void operation_mark_failed(struct operation *op, const struct space_error *err)
{
        op->state = OPERATION_FAILED;
        op->finished_at_ms = wallclock_now_ms();
        snprintf(op->error_code, sizeof(op->error_code), "%s", space_error_code_name(err->code));
        snprintf(op->error_message, sizeof(op->error_message), "%s", err->message);
}

static bool target_busy_locked(const struct operation_queue *q, const char *target)
{
        for (int i = 0; i < q->nworkers; i++)
                if (strcmp(q->running[i], target) == 0)
                        return true;
        return false;
}

static int set_text(char *field, size_t size, const char *what, const struct operation *op, json_t *value,
                    struct space_error *err)
{
        char *text = value ? json_dumps(value, JSON_COMPACT) : NULL;
        json_decref(value);
        if (!text)
                return space_error_set(err, SPACE_E_INTERNAL, "out of memory");
        size_t n = strlen(text);
        if (n >= size) {
                free(text);
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "the %s of this %s would be %zu bytes; at most %zu are kept",
                                       what, op->kind, n, size - 1);
        }
        memcpy(field, text, n + 1);
        free(text);
        return 0;
}

int operation_set_params(struct operation *op, json_t *params, struct space_error *err)
{
        return set_text(op->params, sizeof(op->params), "parameters", op, params, err);
}

int operation_set_result(struct operation *op, json_t *result, struct space_error *err)
{
        return set_text(op->result, sizeof(op->result), "result", op, result, err);
}

/* Reads (write: false) or writes the operation's row, trying a few times (a busy or briefly
 * failing store); a failure is logged. A row that does not exist is not retried. */
static int store_row(struct spaced_context *ctx, bool write, const char *id, struct operation *op)
{
        int r = 0;
        for (int attempt = 0; attempt < 3; attempt++) {
                r = write ? STORE(ctx, operation_update, op) : STORE(ctx, operation_get, id, op);
                if (r == 0 || (!write && r == -ENOENT))
                        return r;
                if (r == -ESTALE) { /* fenced: another node's claim holds it now; its end is that node's */
                        log_warn("operation.claim_lost", "op=%s kind=%s what=%s", id, op->kind, operation_state_name(op->state));
                        return r;
                }
                struct timespec ts = { 0, 100000000L << attempt };
                nanosleep(&ts, NULL);
        }
        log_error("operation.store_failed", "op=%s what=%s error=\"%s\"", id, write ? operation_state_name(op->state) : "read",
                  strerror(-r));
        return r;
}

static int store_update(struct spaced_context *ctx, struct operation *op)
{
        return store_row(ctx, true, op->id, op);
}

/* Whether the store already holds op's end exactly as op has it. */
static bool end_stored(struct spaced_context *ctx, const struct operation *op)
{
        struct operation stored;
        return STORE(ctx, operation_get, op->id, &stored) == 0 && stored.state == op->state &&
                stored.finished_at_ms == op->finished_at_ms && strcmp(stored.result, op->result) == 0 &&
                strcmp(stored.error_code, op->error_code) == 0 && strcmp(stored.error_message, op->error_message) == 0;
}

/* Runs one operation; its stripe is marked busy by the caller. */
static void run_one(struct operation_queue *q, const char *id)
{
        struct spaced_context *ctx = q->ctx;
        struct operation op;
        if (store_row(ctx, false, id, &op) < 0 || op.state == OPERATION_SUCCEEDED || op.state == OPERATION_FAILED)
                return; /* unreadable: it stays in the store, and the next start runs it */
        if (ctx->node_id[0] && strcmp(op.claim_owner, ctx->node_id) != 0) {
                /* Our claim lapsed while it waited here and another node took it over. */
                log_warn("operation.claim_lost", "op=%s kind=%s holder=%s", op.id, op.kind, op.claim_owner);
                return;
        }
        op.state = OPERATION_RUNNING;
        op.started_at_ms = wallclock_now_ms();
        if (store_update(ctx, &op) < 0)
                return; /* stays pending in the store: the next start runs it (handlers may run twice) */
        /* Claimed and marked running, nothing done yet: where a node dies holding a claim. */
        fault_point("operation.before_handler", op.kind);

        struct space_error err = { 0 };
        operation_handler h = operation_handler_for(op.kind);
        int64_t t0 = monotonic_now_us();
        int r = h ? h(ctx, &op, &err) : space_error_set(&err, SPACE_E_INTERNAL, "no handler for %s", op.kind);
        /* Where an older spaced had committed the handler's change but not the operation's end. */
        fault_point("operation.after_handler", op.kind);
        if (r < 0) {
                if (op.state != OPERATION_FAILED)
                        operation_mark_failed(&op, &err);
                log_warn("operation.failed", "op=%s kind=%s target=%s code=%s message=\"%s\"", op.id, op.kind, op.target,
                         op.error_code, LOG_ESC(op.error_message));
        } else {
                if (op.state != OPERATION_SUCCEEDED)
                        operation_mark_succeeded(&op);
                log_info("operation.succeeded", "op=%s kind=%s target=%s duration_us=%lld", op.id, op.kind, op.target,
                         (long long)(monotonic_now_us() - t0));
        }
        /* Handlers that settle their target store the operation's end in the same
         * transaction (sandbox_step_settle): a read, not a second write, then says so. */
        if (!end_stored(ctx, &op))
                store_update(ctx, &op); /* logged; a row left running is re-run at the next start */
        metrics_operation_ended(ctx->metrics, op.kind, r >= 0, (op.started_at_ms - op.created_at_ms) * 1000,
                                monotonic_now_us() - t0);
}

/* The first queued item whose target is idle, taken off the queue and marked running by
 * worker `self`; NULL if none. */
static struct queued *take_runnable_locked(struct operation_queue *q, int self)
{
        for (struct queued **p = &q->head, *prev = NULL; *p; prev = *p, p = &(*p)->next) {
                struct queued *item = *p;
                if (target_busy_locked(q, item->target))
                        continue;
                *p = item->next;
                if (q->tail == item)
                        q->tail = prev;
                snprintf(q->running[self], sizeof(q->running[self]), "%s", item->target);
                q->busy_since_us[self] = monotonic_now_us();
                return item;
        }
        return NULL;
}

struct worker_arg {
        struct operation_queue *q;
        int self;
};

static void *worker_main(void *arg)
{
        struct operation_queue *q = ((struct worker_arg *)arg)->q;
        int self = ((struct worker_arg *)arg)->self;
        free(arg);
        for (;;) {
                struct queued *item = NULL;
                pthread_mutex_lock(&q->lock);
                while (!q->stopping && !(item = take_runnable_locked(q, self)))
                        pthread_cond_wait(&q->work, &q->lock);
                if (q->stopping) {
                        if (item) { /* back at the head: it stays pending for the next start */
                                q->running[self][0] = '\0';
                                q->busy_since_us[self] = 0;
                                item->next = q->head;
                                q->head = item;
                                if (!q->tail)
                                        q->tail = item;
                        }
                        pthread_mutex_unlock(&q->lock);
                        return NULL;
                }
                pthread_mutex_unlock(&q->lock);
                run_one(q, item->id);
                pthread_mutex_lock(&q->lock);
                q->running[self][0] = '\0';
                q->busy_since_us[self] = 0;
                q->finished_gen++;
                pthread_cond_broadcast(&q->work); /* what waited behind it may run now */
                pthread_cond_broadcast(&q->finished);
                pthread_mutex_unlock(&q->lock);
                free(item);
        }
}

int operation_queue_new(struct spaced_context *ctx, int workers, struct operation_queue **ret)
{
        struct operation_queue *q = calloc(1, sizeof(*q));
        if (!q)
                return -ENOMEM;
        q->ctx = ctx;
        pthread_mutex_init(&q->lock, NULL);
        /* Waits are bounded by the monotonic clock: a wall-clock step must not cut or stretch them. */
        pthread_condattr_t attr;
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&q->work, NULL);
        pthread_cond_init(&q->finished, &attr);
        pthread_condattr_destroy(&attr);
        q->workers = calloc((size_t)workers, sizeof(pthread_t));
        q->running = calloc((size_t)workers, sizeof(*q->running));
        q->busy_since_us = calloc((size_t)workers, sizeof(*q->busy_since_us));
        if (!q->workers || !q->running || !q->busy_since_us) {
                free(q->workers);
                free(q->running);
                free(q->busy_since_us);
                free(q);
                return -ENOMEM;
        }
        for (int i = 0; i < workers; i++) {
                struct worker_arg *wa = malloc(sizeof(*wa));
                int r = wa ? 0 : ENOMEM;
                if (wa) {
                        *wa = (struct worker_arg){ .q = q, .self = i };
                        pthread_mutex_lock(&q->lock); /* nworkers is read by the workers under it */
                        r = pthread_create(&q->workers[i], NULL, worker_main, wa);
                        if (r == 0)
                                q->nworkers++;
                        pthread_mutex_unlock(&q->lock);
                }
                if (r != 0) {
                        free(wa);
                        operation_queue_free(q);
                        return -r;
                }
        }
        *ret = q;
        return 0;
}

void operation_queue_free(struct operation_queue *q)
{
        if (!q)
                return;
        pthread_mutex_lock(&q->lock);
        q->stopping = true;
        pthread_cond_broadcast(&q->work);
        pthread_cond_broadcast(&q->finished);
        pthread_mutex_unlock(&q->lock);
        for (int i = 0; i < q->nworkers; i++)
                pthread_join(q->workers[i], NULL);
        while (q->head) {
                struct queued *next = q->head->next;
                free(q->head);
                q->head = next;
        }
        free(q->workers);
        free(q->running);
        free(q->busy_since_us);
        free(q);
}

/* Puts a stored (and, in a fleet, claimed) operation on the local queue. */
static int enqueue(struct operation_queue *q, const char *op_id, const char *target)
{
        struct queued *item = calloc(1, sizeof(*item));
        if (!item)
                return -ENOMEM;
        snprintf(item->id, sizeof(item->id), "%s", op_id);
        snprintf(item->target, sizeof(item->target), "%s", target);
        pthread_mutex_lock(&q->lock);
        if (q->stopping) {
                pthread_mutex_unlock(&q->lock);
                free(item);
                return -ESHUTDOWN;
        }
        if (q->tail)
                q->tail->next = item;
        else
                q->head = item;
        q->tail = item;
        pthread_cond_signal(&q->work);
        pthread_mutex_unlock(&q->lock);
        return 0;
}

static int64_t live_after_ms(const struct spaced_context *ctx)
{
        return wallclock_now_ms() - ctx->cfg.claim_lease_s * 1000;
}

int operation_queue_push(struct operation_queue *q, const char *op_id)
{
        struct spaced_context *ctx = q->ctx;
        struct operation op;
        if (!ctx->node_id[0]) { /* not in a fleet (the unit tests' fake daemon): every operation is ours */
                int r = store_row(ctx, false, op_id, &op); /* a read that fails once must not leave it unqueued */
                return r < 0 ? r : enqueue(q, op_id, op.target);
        }
        if (!spaced_runs_operations(ctx))
                return 0; /* --role control: stored, for a node to claim */
        int r = STORE(ctx, operation_claim, ctx->node_id, op_id, live_after_ms(ctx), wallclock_now_ms(), &op);
        if (r == -ENOENT) {
                /* Not ours to run now (its target is on another node, an older operation on
                 * it is held elsewhere, or it ended): it stays in the store, and the node
                 * that may claim it does (operation_queue_claim_round). */
                log_debug("operation.not_claimed", "op=%s node=%s", op_id, ctx->node_id);
                return 0;
        }
        if (r < 0) {
                log_warn("operation.claim_failed", "op=%s error=\"%s\" note=\"the next claim round takes it\"", op_id,
                         strerror(-r));
                return r;
        }
        return enqueue(q, op.id, op.target);
}

int operation_queue_claim_round(struct operation_queue *q, int max)
{
        struct spaced_context *ctx = q->ctx;
        int n = 0;
        while (ctx->node_id[0] && spaced_runs_operations(ctx) && n < max) {
                struct operation op;
                int r = STORE(ctx, operation_claim, ctx->node_id, NULL, live_after_ms(ctx), wallclock_now_ms(), &op);
                if (r < 0) {
                        if (r != -ENOENT)
                                log_warn("operation.claim_failed", "node=%s error=\"%s\"", ctx->node_id, strerror(-r));
                        break;
                }
                if (op.claims > 1 || op.state == OPERATION_RUNNING)
                        log_info("operation.taken_over", "op=%s kind=%s target=%s claims=%lld", op.id, op.kind, op.target,
                                 (long long)op.claims);
                else
                        log_info("operation.claimed", "op=%s kind=%s target=%s", op.id, op.kind, op.target);
                if (enqueue(q, op.id, op.target) < 0)
                        break; /* stopping: the claim lapses with this node, or its next start takes it again */
                n++;
        }
        return n;
}

static bool finished(const struct operation *op)
{
        return op->state == OPERATION_SUCCEEDED || op->state == OPERATION_FAILED;
}

int operation_queue_wait(struct operation_queue *q, const char *op_id, int timeout_ms, struct operation *ret)
{
        int64_t end_us = monotonic_now_us() + (int64_t)timeout_ms * 1000;
        struct timespec deadline = { .tv_sec = end_us / 1000000, .tv_nsec = (long)(end_us % 1000000) * 1000 };
        for (;;) {
                /* The generation is taken before the store is read (outside the queue's lock,
                 * which workers need): an end written after the read moves it, so the wait
                 * below returns at once instead of missing it. */
                pthread_mutex_lock(&q->lock);
                uint64_t gen = q->finished_gen;
                bool stopping = q->stopping;
                pthread_mutex_unlock(&q->lock);
                int r = STORE(q->ctx, operation_get, op_id, ret);
                if (r < 0)
                        return r;
                if (finished(ret))
                        return 0;
                if (stopping)
                        return -ESHUTDOWN;
                /* In a fleet another node may end it: the store is read again at least every
                 * 200 ms, not only when a local worker finishes something. */
                int64_t slice_us = monotonic_now_us() + 200000;
                bool last = !q->ctx->node_id[0] || slice_us >= end_us;
                struct timespec until = deadline;
                if (!last)
                        until = (struct timespec){ .tv_sec = slice_us / 1000000, .tv_nsec = (long)(slice_us % 1000000) * 1000 };
                int t = 0;
                pthread_mutex_lock(&q->lock);
                while (q->finished_gen == gen && !q->stopping && t != ETIMEDOUT)
                        t = pthread_cond_timedwait(&q->finished, &q->lock, &until);
                pthread_mutex_unlock(&q->lock);
                if (t == ETIMEDOUT && !last)
                        continue;
                if (t == ETIMEDOUT) {
                        r = STORE(q->ctx, operation_get, op_id, ret);
                        if (r < 0)
                                return r;
                        return finished(ret) ? 0 : -ETIMEDOUT;
                }
        }
}

void operation_queue_submit(struct operation_queue *q, const char *op_id)
{
        if (operation_queue_push(q, op_id) < 0)
                log_info("operation.deferred", "op=%s reason=\"spaced is stopping; it runs at the next start\"", op_id);
}

void operation_queue_status(struct operation_queue *q, struct operation_queue_status *ret)
{
        memset(ret, 0, sizeof(*ret));
        if (!q)
                return;
        int64_t now = monotonic_now_us();
        pthread_mutex_lock(&q->lock);
        ret->workers = q->nworkers;
        for (int i = 0; i < q->nworkers; i++) {
                if (!q->busy_since_us[i])
                        continue;
                ret->busy++;
                if (now - q->busy_since_us[i] > ret->longest_busy_us)
                        ret->longest_busy_us = now - q->busy_since_us[i];
        }
        for (const struct queued *item = q->head; item; item = item->next)
                ret->queued++;
        pthread_mutex_unlock(&q->lock);
}
