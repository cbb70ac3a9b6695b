/* warm_pool: sandboxes made ahead of their creates (see the header). */
#include "controller/warm_pool.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "operations/sandbox_lifecycle.h"
#include "operations/sandbox_network.h"
#include "runtime/runtime_registry.h"
#include "spaced/log.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"
#include "storage/btrfs_pool.h"
#include "templates/template_ref.h"

#define RATE_WINDOW_S 60
#define LEAD_S 10         /* a pool holds the creates of this many seconds at the recent rate */
#define FAIL_BACKOFF_S 10 /* after a warm sandbox could not be made */

struct warm_entry {
        struct sandbox sb; /* bound as a default create would be, with its id and runtime handle */
};

struct pool {
        char template_name[64];
        unsigned min, max, target;
        struct warm_entry *ready[WARM_POOL_MAX_SIZE];
        unsigned n_ready;
        uint32_t demand[RATE_WINDOW_S]; /* creates of this template per second, a ring */
        int64_t demand_second;          /* the second demand[demand_second % RATE_WINDOW_S] counts */
        int64_t retry_at_s;             /* no new warm sandbox before this (after a failure) */
        uint64_t claims, misses, made, failed;
};

struct warm_pool {
        struct spaced_context *ctx;
        struct sandbox_resources defaults;
        json_t *network;
        pthread_mutex_t lock;
        pthread_cond_t wake;
        pthread_t thread;
        bool started, stopping;
        size_t n;
        struct pool pools[WARM_POOL_TEMPLATES];
};

static int parse_count(const char *s, const char **end, unsigned *ret)
{
        unsigned long v = 0;
        const char *p = s;
        while (*p >= '0' && *p <= '9' && v <= WARM_POOL_MAX_SIZE)
                v = v * 10 + (unsigned long)(*p++ - '0');
        if (p == s || v > WARM_POOL_MAX_SIZE || (*p >= '0' && *p <= '9'))
                return -EINVAL;
        *end = p;
        *ret = (unsigned)v;
        return 0;
}

/* "N" or "MIN:MAX", digits only. */
static int parse_sizes(const char *s, unsigned *ret_min, unsigned *ret_max)
{
        const char *p;
        if (parse_count(s, &p, ret_min) < 0)
                return -EINVAL;
        if (*p == ':') {
                if (parse_count(p + 1, &p, ret_max) < 0)
                        return -EINVAL;
        } else
                *ret_max = *ret_min;
        return *p || *ret_max < *ret_min || *ret_max < 1 ? -EINVAL : 0;
}

int warm_pool_spec_parse(const char *text, struct warm_pool_spec *ret, struct space_error *err)
{
        memset(ret, 0, sizeof(*ret));
        const char *p = text ? text : "";
        while (*p) {
                const char *end = strchr(p, ','), *eq = strchr(p, '=');
                size_t len = end ? (size_t)(end - p) : strlen(p);
                if (!eq || eq >= p + len || eq == p)
                        return space_error_set(err, SPACE_E_INVALID_REQUEST,
                                               "warm pool \"%.*s\": give TEMPLATE=N or TEMPLATE=MIN:MAX",
                                               (int)(len > 80 ? 80 : len), p);
                size_t name_len = (size_t)(eq - p);
                if (ret->n == WARM_POOL_TEMPLATES)
                        return space_error_set(err, SPACE_E_INVALID_REQUEST, "at most %d warm pools", WARM_POOL_TEMPLATES);
                char name[64], sizes[32];
                if (name_len >= sizeof(name) || len - name_len - 1 >= sizeof(sizes))
                        return space_error_set(err, SPACE_E_INVALID_REQUEST, "warm pool \"%.*s\" is too long",
                                               (int)(len > 80 ? 80 : len), p);
                memcpy(name, p, name_len);
                name[name_len] = '\0';
                memcpy(sizes, eq + 1, len - name_len - 1);
                sizes[len - name_len - 1] = '\0';
                if (!template_ref_ok(name) || strchr(name, '@'))
                        return space_error_set(err, SPACE_E_INVALID_REQUEST, "warm pool: \"%s\" is not a template name", name);
                unsigned lo, hi;
                if (parse_sizes(sizes, &lo, &hi) < 0)
                        return space_error_set(err, SPACE_E_INVALID_REQUEST,
                                               "warm pool %s: \"%s\" is not N or MIN:MAX with 0 <= MIN <= MAX, 1 <= MAX <= %d",
                                               name, sizes, WARM_POOL_MAX_SIZE);
                for (size_t i = 0; i < ret->n; i++)
                        if (strcmp(ret->pools[i].template_name, name) == 0)
                                return space_error_set(err, SPACE_E_INVALID_REQUEST, "warm pool %s is given twice", name);
                snprintf(ret->pools[ret->n].template_name, sizeof(ret->pools[ret->n].template_name), "%s", name);
                ret->pools[ret->n].min = lo;
                ret->pools[ret->n].max = hi;
                ret->n++;
                p = end ? end + 1 : p + len;
        }
        return 0;
}

