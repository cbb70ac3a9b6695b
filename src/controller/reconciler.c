#include "data_plane/command_channels.h"
#include "controller/reconciler.h"
#include "controller/daemon_health.h"
#include "controller/idle_sweep.h"
#include "controller/pool_watch.h"
#include "controller/retention.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "controller/rolling_snapshots.h"
#include "operations/operation_queue.h"
#include "operations/sandbox_lifecycle.h"
#include "operations/sandbox_memory.h"
#include "runtime/runtime_registry.h"
#include "spaced/log.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

#define M(s) (1u << (s))

struct reconciler {
        struct spaced_context *ctx;
        pthread_t thread;
        pthread_mutex_t lock;
        pthread_cond_t wake;
        bool stopping;
};

static void sweep_staging(struct spaced_context *ctx)
{
        char dir[PATH_MAX];
        snprintf(dir, sizeof(dir), "%s/staging", ctx->pool.root);
        DIR *d = opendir(dir);
        if (!d)
                return;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                char path[PATH_MAX];
                snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
                int r = btrfs_pool_subvolume_delete(path);
                log_info("reconcile.staging_removed", "path=%s result=%d", path, r);
        }
        closedir(d);
}

/* An unfinished operation will drive this object: it is its target, or named in its
 * parameters (a fork's children, the snapshot it takes), as the store's operation_refs
 * say. When the store cannot tell, the object is left alone (yes). */
static bool has_op(struct spaced_context *ctx, const char *id)
{
        bool refers = true;
        int r = STORE(ctx, operation_refers, id, &refers);
        if (r < 0)
                log_warn("reconcile.refs_unknown", "object=%s error=\"%s\"", id, strerror(-r));
        return r < 0 || refers;
}

static void settle(struct spaced_context *ctx, struct sandbox *sb, unsigned from, enum sandbox_state to, const char *reason,
                   bool remove_rootfs)
{
        struct space_error err = { 0 };
        const struct runtime_driver *d = runtime_registry_for(&ctx->runtimes, sb, &err);
        if (!d || d->ops->stop(d, sb, &err) < 0 || (remove_rootfs && d->ops->destroy_rootfs(d, sb, &err) < 0)) {
                log_error("reconcile.cleanup_failed", "sandbox=%s message=\"%s\"", sb->id, LOG_ESC(err.message));
                return;
        }
        /* The cleared runtime handle and the state, in one transaction. */
        struct sandbox_settlement set = {
                .from_mask = from, .to = to, .reason = reason, .set_runtime = true, .runtime_state = ""
        };
        enum sandbox_state current;
        int r = STORE(ctx, sandbox_settle, sb->id, &set, &current);
        if (r < 0) {
                log_error("reconcile.settle_failed", "sandbox=%s error=\"%s\"", sb->id, strerror(-r));
                return;
        }
        log_info("reconcile.settled", "sandbox=%s state=%s reason=\"%s\"", sb->id, sandbox_state_name(to), LOG_ESC(reason));
}

static void reconcile_sandbox(struct spaced_context *ctx, struct sandbox *sb)
{
        struct space_error err = { 0 };
        const struct runtime_driver *d = runtime_registry_for(&ctx->runtimes, sb, &err);
        if (!d) {
                /* Left as it is: a daemon that hosts its runtime again takes it back. */
                log_warn("reconcile.runtime_missing", "sandbox=%s runtime=%s", sb->id, sb->runtime);
                return;
        }
        switch (sb->state) {
        case SANDBOX_RUNNING:
        case SANDBOX_PAUSED:
                if (d->ops->probe(d, sb, true) == 1) {
                        log_info("reconcile.reattached", "sandbox=%s state=%s runtime=%s", sb->id, sandbox_state_name(sb->state),
                                 sb->runtime);
                        return;
                }
                char why[256];
                if (d->ops->exit_reason && d->ops->exit_reason(d, sb, why, sizeof(why)) == 1)
                        settle(ctx, sb, M(sb->state), SANDBOX_FAILED, why, true);
                else
                        settle(ctx, sb, M(sb->state), SANDBOX_STOPPED, "its processes exited while spaced was not watching",
                               false);
                return;
        case SANDBOX_CREATING:
                settle(ctx, sb, M(SANDBOX_CREATING), SANDBOX_FAILED, "creation was interrupted", true);
                return;
        case SANDBOX_STARTING:
        case SANDBOX_STOPPING:
                settle(ctx, sb, M(sb->state), SANDBOX_STOPPED, "", false);
                return;
        case SANDBOX_RESTORING:
                settle(ctx, sb, M(SANDBOX_RESTORING), SANDBOX_STOPPED, "a restore was interrupted", false);
                return;
        case SANDBOX_DESTROYING:
                settle(ctx, sb, M(SANDBOX_DESTROYING), SANDBOX_DESTROYED, "", true);
                return;
        case SANDBOX_STOPPED:
        case SANDBOX_FAILED: {
                /* Nothing may run for these: make sure of it (cheap when there is nothing). */
                d->ops->stop(d, sb, &err);
                return;
        }
        default:
                return;
        }
}

