#include "controller/rolling_snapshots.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "operations/sandbox_history.h"
#include "runtime/runtime_registry.h"
#include "spaced/log.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

struct policy {
        int64_t interval_ms, retain_ms, max_count;
        bool memory;
};

static struct policy policy_of(const struct spaced_context *ctx, const struct sandbox *sb)
{
        struct policy p = { 0, ctx->cfg.rolling_retain_s * 1000, ctx->cfg.rolling_max_count, false };
        if (sb && sb->rolling) {
                p.interval_ms = json_integer_value(json_object_get(sb->rolling, "interval_s")) * 1000;
                p.retain_ms = json_integer_value(json_object_get(sb->rolling, "retain_s")) * 1000;
                p.max_count = json_integer_value(json_object_get(sb->rolling, "max_count"));
                p.memory = json_is_true(json_object_get(sb->rolling, "memory"));
        }
        return p;
}

static const struct sandbox *find_sandbox(const struct sandbox *all, size_t n, const char *id)
{
        for (size_t i = 0; i < n; i++)
                if (strcmp(all[i].id, id) == 0)
                        return &all[i];
        return NULL;
}

/* Deletes the expired and the surplus rolling snapshots of one sandbox (snaps oldest first). */
static void retain(struct spaced_context *ctx, struct snapshot *snaps, size_t n, const char *sandbox_id, struct policy p,
                   int64_t now)
{
        int64_t ready = 0;
        for (size_t i = 0; i < n; i++)
                if (snaps[i].rolling && strcmp(snaps[i].sandbox_id, sandbox_id) == 0 && strcmp(snaps[i].state, "ready") == 0)
                        ready++;
        for (size_t i = 0; i < n && ready > 0; i++) {
                struct snapshot *s = &snaps[i];
                if (!s->rolling || strcmp(s->sandbox_id, sandbox_id) != 0 || strcmp(s->state, "ready") != 0)
                        continue;
                if (now - s->created_at_ms <= p.retain_ms && ready <= p.max_count)
                        break; /* the rest are newer */
                struct space_error err = { 0 };
                if (sandbox_history_delete_snapshot(ctx, s->id, &err) == 0)
                        log_info("rolling.expired", "sandbox=%s snapshot=%s", sandbox_id, s->id);
                else
                        log_debug("rolling.keep", "snapshot=%s reason=\"%s\"", s->id, LOG_ESC(err.message));
                ready--;
        }
}

/* Takes the next rolling snapshot when one is due and the filesystem changed. */
static void schedule(struct spaced_context *ctx, const struct sandbox *sb, const struct snapshot *latest, struct policy p,
                     int64_t now)
{
        if (sb->state != SANDBOX_RUNNING || p.interval_ms <= 0)
                return;
        if (latest && (strcmp(latest->state, "ready") != 0 || now - latest->created_at_ms < p.interval_ms))
                return;
        if (latest) {
                char snap[PATH_MAX];
                const struct runtime_driver *d = runtime_registry_find(&ctx->runtimes, sb->runtime);
                if (!d || btrfs_pool_snapshot_path(&ctx->pool, latest->id, snap, sizeof(snap)) < 0)
                        return;
                if (d->ops->changed_since(d, sb, snap) == 0) {
                        log_debug("rolling.unchanged", "sandbox=%s since=%s", sb->id, latest->id);
                        return;
                }
        }
        struct snapshot taken;
        struct operation op;
        struct space_error err = { 0 };
        if (sandbox_history_snapshot(ctx, sb->id, "rolling", p.memory, true, &taken, &op, &err) < 0)
                log_warn("rolling.failed", "sandbox=%s message=\"%s\"", sb->id, LOG_ESC(err.message));
        else
                log_info("rolling.scheduled", "sandbox=%s snapshot=%s op=%s", sb->id, taken.id, op.id);
}

void rolling_snapshots_tick(struct spaced_context *ctx)
{
        struct sandbox *all = NULL;
        struct snapshot *snaps = NULL;
        size_t n = 0, nsnaps = 0;
        if (STORE(ctx, sandbox_list, -1, NULL, NULL, &all, &n) < 0)
                return;
        if (STORE(ctx, snapshot_list, NULL, NULL, NULL, &snaps, &nsnaps) < 0) {
                sandbox_array_free(all, n);
                return;
        }
        int64_t now = wallclock_now_ms();
        for (size_t i = 0; i < n; i++) {
                if (!all[i].rolling || !spaced_node_owns(ctx, &all[i]))
                        continue;
                const struct snapshot *latest = NULL;
                for (size_t k = 0; k < nsnaps; k++)
                        if (snaps[k].rolling && strcmp(snaps[k].sandbox_id, all[i].id) == 0)
                                latest = &snaps[k];
                schedule(ctx, &all[i], latest, policy_of(ctx, &all[i]), now);
        }
        /* Retention, for every sandbox that has rolling snapshots (also destroyed ones: their
         * snapshots expire under the server's default policy). */
        for (size_t k = 0; k < nsnaps; k++) {
                if (!snaps[k].rolling)
                        continue;
                bool seen = false;
                for (size_t j = 0; j < k && !seen; j++)
                        seen = snaps[j].rolling && strcmp(snaps[j].sandbox_id, snaps[k].sandbox_id) == 0;
                if (!seen)
                        retain(ctx, snaps, nsnaps, snaps[k].sandbox_id, policy_of(ctx, find_sandbox(all, n, snaps[k].sandbox_id)),
                               now);
        }
        free(snaps);
        sandbox_array_free(all, n);
}