int warm_pool_new(struct spaced_context *ctx, const struct warm_pool_spec *spec, const struct sandbox_resources *defaults,
                  const json_t *network, struct warm_pool **ret, struct space_error *err)
{
        struct warm_pool *wp = calloc(1, sizeof(*wp));
        if (!wp)
                return space_error_set(err, SPACE_E_INTERNAL, "out of memory");
        wp->ctx = ctx;
        wp->defaults = *defaults;
        wp->network = network ? json_deep_copy(network) : NULL;
        if (network && !wp->network) {
                free(wp);
                return space_error_set(err, SPACE_E_INTERNAL, "out of memory");
        }
        pthread_mutex_init(&wp->lock, NULL);
        pthread_cond_init(&wp->wake, NULL);
        wp->n = spec->n;
        for (size_t i = 0; i < spec->n; i++) {
                struct pool *p = &wp->pools[i];
                snprintf(p->template_name, sizeof(p->template_name), "%s", spec->pools[i].template_name);
                p->min = spec->pools[i].min;
                p->max = spec->pools[i].max;
                p->target = p->min;
        }
        *ret = wp;
        return 0;
}

static bool same_resources(const struct sandbox_resources *a, const struct sandbox_resources *b)
{
        return a->cpus == b->cpus && a->memory_mb == b->memory_mb && a->pids == b->pids && a->disk_mb == b->disk_mb;
}

static bool same_json(const json_t *a, const json_t *b)
{
        return (!a && !b) || (a && b && json_equal(a, b));
}

/* Would a create of sb, as bound, have made this warm sandbox? */
static bool matches(const struct warm_entry *e, const struct sandbox *sb)
{
        return !sb->parent_snapshot_id[0] && strcmp(e->sb.template_name, sb->template_name) == 0 &&
                strcmp(e->sb.runtime, sb->runtime) == 0 && same_resources(&e->sb.resources, &sb->resources) &&
                same_json(e->sb.environment, sb->environment) && same_json(e->sb.network, sb->network);
}

static void remove_sandbox(struct warm_pool *wp, const struct sandbox *sb)
{
        struct space_error err = { 0 };
        const struct runtime_driver *d = runtime_registry_find(&wp->ctx->runtimes, sb->runtime);
        if (!d)
                return;
        sandbox_network_forget(wp->ctx, sb);
        if (d->ops->stop(d, sb, &err) < 0 || d->ops->destroy_rootfs(d, sb, &err) < 0)
                log_warn("warm_pool.remove_failed", "sandbox=%s message=\"%s\" effect=\"removed at the next start\"", sb->id,
                         LOG_ESC(err.message));
}

static void entry_free(struct warm_pool *wp, struct warm_entry *e, bool remove)
{
        if (remove)
                remove_sandbox(wp, &e->sb);
        sandbox_release(&e->sb);
        free(e);
}

static void count_demand(struct pool *p, int64_t now_s)
{
        if (now_s - p->demand_second >= RATE_WINDOW_S)
                memset(p->demand, 0, sizeof(p->demand));
        else
                for (int64_t s = p->demand_second + 1; s <= now_s; s++)
                        p->demand[s % RATE_WINDOW_S] = 0;
        if (now_s > p->demand_second)
                p->demand_second = now_s;
        p->demand[now_s % RATE_WINDOW_S]++;
}

static unsigned target_of(struct pool *p, int64_t now_s)
{
        uint64_t recent = 0;
        for (int64_t s = now_s - RATE_WINDOW_S + 1; s <= now_s; s++)
                if (s > p->demand_second - RATE_WINDOW_S && s <= p->demand_second)
                        recent += p->demand[s % RATE_WINDOW_S];
        uint64_t want = (recent * LEAD_S + RATE_WINDOW_S - 1) / RATE_WINDOW_S;
        return want < p->min ? p->min : want > p->max ? p->max : (unsigned)want;
}