/* A snapshot still being taken that no unfinished operation will finish: its data and its
 * row go. (Nothing new can come to need it: only ready snapshots are made from, restored to
 * or forked from.) */
static void drop_unowned_snapshot(struct spaced_context *ctx, const struct snapshot *snap, const char *why)
{
        char path[PATH_MAX];
        if (btrfs_pool_snapshot_path(&ctx->pool, snap->id, path, sizeof(path)) == 0)
                btrfs_pool_subvolume_delete(path);
        int r = STORE(ctx, snapshot_delete, snap->id, false, NULL);
        if (r < 0) {
                log_error("reconcile.snapshot_delete_failed", "snapshot=%s error=\"%s\"", snap->id, strerror(-r));
                return;
        }
        log_info("reconcile.snapshot_dropped", "snapshot=%s reason=\"%s\"", snap->id, why);
}

/* A snapshot whose data is in this node's pool: its sandbox lives here. One whose sandbox
 * is gone or lives elsewhere is left alone (its data is where that sandbox was). */
static bool snapshot_here(struct spaced_context *ctx, const struct snapshot *snap)
{
        struct sandbox sb;
        if (STORE(ctx, sandbox_get, snap->sandbox_id, &sb) < 0)
                return !ctx->node_id[0];
        bool here = spaced_node_owns(ctx, &sb);
        sandbox_release(&sb);
        return here;
}

