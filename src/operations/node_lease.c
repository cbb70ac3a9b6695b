#include "operations/node_lease.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "operations/operation_queue.h"
#include "spaced/log.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

struct node_lease {
        struct spaced_context *ctx;
        pthread_t thread;
        pthread_mutex_t lock;
        pthread_cond_t wake;
        bool stopping;
};

/* --node-label's k=v as a JSON object's text. */
static int node_labels_json(const struct spaced_config *cfg, char *buf, size_t size)
{
        json_t *o = json_object();
        for (int i = 0; o && i < cfg->node_label_count; i++) {
                char key[128];
                snprintf(key, sizeof(key), "%s", cfg->node_labels[i]);
                char *eq = strchr(key, '=');
                if (!eq)
                        continue;
                *eq = '\0';
                json_object_set_new(o, key, json_string(eq + 1));
        }
        char *text = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        json_decref(o);
        int r = text && strlen(text) < size ? 0 : -1;
        if (r == 0)
                snprintf(buf, size, "%s", text);
        free(text);
        return r;
}

int node_lease_register(struct spaced_context *ctx, const char *address, struct space_error *err)
{
        if (!spaced_runs_operations(ctx)) { /* --role control: no node; it only marks silent nodes lost */
                log_info("node.control_only", "id=%s note=\"claims no operations and owns no sandboxes\"", ctx->node_id);
                return 0;
        }
        struct node_record n = { 0 };
        snprintf(n.id, sizeof(n.id), "%s", ctx->node_id);
        snprintf(n.address, sizeof(n.address), "%s", address);
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        n.capacity = cpus > 0 ? cpus : 1;
        if (node_labels_json(&ctx->cfg, n.labels, sizeof(n.labels)) < 0)
                return space_error_set(err, SPACE_E_INTERNAL, "cannot write node %s's labels", ctx->node_id);
        n.started_at_ms = wallclock_now_ms();
        snprintf(ctx->node_address, sizeof(ctx->node_address), "%s", address);
        int r = STORE(ctx, node_register, &n);
        if (r < 0)
                return space_error_set(err, SPACE_E_INTERNAL, "cannot register node %s: %s", ctx->node_id, strerror(-r));
        atomic_store(&ctx->node_registered, true);
        log_info("node.registered", "node=%s address=%s capacity=%lld", n.id, n.address, (long long)n.capacity);
        return 0;
}

/* The heartbeat every quarter lease (at least every second), so that a claim outlives a
 * few missed beats; claims and lost nodes once a second. */
static int64_t beat_interval_ms(const struct spaced_context *ctx)
{
        int64_t ms = ctx->cfg.claim_lease_s * 1000 / 4;
        return ms < 100 ? 100 : ms > 1000 ? 1000 : ms;
}

static void tick(struct node_lease *nl, int64_t *next_round_ms)
{
        struct spaced_context *ctx = nl->ctx;
        int64_t now = wallclock_now_ms();
        if (spaced_runs_operations(ctx) && !atomic_load(&ctx->node_registered)) {
                struct space_error err = { 0 };
                if (now < *next_round_ms)
                        return;
                *next_round_ms = now + 1000; /* a try a second, no more */
                if (node_lease_register(ctx, ctx->node_address, &err) < 0) {
                        log_debug("node.register_failed", "error=\"%s\"", LOG_ESC(err.message));
                        return;
                }
        }
        int r = spaced_runs_operations(ctx) ? STORE(ctx, node_heartbeat, ctx->node_id, now) : 0;
        if (r < 0)
                log_warn("node.heartbeat_failed", "node=%s error=\"%s\"", ctx->node_id, strerror(-r));
        if (now < *next_round_ms)
                return;
        *next_round_ms = now + 1000;
        operation_queue_claim_round(ctx->queue, 64);
        int lost = 0;
        if ((r = STORE(ctx, node_mark_lost, now - ctx->cfg.node_lost_after_s * 1000, &lost)) < 0)
                log_warn("node.mark_lost_failed", "error=\"%s\"", strerror(-r));
        else if (lost > 0)
                log_warn("node.lost", "nodes=%d after_s=%lld", lost, (long long)ctx->cfg.node_lost_after_s);
}

static void *lease_main(void *arg)
{
        struct node_lease *nl = arg;
        int64_t next_round_ms = 0;
        pthread_mutex_lock(&nl->lock);
        while (!nl->stopping) {
                pthread_mutex_unlock(&nl->lock);
                tick(nl, &next_round_ms);
                int64_t until_us = monotonic_now_us() + beat_interval_ms(nl->ctx) * 1000;
                struct timespec ts = { .tv_sec = until_us / 1000000, .tv_nsec = (long)(until_us % 1000000) * 1000 };
                pthread_mutex_lock(&nl->lock);
                while (!nl->stopping && pthread_cond_timedwait(&nl->wake, &nl->lock, &ts) != ETIMEDOUT)
                        ;
        }
        pthread_mutex_unlock(&nl->lock);
        return NULL;
}

int node_lease_start(struct spaced_context *ctx, struct node_lease **ret)
{
        struct node_lease *nl = calloc(1, sizeof(*nl));
        if (!nl)
                return -ENOMEM;
        nl->ctx = ctx;
        pthread_mutex_init(&nl->lock, NULL);
        pthread_condattr_t attr;
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&nl->wake, &attr);
        pthread_condattr_destroy(&attr);
        int r = pthread_create(&nl->thread, NULL, lease_main, nl);
        if (r != 0) {
                free(nl);
                return -r;
        }
        *ret = nl;
        return 0;
}

void node_lease_free(struct node_lease *nl)
{
        if (!nl)
                return;
        pthread_mutex_lock(&nl->lock);
        nl->stopping = true;
        pthread_cond_signal(&nl->wake);
        pthread_mutex_unlock(&nl->lock);
        pthread_join(nl->thread, NULL);
        free(nl);
}