bool warm_pool_claim(struct warm_pool *wp, struct sandbox *sb)
{
        if (!wp)
                return false;
        int64_t now_s = wallclock_now_ms() / 1000;
        struct warm_entry *e = NULL;
        pthread_mutex_lock(&wp->lock);
        for (size_t i = 0; i < wp->n && !e; i++) {
                struct pool *p = &wp->pools[i];
                if (strcmp(p->template_name, sb->template_name) != 0)
                        continue;
                count_demand(p, now_s);
                for (unsigned k = p->n_ready; k-- > 0;)
                        if (matches(p->ready[k], sb)) {
                                e = p->ready[k];
                                p->ready[k] = p->ready[--p->n_ready];
                                p->claims++;
                                break;
                        }
                if (!e)
                        p->misses++;
        }
        pthread_mutex_unlock(&wp->lock);
        if (!e)
                return false;

        /* Thawed, and its init still there, or it is not handed out. */
        struct space_error err = { 0 };
        const struct runtime_driver *d = runtime_registry_find(&wp->ctx->runtimes, e->sb.runtime);
        if (!d || d->ops->resume(d, &e->sb, &err) < 0 || d->ops->probe(d, &e->sb, false) != 1) {
                log_warn("warm_pool.claim_failed", "sandbox=%s message=\"%s\" effect=\"a cold create instead\"", e->sb.id,
                         LOG_ESC(err.message));
                entry_free(wp, e, true);
                return false;
        }
        snprintf(sb->id, sizeof(sb->id), "%s", e->sb.id);
        snprintf(sb->runtime_state, sizeof(sb->runtime_state), "%s", e->sb.runtime_state);
        entry_free(wp, e, false);
        return true;
}

void warm_pool_discard(struct warm_pool *wp, const struct sandbox *sb)
{
        if (wp)
                remove_sandbox(wp, sb);
}

/* One warm sandbox of pool p, made without the lock; NULL when it could not be. */
static struct warm_entry *make_one(struct warm_pool *wp, const char *template_name)
{
        struct spaced_context *ctx = wp->ctx;
        struct space_error err = { 0 };
        struct warm_entry *e = calloc(1, sizeof(*e));
        if (!e)
                return NULL;
        struct sandbox *sb = &e->sb;
        snprintf(sb->template_name, sizeof(sb->template_name), "%s", template_name);
        sb->resources = wp->defaults;
        sb->env = json_object();
        sb->metadata = json_object();
        sb->environment = json_object();
        sb->network = wp->network ? json_deep_copy(wp->network) : NULL;
        char tpath[PATH_MAX];
        const struct runtime_driver *d = NULL;
        if (!sb->env || !sb->metadata || !sb->environment || (wp->network && !sb->network)) {
                space_error_set(&err, SPACE_E_INTERNAL, "out of memory");
                goto fail;
        }
        if (sandbox_lifecycle_bind(ctx, sb, &err) < 0)
                goto fail;
        random_id("sb-", 8, sb->id, sizeof(sb->id));
        if (btrfs_pool_template_path(&ctx->pool, sb->template_name, tpath, sizeof(tpath)) < 0) {
                space_error_set(&err, SPACE_E_INTERNAL, "bad template name %s", sb->template_name);
                goto fail;
        }
        if (!(d = runtime_registry_for(&ctx->runtimes, sb, &err)) || d->ops->create_rootfs(d, sb, tpath, &err) < 0)
                goto fail;
        if (sandbox_step_launch_as(ctx, sb, false, &err) < 0 || d->ops->pause(d, sb, &err) < 0) {
                remove_sandbox(wp, sb);
                goto fail;
        }
        return e;
fail:
        log_warn("warm_pool.make_failed", "template=%s message=\"%s\" retry_s=%d", template_name, LOG_ESC(err.message),
                 FAIL_BACKOFF_S);
        entry_free(wp, e, false);
        return NULL;
}

/* Drops the warm sandboxes a create of the template would no longer match (rebuilt,
 * removed, or bound to another runtime now). */