/* Snapshots: rows still "creating" that no operation will finish, and subvolumes without a row. */
static void reconcile_snapshots(struct spaced_context *ctx)
{
        struct snapshot *snaps = NULL;
        size_t n = 0;
        char path[PATH_MAX];
        if (STORE(ctx, snapshot_list, NULL, NULL, NULL, &snaps, &n) < 0)
                return;
        for (size_t i = 0; i < n; i++)
                if (strcmp(snaps[i].state, "ready") == 0 && snapshot_here(ctx, &snaps[i]) &&
                    btrfs_pool_snapshot_path(&ctx->pool, snaps[i].id, path, sizeof(path)) == 0 && access(path, F_OK) < 0 &&
                    errno == ENOENT) {
                        int r = STORE(ctx, snapshot_delete, snaps[i].id, false, NULL);
                        if (r < 0)
                                log_error("reconcile.snapshot_delete_failed", "snapshot=%s error=\"%s\"", snaps[i].id,
                                          strerror(-r));
                        log_warn("reconcile.snapshot_lost", "snapshot=%s reason=\"its subvolume is missing\"", snaps[i].id);
                } else if (strcmp(snaps[i].state, "ready") != 0 && !has_op(ctx, snaps[i].id)) {
                        drop_unowned_snapshot(ctx, &snaps[i], "taken when spaced stopped");
                }
        char dir[PATH_MAX];
        snprintf(dir, sizeof(dir), "%s/snapshots", ctx->pool.root);
        DIR *d = opendir(dir);
        struct dirent *de;
        while (d && (de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                bool known = false;
                for (size_t i = 0; i < n && !known; i++)
                        known = strcmp(snaps[i].id, de->d_name) == 0;
                if (known)
                        continue;
                snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
                int r = btrfs_pool_subvolume_delete(path);
                log_info("reconcile.orphan_snapshot_removed", "path=%s result=%d", path, r);
        }
        if (d)
                closedir(d);
        free(snaps);
}

static void remove_orphans_of(struct spaced_context *ctx, const struct runtime_driver *d)
{
        char **ids = NULL;
        size_t n = 0;
        if (d->ops->list_resources(d, &ids, &n) < 0)
                log_warn("reconcile.list_failed", "what=host resources runtime=%s", d->ops->name);
        for (size_t i = 0; i < n; i++) {
                struct sandbox sb;
                int r = STORE(ctx, sandbox_get, ids[i], &sb);
                /* Gone, destroyed, or moved to another node (a create another node took over
                 * from this one): what is left here is no one's. */
                bool orphan = r == -ENOENT || (r == 0 && (sb.state == SANDBOX_DESTROYED || !spaced_node_owns(ctx, &sb)));
                if (r == 0)
                        sandbox_release(&sb);
                if (orphan) {
                        struct sandbox ghost = { 0 };
                        struct space_error err = { 0 };
                        snprintf(ghost.id, sizeof(ghost.id), "%s", ids[i]);
                        snprintf(ghost.runtime, sizeof(ghost.runtime), "%s", d->ops->name);
                        if (d->ops->stop(d, &ghost, &err) < 0 || d->ops->destroy_rootfs(d, &ghost, &err) < 0)
                                log_error("reconcile.orphan_failed", "id=%s message=\"%s\"", ids[i], LOG_ESC(err.message));
                        else
                                log_info("reconcile.orphan_removed", "id=%s", ids[i]);
                }
                free(ids[i]);
        }
        free(ids);
}

static void remove_orphans(struct spaced_context *ctx)
{
        for (size_t i = 0; i < ctx->runtimes.n; i++)
                remove_orphans_of(ctx, ctx->runtimes.drivers[i]);
}

int reconciler_startup(struct spaced_context *ctx)
{
        struct operation *ops = NULL;
        size_t nops = 0;
        int r = STORE(ctx, operation_list, NULL, -1, true, NULL, NULL, &ops, &nops);
        if (r < 0)
                return r;
        sweep_staging(ctx);

        struct template_record *templates = NULL;
        size_t nt = 0;
        if (STORE(ctx, template_list, NULL, NULL, &templates, &nt) == 0) {
                for (size_t i = 0; i < nt; i++) {
                        if (strcmp(templates[i].state, "building") == 0 && !has_op(ctx, templates[i].name)) {
                                /* A name:tag that was never published (its build's row was written,
                                 * its operation not) goes; a built-in or a published one stays. */
                                int w;
                                if (strchr(templates[i].name, ':') && !json_object_get(templates[i].environment, "digest")) {
                                        w = STORE(ctx, template_delete, templates[i].name);
                                } else {
                                        snprintf(templates[i].state, sizeof(templates[i].state), "not_built");
                                        w = STORE(ctx, template_upsert, &templates[i]);
                                }
                                if (w < 0)
                                        log_error("reconcile.template_settle_failed", "template=%s error=\"%s\"",
                                                  templates[i].name, strerror(-w));
                        }
                        template_record_release(&templates[i]);
                }
                free(templates);
        }

        struct sandbox *all = NULL;
        size_t n = 0;
        r = STORE(ctx, sandbox_list, -1, NULL, NULL, &all, &n);
        if (r < 0) {
                free(ops);
                return r;
        }
        /* Only this node's sandboxes: another node's live in its pool and its runtime. */
        for (size_t i = 0; i < n; i++)
                if (spaced_node_owns(ctx, &all[i]) && !has_op(ctx, all[i].id))
                        reconcile_sandbox(ctx, &all[i]);
        sandbox_array_free(all, n);
        remove_orphans(ctx);
        command_channels_remove_orphan_logs(ctx);
        reconcile_snapshots(ctx);
        sandbox_memory_reconcile(ctx);

        /* Every handler is idempotent: run what was in flight again, oldest first — what this
         * node may claim (its own claims were let go when it registered; another live
         * node's stay with it). */
        for (size_t i = 0; i < nops; i++) {
                log_info("reconcile.operation_unfinished", "op=%s kind=%s target=%s holder=%s", ops[i].id, ops[i].kind,
                         ops[i].target, ops[i].claim_owner[0] ? ops[i].claim_owner : "none");
                if (!ctx->node_id[0]) /* not a node of a fleet (the unit tests' fake daemon): all of them */
                        operation_queue_push(ctx->queue, ops[i].id);
        }
        free(ops);
        while (operation_queue_claim_round(ctx->queue, 64) == 64)
                ;
        return 0;
}

static void expire(struct spaced_context *ctx, const struct sandbox *sb)
{
        enum sandbox_action action = SANDBOX_ACTION_STOP;
        sandbox_action_from_name(strcmp(sb->on_timeout, "pause") == 0             ? "pause"
                                         : strcmp(sb->on_timeout, "destroy") == 0 ? "destroy"
                                                                                  : "stop",
                                 &action);
        struct operation op;
        struct space_error err = { 0 };
        /* Disarmed first, so that it fires once; if that cannot be written, the next pass tries again. */
        int r = STORE(ctx, sandbox_set_expiry, sb->id, 0);
        if (r < 0) {
                log_error("controller.timeout_disarm_failed", "sandbox=%s error=\"%s\"", sb->id, strerror(-r));
                return;
        }
        if (sandbox_lifecycle_submit(ctx, sb->id, action, &op, &err) < 0) {
                log_warn("controller.timeout_failed", "sandbox=%s message=\"%s\"", sb->id, LOG_ESC(err.message));
                /* Armed again unless it moved meanwhile (a stop or a destroy came first): a
                 * submission that failed for another reason (the store, the pool) is tried
                 * again at the next pass rather than lost. */
                if (err.code != SPACE_E_INVALID_STATE && err.code != SPACE_E_NOT_FOUND &&
                    (r = STORE(ctx, sandbox_set_expiry, sb->id, sb->expires_at_ms)) < 0)
                        log_error("controller.timeout_rearm_failed", "sandbox=%s error=\"%s\"", sb->id, strerror(-r));
        } else
                log_info("controller.timeout", "sandbox=%s action=%s op=%s", sb->id, sb->on_timeout, op.id);
}

#define TRANSIENT (M(SANDBOX_CREATING) | M(SANDBOX_STARTING) | M(SANDBOX_STOPPING) | M(SANDBOX_DESTROYING) | M(SANDBOX_RESTORING))
#define TRANSIENT_DEADLINE_MS (60 * 1000)
#define OPERATION_WARN_MS (10 * 60 * 1000)

/* A transient state is only ever held while an operation drives it. One that outlives its
 * deadline with no operation (a store failure half way, a bug) is finished the way a
 * restart would finish it; an operation running far too long is reported. */
static void check_deadlines(struct spaced_context *ctx, struct sandbox *all, size_t n, int64_t now)
{
        struct operation *ops = NULL;
        size_t nops = 0;
        if (STORE(ctx, operation_list, NULL, -1, true, NULL, NULL, &ops, &nops) < 0)
                return;
        for (size_t i = 0; i < nops; i++)
                if (ops[i].state == OPERATION_RUNNING && now - ops[i].started_at_ms > OPERATION_WARN_MS)
                        log_warn("controller.operation_slow", "op=%s kind=%s target=%s running_s=%lld", ops[i].id, ops[i].kind,
                                 ops[i].target, (long long)((now - ops[i].started_at_ms) / 1000));
        for (size_t i = 0; i < n; i++)
                if ((TRANSIENT & M(all[i].state)) && spaced_node_owns(ctx, &all[i]) &&
                    now - all[i].updated_at_ms > TRANSIENT_DEADLINE_MS && !has_op(ctx, all[i].id)) {
                        log_warn("controller.transient_overdue", "sandbox=%s state=%s", all[i].id,
                                 sandbox_state_name(all[i].state));
                        reconcile_sandbox(ctx, &all[i]);
                }
        free(ops);
        /* Likewise a snapshot left "creating" by an operation that ended without taking it
         * (it failed before it could drop the row): without this it would show until the
         * next start. */
        struct snapshot *snaps = NULL;
        size_t nsnaps = 0;
        if (STORE(ctx, snapshot_list, NULL, NULL, NULL, &snaps, &nsnaps) < 0)
                return;
        for (size_t i = 0; i < nsnaps; i++)
                if (strcmp(snaps[i].state, "ready") != 0 && now - snaps[i].created_at_ms > TRANSIENT_DEADLINE_MS &&
                    !has_op(ctx, snaps[i].id))
                        drop_unowned_snapshot(ctx, &snaps[i], "its operation ended without taking it");
        free(snaps);
}

void reconciler_tick(struct spaced_context *ctx, bool probe)
{
        struct sandbox *all = NULL;
        size_t n = 0;
        if (STORE(ctx, sandbox_list, -1, NULL, NULL, &all, &n) < 0)
                return;
        int64_t now = wallclock_now_ms();
        if (probe)
                check_deadlines(ctx, all, n, now);
        for (size_t i = 0; i < n; i++) {
                struct sandbox *sb = &all[i];
                if (!spaced_node_owns(ctx, sb))
                        continue; /* its node expires and probes it */
                bool live = sb->state == SANDBOX_RUNNING || sb->state == SANDBOX_PAUSED;
                if (live && sb->expires_at_ms > 0 && sb->expires_at_ms <= now) {
                        expire(ctx, sb);
                        continue;
                }
                const struct runtime_driver *d = runtime_registry_find(&ctx->runtimes, sb->runtime);
                if (probe && live && d && d->ops->probe(d, sb, false) == 0) {
                        /* Re-read: an operation may have moved it while we looked. */
                        struct sandbox fresh;
                        if (STORE(ctx, sandbox_get, sb->id, &fresh) == 0) {
                                char why[256];
                                if ((fresh.state == SANDBOX_RUNNING || fresh.state == SANDBOX_PAUSED) &&
                                    strcmp(fresh.runtime_state, sb->runtime_state) == 0 && d->ops->probe(d, &fresh, false) == 0) {
                                        /* a driver that knows why (a hostile guest, a VM gone) makes it a
                                         * failure, and what the guest wrote goes with it */
                                        if (d->ops->exit_reason && d->ops->exit_reason(d, &fresh, why, sizeof(why)) == 1)
                                                settle(ctx, &fresh, M(fresh.state), SANDBOX_FAILED, why, true);
                                        else
                                                settle(ctx, &fresh, M(fresh.state), SANDBOX_STOPPED, "its init process exited",
                                                       false);
                                }
                                sandbox_release(&fresh);
                        }
                }
        }
        sandbox_array_free(all, n);
}

static void *controller_main(void *arg)
{
        struct reconciler *rc = arg;
        unsigned ticks = 0;
        pthread_mutex_lock(&rc->lock);
        while (!rc->stopping) {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_sec += 1;
                pthread_cond_timedwait(&rc->wake, &rc->lock, &ts);
                if (rc->stopping)
                        break;
                pthread_mutex_unlock(&rc->lock);
                reconciler_tick(rc->ctx, ++ticks % 10 == 0);
                pool_watch_tick(rc->ctx, ticks);
                daemon_health_tick(rc->ctx, ticks);
                retention_tick(rc->ctx, ticks);
                if (ticks % 10 == 5)
                        rolling_snapshots_tick(rc->ctx);
                if (ticks % 5 == 2)
                        idle_sweep_tick(rc->ctx);
                pthread_mutex_lock(&rc->lock);
        }
        pthread_mutex_unlock(&rc->lock);
        return NULL;
}

int reconciler_start(struct spaced_context *ctx, struct reconciler **ret)
{
        struct reconciler *rc = calloc(1, sizeof(*rc));
        if (!rc)
                return -ENOMEM;
        rc->ctx = ctx;
        pthread_mutex_init(&rc->lock, NULL);
        pthread_cond_init(&rc->wake, NULL);
        int r = pthread_create(&rc->thread, NULL, controller_main, rc);
        if (r != 0) {
                free(rc);
                return -r;
        }
        *ret = rc;
        return 0;
}

void reconciler_free(struct reconciler *rc)
{
        if (!rc)
                return;
        pthread_mutex_lock(&rc->lock);
        rc->stopping = true;
        pthread_cond_signal(&rc->wake);
        pthread_mutex_unlock(&rc->lock);
        pthread_join(rc->thread, NULL);
        free(rc);
}
