/* e2b_metrics: periodic and on-request usage samples of sandboxes (see e2b_metrics.h). */
#include "e2b/e2b_metrics.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/api_render.h"
#include "runtime/runtime_registry.h"
#include "service/sandbox_service.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"
#include "state_store/state_store.h"

struct sample {
        int64_t ts_ms;
        uint64_t cpu_us; /* the cgroup's CPU time at ts_ms */
        double cpu_pct;  /* of the sandbox's CPUs since the previous sample */
        int cpu_count;
        uint64_t mem_used, mem_cache, mem_total;
        uint64_t disk_used, disk_total;
};

struct ring {
        char id[32];
        struct sample s[E2B_METRICS_RING];
        size_t head, n; /* head: where the next sample goes */
        uint64_t seen;  /* the sweep that last found the sandbox */
};

struct e2b_metrics {
        struct spaced_context *ctx;
        pthread_t thread;
        bool started;
        pthread_mutex_t lock;
        pthread_cond_t wake;
        bool stopping;
        struct ring **rings;
        size_t nrings;
        uint64_t sweep;
};

static int cpu_count_of(const struct sandbox *sb)
{
        return sb->resources.cpus < 1 ? 1 : (int)(sb->resources.cpus + 0.5);
}

static const struct sample *ring_last(const struct ring *r)
{
        return r && r->n ? &r->s[(r->head + E2B_METRICS_RING - 1) % E2B_METRICS_RING] : NULL;
}

/* One sample of sb now; CPU use is measured since prev (or, without one, since the sandbox
 * was created). */
static void sample_take(struct spaced_context *ctx, const struct sandbox *sb, const struct sample *prev, struct sample *ret)
{
        struct runtime_stats ev;
        memset(ret, 0, sizeof(*ret));
        ret->ts_ms = wallclock_now_ms();
        ret->cpu_count = cpu_count_of(sb);
        if (sandbox_service_usage(ctx, sb, &ev) == 0) {
                ret->cpu_us = ev.cpu_usage_us;
                ret->mem_used = ev.memory_bytes;
                ret->mem_cache = ev.memory_cache_bytes;
                ret->mem_total = ev.memory_limit_bytes;
        }
        if (!ret->mem_total)
                ret->mem_total = (uint64_t)sb->resources.memory_mb << 20;
        int64_t since_ms = prev ? prev->ts_ms : sb->created_at_ms;
        uint64_t since_cpu = prev && prev->cpu_us <= ret->cpu_us ? prev->cpu_us : 0;
        if (ret->ts_ms > since_ms) {
                double pct = (double)(ret->cpu_us - since_cpu) / 10.0 / (double)(ret->ts_ms - since_ms) / ret->cpu_count;
                ret->cpu_pct = pct > 100 ? 100 : pct;
        }
        ret->disk_total = ev.disk_total_bytes;
        ret->disk_used = ev.disk_total_bytes - ev.disk_free_bytes;
}

static json_t *sample_render(const struct sample *s)
{
        return json_pack("{s:o, s:I, s:f, s:i, s:I, s:I, s:I, s:I, s:I}", "timestamp", api_render_time(s->ts_ms), "timestampUnix",
                         (json_int_t)(s->ts_ms / 1000), "cpuUsedPct", s->cpu_pct, "cpuCount", s->cpu_count, "memUsed",
                         (json_int_t)s->mem_used, "memTotal", (json_int_t)s->mem_total, "memCache", (json_int_t)s->mem_cache,
                         "diskUsed", (json_int_t)s->disk_used, "diskTotal", (json_int_t)s->disk_total);
}

/* Under the lock. */
static struct ring *ring_find(struct e2b_metrics *m, const char *id)
{
        for (size_t i = 0; i < m->nrings; i++)
                if (strcmp(m->rings[i]->id, id) == 0)
                        return m->rings[i];
        return NULL;
}

/* Under the lock: the ring of id, made if needed (NULL when out of memory). */
static struct ring *ring_get(struct e2b_metrics *m, const char *id)
{
        struct ring *r = ring_find(m, id);
        if (r)
                return r;
        struct ring **grown = realloc(m->rings, (m->nrings + 1) * sizeof(*m->rings));
        if (!grown)
                return NULL;
        m->rings = grown;
        r = calloc(1, sizeof(*r));
        if (!r)
                return NULL;
        snprintf(r->id, sizeof(r->id), "%s", id);
        m->rings[m->nrings++] = r;
        return r;
}

static void ring_push(struct ring *r, const struct sample *s)
{
        r->s[r->head] = *s;
        r->head = (r->head + 1) % E2B_METRICS_RING;
        if (r->n < E2B_METRICS_RING)
                r->n++;
}