static void drop_stale(struct warm_pool *wp, struct pool *p)
{
        struct sandbox probe = { 0 };
        struct space_error err = { 0 };
        snprintf(probe.template_name, sizeof(probe.template_name), "%s", p->template_name);
        probe.resources = wp->defaults;
        probe.env = json_object();
        probe.environment = json_object();
        probe.network = wp->network ? json_deep_copy(wp->network) : NULL;
        bool bound = probe.env && probe.environment && sandbox_lifecycle_bind(wp->ctx, &probe, &err) == 0;
        struct warm_entry *stale[WARM_POOL_MAX_SIZE];
        unsigned n_stale = 0;
        pthread_mutex_lock(&wp->lock);
        for (unsigned k = p->n_ready; k-- > 0;)
                if (!bound || !matches(p->ready[k], &probe)) {
                        stale[n_stale++] = p->ready[k];
                        p->ready[k] = p->ready[--p->n_ready];
                }
        pthread_mutex_unlock(&wp->lock);
        for (unsigned k = 0; k < n_stale; k++) {
                log_info("warm_pool.dropped", "sandbox=%s template=%s reason=\"%s\"", stale[k]->sb.id, p->template_name,
                         bound ? "the template was rebuilt" : LOG_ESC(err.message));
                entry_free(wp, stale[k], true);
        }
        sandbox_release(&probe);
}

static void fill_round(struct warm_pool *wp)
{
        for (size_t i = 0; i < wp->n; i++) {
                struct pool *p = &wp->pools[i];
                drop_stale(wp, p);
                for (;;) {
                        int64_t now_s = wallclock_now_ms() / 1000;
                        pthread_mutex_lock(&wp->lock);
                        p->target = target_of(p, now_s);
                        bool want = !wp->stopping && p->n_ready < p->target && now_s >= p->retry_at_s &&
                                !atomic_load(&wp->ctx->shutting_down);
                        pthread_mutex_unlock(&wp->lock);
                        if (!want)
                                break;
                        struct warm_entry *e = make_one(wp, p->template_name);
                        pthread_mutex_lock(&wp->lock);
                        if (e && p->n_ready < WARM_POOL_MAX_SIZE && !wp->stopping) {
                                p->ready[p->n_ready++] = e;
                                p->made++;
                                e = NULL;
                        } else if (!e) {
                                p->failed++;
                                p->retry_at_s = now_s + FAIL_BACKOFF_S;
                        }
                        pthread_mutex_unlock(&wp->lock);
                        if (e)
                                entry_free(wp, e, true);
                }
        }
}

static void *filler_main(void *arg)
{
        struct warm_pool *wp = arg;
        pthread_mutex_lock(&wp->lock);
        while (!wp->stopping) {
                pthread_mutex_unlock(&wp->lock);
                fill_round(wp);
                pthread_mutex_lock(&wp->lock);
                if (wp->stopping)
                        break;
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_sec += 1;
                pthread_cond_timedwait(&wp->wake, &wp->lock, &ts);
        }
        pthread_mutex_unlock(&wp->lock);
        return NULL;
}

int warm_pool_start(struct warm_pool *wp)
{
        if (!wp || !wp->n)
                return 0;
        int r = pthread_create(&wp->thread, NULL, filler_main, wp);
        if (r != 0)
                return -r;
        wp->started = true;
        return 0;
}

void warm_pool_stop(struct warm_pool *wp)
{
        if (!wp)
                return;
        pthread_mutex_lock(&wp->lock);
        wp->stopping = true;
        pthread_cond_signal(&wp->wake);
        pthread_mutex_unlock(&wp->lock);
        if (wp->started)
                pthread_join(wp->thread, NULL);
        wp->started = false;
        for (size_t i = 0; i < wp->n; i++) {
                struct warm_entry *left[WARM_POOL_MAX_SIZE];
                pthread_mutex_lock(&wp->lock);
                unsigned n = wp->pools[i].n_ready;
                memcpy(left, wp->pools[i].ready, n * sizeof(left[0]));
                wp->pools[i].n_ready = 0;
                pthread_mutex_unlock(&wp->lock);
                for (unsigned k = 0; k < n; k++)
                        entry_free(wp, left[k], true);
        }
}

void warm_pool_free(struct warm_pool *wp)
{
        if (!wp)
                return;
        warm_pool_stop(wp);
        json_decref(wp->network);
        pthread_cond_destroy(&wp->wake);
        pthread_mutex_destroy(&wp->lock);
        free(wp);
}

bool warm_pool_figures(struct warm_pool *wp, size_t i, struct warm_pool_figures *ret)
{
        if (!wp || i >= wp->n)
                return false;
        pthread_mutex_lock(&wp->lock);
        const struct pool *p = &wp->pools[i];
        *ret = (struct warm_pool_figures){ .ready = p->n_ready,
                                           .target = p->target,
                                           .min = p->min,
                                           .max = p->max,
                                           .claims = p->claims,
                                           .misses = p->misses,
                                           .made = p->made,
                                           .failed = p->failed };
        snprintf(ret->template_name, sizeof(ret->template_name), "%s", p->template_name);
        pthread_mutex_unlock(&wp->lock);
        return true;
}
