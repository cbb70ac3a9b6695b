#include "operations/operation_queue.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "spaced/fault_point.h"
#include "spaced/log.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

#define TARGET_STRIPES 64

struct queued {
        char id[32];
        unsigned stripe; /* of its target */
        struct queued *next;
};

struct operation_queue {
        struct spaced_context *ctx;
        pthread_mutex_t lock;
        pthread_cond_t work;     /* new work or stopping */
        pthread_cond_t finished; /* some operation ended */
        struct queued *head, *tail;
        bool stopping;
        int nworkers;
        pthread_t *workers;
        /* One operation at a time per target (hash of the target name), in the order they
         * were accepted: a worker takes the first queued operation whose stripe is idle, so
         * a fork accepted before a destroy of its parent runs before it. */
        bool stripe_busy[TARGET_STRIPES];
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

static unsigned stripe_of(const char *target)
{
        unsigned h = 2166136261u;
        for (const char *p = target; *p; p++)
                h = (h ^ (unsigned char)*p) * 16777619u;
        return h % TARGET_STRIPES;
}

/* Runs one operation; its stripe is marked busy by the caller. */
static void run_one(struct operation_queue *q, const char *id)
{
        struct spaced_context *ctx = q->ctx;
        struct operation op;
        if (STORE(ctx, operation_get, id, &op) < 0 || op.state == OPERATION_SUCCEEDED || op.state == OPERATION_FAILED)
                return;
        op.state = OPERATION_RUNNING;
        op.started_at_ms = wallclock_now_ms();
        STORE(ctx, operation_update, &op);

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
        STORE(ctx, operation_update, &op);
}

/* The first queued item whose stripe is idle, taken off the queue; NULL if none. */
static struct queued *take_runnable_locked(struct operation_queue *q)
{
        for (struct queued **p = &q->head, *prev = NULL; *p; prev = *p, p = &(*p)->next) {
                struct queued *item = *p;
                if (q->stripe_busy[item->stripe])
                        continue;
                *p = item->next;
                if (q->tail == item)
                        q->tail = prev;
                q->stripe_busy[item->stripe] = true;
                return item;
        }
        return NULL;
}

static void *worker_main(void *arg)
{
        struct operation_queue *q = arg;
        for (;;) {
                struct queued *item = NULL;
                pthread_mutex_lock(&q->lock);
                while (!q->stopping && !(item = take_runnable_locked(q)))
                        pthread_cond_wait(&q->work, &q->lock);
                if (q->stopping) {
                        if (item) { /* back at the head: it stays pending for the next start */
                                q->stripe_busy[item->stripe] = false;
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
                q->stripe_busy[item->stripe] = false;
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
        pthread_cond_init(&q->work, NULL);
        pthread_cond_init(&q->finished, NULL);
        q->workers = calloc((size_t)workers, sizeof(pthread_t));
        if (!q->workers) {
                free(q);
                return -ENOMEM;
        }
        for (int i = 0; i < workers; i++) {
                int r = pthread_create(&q->workers[i], NULL, worker_main, q);
                if (r != 0) {
                        operation_queue_free(q);
                        return -r;
                }
                q->nworkers++;
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
        free(q);
}

int operation_queue_push(struct operation_queue *q, const char *op_id)
{
        struct queued *item = calloc(1, sizeof(*item));
        if (!item)
                return -ENOMEM;
        snprintf(item->id, sizeof(item->id), "%s", op_id);
        struct operation op;
        int r = STORE(q->ctx, operation_get, op_id, &op);
        if (r < 0) {
                free(item);
                return r;
        }
        item->stripe = stripe_of(op.target);
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

int operation_queue_wait(struct operation_queue *q, const char *op_id, int timeout_ms, struct operation *ret)
{
        struct timespec deadline;
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += timeout_ms / 1000;
        deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (deadline.tv_nsec >= 1000000000L) {
                deadline.tv_sec++;
                deadline.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&q->lock);
        for (;;) {
                int r = STORE(q->ctx, operation_get, op_id, ret);
                if (r < 0) {
                        pthread_mutex_unlock(&q->lock);
                        return r;
                }
                if (ret->state == OPERATION_SUCCEEDED || ret->state == OPERATION_FAILED)
                        break;
                if (q->stopping) {
                        pthread_mutex_unlock(&q->lock);
                        return -ESHUTDOWN;
                }
                if (pthread_cond_timedwait(&q->finished, &q->lock, &deadline) == ETIMEDOUT) {
                        r = STORE(q->ctx, operation_get, op_id, ret);
                        pthread_mutex_unlock(&q->lock);
                        if (r < 0)
                                return r;
                        return ret->state == OPERATION_SUCCEEDED || ret->state == OPERATION_FAILED ? 0 : -ETIMEDOUT;
                }
        }
        pthread_mutex_unlock(&q->lock);
        return 0;
}

void operation_queue_submit(struct operation_queue *q, const char *op_id)
{
        if (operation_queue_push(q, op_id) < 0)
                log_info("operation.deferred", "op=%s reason=\"spaced is stopping; it runs at the next start\"", op_id);
}