/* Samples every running sandbox; forgets the rings of sandboxes that are gone. */
static void sweep(struct e2b_metrics *m)
{
        struct sandbox *all = NULL;
        size_t n = 0;
        struct principal daemon;
        struct space_error err;
        principal_platform(&daemon); /* the sampler works for every project's metrics route */
        if (sandbox_service_list(m->ctx, &daemon, NULL, -1, NULL, &all, &n, &err) < 0)
                return;
        pthread_mutex_lock(&m->lock);
        uint64_t gen = ++m->sweep;
        pthread_mutex_unlock(&m->lock);
        for (size_t i = 0; i < n; i++) {
                const struct sandbox *sb = &all[i];
                if (sb->state == SANDBOX_DESTROYING || sb->state == SANDBOX_DESTROYED || sb->state == SANDBOX_FAILED)
                        continue;
                struct sample prev = { 0 }, s;
                bool have_prev = false;
                pthread_mutex_lock(&m->lock);
                struct ring *r = ring_find(m, sb->id);
                if (r) {
                        r->seen = gen;
                        if (ring_last(r)) {
                                prev = *ring_last(r);
                                have_prev = true;
                        }
                }
                pthread_mutex_unlock(&m->lock);
                if (sb->state != SANDBOX_RUNNING)
                        continue;
                sample_take(m->ctx, sb, have_prev ? &prev : NULL, &s);
                pthread_mutex_lock(&m->lock);
                if ((r = ring_get(m, sb->id))) {
                        r->seen = gen;
                        ring_push(r, &s);
                }
                pthread_mutex_unlock(&m->lock);
        }
        sandbox_array_free(all, n);
        pthread_mutex_lock(&m->lock);
        for (size_t i = 0; i < m->nrings;) {
                if (m->rings[i]->seen != gen) {
                        free(m->rings[i]);
                        m->rings[i] = m->rings[--m->nrings];
                } else {
                        i++;
                }
        }
        pthread_mutex_unlock(&m->lock);
}

static void *sampler_main(void *arg)
{
        struct e2b_metrics *m = arg;
        pthread_mutex_lock(&m->lock);
        while (!m->stopping) {
                pthread_mutex_unlock(&m->lock);
                sweep(m);
                pthread_mutex_lock(&m->lock);
                struct timespec until;
                clock_gettime(CLOCK_MONOTONIC, &until);
                until.tv_sec += E2B_METRICS_INTERVAL_S;
                while (!m->stopping && pthread_cond_timedwait(&m->wake, &m->lock, &until) != ETIMEDOUT)
                        ;
        }
        pthread_mutex_unlock(&m->lock);
        return NULL;
}

int e2b_metrics_start(struct spaced_context *ctx, struct e2b_metrics **ret)
{
        struct e2b_metrics *m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->ctx = ctx;
        pthread_condattr_t attr;
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_mutex_init(&m->lock, NULL);
        pthread_cond_init(&m->wake, &attr);
        pthread_condattr_destroy(&attr);
        pthread_attr_t tattr;
        pthread_attr_init(&tattr);
        pthread_attr_setstacksize(&tattr, 256 * 1024);
        int r = pthread_create(&m->thread, &tattr, sampler_main, m);
        pthread_attr_destroy(&tattr);
        if (r != 0) {
                e2b_metrics_free(m);
                return -r;
        }
        m->started = true;
        *ret = m;
        return 0;
}

void e2b_metrics_free(struct e2b_metrics *m)
{
        if (!m)
                return;
        if (m->started) {
                pthread_mutex_lock(&m->lock);
                m->stopping = true;
                pthread_cond_signal(&m->wake);
                pthread_mutex_unlock(&m->lock);
                pthread_join(m->thread, NULL);
        }
        for (size_t i = 0; i < m->nrings; i++)
                free(m->rings[i]);
        free(m->rings);
        pthread_cond_destroy(&m->wake);
        pthread_mutex_destroy(&m->lock);
        free(m);
}

static bool in_range(int64_t ts_ms, int64_t start_s, int64_t end_s)
{
        return (!start_s || ts_ms / 1000 >= start_s) && (!end_s || ts_ms / 1000 <= end_s);
}

json_t *e2b_metrics_series(struct e2b_metrics *m, const struct sandbox *sb, int64_t start_s, int64_t end_s)
{
        json_t *arr = json_array();
        struct sample prev = { 0 }, now;
        bool have_prev = false;
        pthread_mutex_lock(&m->lock);
        const struct ring *r = ring_find(m, sb->id);
        for (size_t i = 0; r && i < r->n; i++) {
                const struct sample *s = &r->s[(r->head + E2B_METRICS_RING - r->n + i) % E2B_METRICS_RING];
                if (in_range(s->ts_ms, start_s, end_s))
                        json_array_append_new(arr, sample_render(s));
        }
        /* CPU use now is measured against the newest sample at least a second old: one
         * taken a few ms ago would make it noise. */
        int64_t now_ms = wallclock_now_ms();
        for (size_t i = r ? r->n : 0; i-- > 0;) {
                const struct sample *s = &r->s[(r->head + E2B_METRICS_RING - r->n + i) % E2B_METRICS_RING];
                if (s->ts_ms <= now_ms - 1000) {
                        prev = *s;
                        have_prev = true;
                        break;
                }
        }
        pthread_mutex_unlock(&m->lock);
        if (sb->state == SANDBOX_RUNNING) {
                sample_take(m->ctx, sb, have_prev ? &prev : NULL, &now);
                if (in_range(now.ts_ms, start_s, end_s))
                        json_array_append_new(arr, sample_render(&now));
        }
        return arr;
}
