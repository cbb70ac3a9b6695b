#include "data_plane/command_channels.h"
#include "data_plane/command_log.h"
#include "operations/sandbox_network.h"
#include "operations/sandbox_lifecycle.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "operations/idle_policy.h"
#include "operations/operation_queue.h"
#include "operations/storage_gate.h"
#include "operations/sandbox_history.h"
#include "operations/sandbox_memory.h"
#include "storage/memory_image.h"
#include "runtime/runtime_registry.h"
#include "spaced/log.h"
#include "spaced/metrics.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"
#include "templates/template_catalog.h"
#include "templates/template_ref.h"

#define M(s) (1u << (s))

static const struct {
        const char *name;
        const char *kind;
        unsigned from;
        enum sandbox_state to; /* the state the sandbox shows while the operation runs */
} actions[] = {
        [SANDBOX_ACTION_STOP] = { "stop", "sandbox.stop", M(SANDBOX_RUNNING) | M(SANDBOX_PAUSED), SANDBOX_STOPPING },
        [SANDBOX_ACTION_START] = { "start", "sandbox.start", M(SANDBOX_STOPPED), SANDBOX_STARTING },
        [SANDBOX_ACTION_PAUSE] = { "pause", "sandbox.pause", M(SANDBOX_RUNNING), SANDBOX_RUNNING },
        [SANDBOX_ACTION_RESUME] = { "resume", "sandbox.resume", M(SANDBOX_PAUSED), SANDBOX_PAUSED },
        [SANDBOX_ACTION_DESTROY] = { "destroy", "sandbox.destroy",
                                     M(SANDBOX_CREATING) | M(SANDBOX_RUNNING) | M(SANDBOX_PAUSED) | M(SANDBOX_STOPPING) |
                                             M(SANDBOX_STOPPED) | M(SANDBOX_STARTING) | M(SANDBOX_FAILED) | M(SANDBOX_RESTORING),
                                     SANDBOX_DESTROYING },
};

int sandbox_action_from_name(const char *name, enum sandbox_action *ret)
{
        for (size_t i = 0; i < sizeof(actions) / sizeof(actions[0]); i++)
                if (strcmp(actions[i].name, name) == 0) {
                        *ret = (enum sandbox_action)i;
                        return 0;
                }
        return -EINVAL;
}

/* A sandbox made from a snapshot: its origin's template and environment binding, when the
 * origin is known here (an imported snapshot may have none). */
static int bind_to_snapshot(struct spaced_context *ctx, struct sandbox *sb, struct space_error *err)
{
        struct snapshot snap;
        struct sandbox origin;
        int r = STORE(ctx, snapshot_get, sb->parent_snapshot_id, &snap);
        if (r == -ENOENT)
                return space_error_set(err, SPACE_E_NOT_FOUND, "snapshot %s not found", sb->parent_snapshot_id);
        if (r < 0)
                return space_error_errno(err, r, "read snapshot %s", sb->parent_snapshot_id);
        if (strcmp(snap.state, "ready") != 0)
                return space_error_set(err, SPACE_E_INVALID_STATE, "snapshot %s is still being taken", snap.id);
        json_decref(sb->environment);
        if (snap.sandbox_id[0] && STORE(ctx, sandbox_get, snap.sandbox_id, &origin) == 0) {
                snprintf(sb->template_name, sizeof(sb->template_name), "%s", origin.template_name);
                sb->environment = json_incref(origin.environment);
                /* the driver that wrote the snapshot reads it (a microvm's holds a disk image) */
                if (!sb->runtime[0])
                        snprintf(sb->runtime, sizeof(sb->runtime), "%s", origin.runtime);
                sandbox_release(&origin);
        } else {
                char base[64];
                snprintf(sb->template_name, sizeof(sb->template_name), "snapshot");
                snprintf(base, sizeof(base), "snapshot:%s", snap.id);
                const struct runtime_driver *d = runtime_registry_default(&ctx->runtimes);
                sb->environment =
                        json_pack("{s:s, s:s, s:s}", "driver", d->ops->name, "driver_version", d->ops->version, "base", base);
        }
        /* A memory snapshot's processes come back on the runtime that wrote its image (an
         * imported one has no origin to take the runtime from: its files say). */
        const char *wrote = sandbox_memory_of(&snap) ? memory_image_runtime(&ctx->pool, snap.id) : NULL;
        if (wrote && !sb->runtime[0] && runtime_registry_find(&ctx->runtimes, wrote))
                snprintf(sb->runtime, sizeof(sb->runtime), "%s", wrote);
        snprintf(sb->parent_sandbox_id, sizeof(sb->parent_sandbox_id), "%s", snap.sandbox_id);
        snprintf(sb->head_snapshot_id, sizeof(sb->head_snapshot_id), "%s", snap.id);
        return 0;
}

/* A sandbox made from a memory snapshot starts from its image, where its runtime can. */
static bool create_from_image(struct spaced_context *ctx, const struct runtime_driver *d, const struct sandbox *sb)
{
        struct snapshot snap;
        if (!sb->parent_snapshot_id[0] || !d->ops->start_from_image ||
            STORE(ctx, snapshot_get, sb->parent_snapshot_id, &snap) < 0)
                return false;
        return sandbox_memory_of(&snap) && memory_image_exists(&ctx->pool, snap.id) == 1;
}

int sandbox_lifecycle_bind(struct spaced_context *ctx, struct sandbox *sb, struct space_error *err)
{
        struct template_record t;
        int r;
        if (storage_gate_check(ctx, STORAGE_GROWS, err) < 0)
                return -1;
        if (sb->parent_snapshot_id[0]) {
                if (bind_to_snapshot(ctx, sb, err) < 0)
                        return -1;
                goto runtime;
        }
        r = template_ref_resolve(ctx, sb->template_name, &t);
        if (r == -ENOENT)
                return space_error_set(err, SPACE_E_NOT_FOUND, "template %s not found", sb->template_name);
        if (r < 0)
                return space_error_errno(err, r, "read template %s", sb->template_name);
        if (strcmp(t.state, "ready") != 0) {
                template_record_release(&t);
                return space_error_set(err, SPACE_E_TEMPLATE_NOT_READY,
                                       "template %s is %s; build it first (POST /v1/templates/%s/build)", sb->template_name,
                                       t.state, sb->template_name);
        }
        const char *pin = json_string_value(json_object_get(sb->environment, "pinned_digest"));
        const char *digest = json_string_value(json_object_get(t.environment, "digest"));
        if (pin && (!digest || strcmp(pin, digest) != 0)) {
                template_record_release(&t);
                return space_error_set(err, SPACE_E_NOT_FOUND, "template %s is no longer at %s", sb->template_name, pin);
        }
        /* The environment binding is copied from the template row in this same step; the
         * template's ENV is the base of the sandbox's env (the request's values win). */
        json_decref(sb->environment);
        sb->environment = json_incref(t.environment);
        snprintf(sb->template_name, sizeof(sb->template_name), "%s", t.name);
        json_t *template_env = json_object_get(json_object_get(t.environment, "config"), "env");
        if (json_is_object(template_env) && json_object_size(template_env) > 0) {
                json_t *merged = json_deep_copy(template_env);
                if (sb->env)
                        json_object_update(merged, sb->env);
                json_decref(sb->env);
                sb->env = merged;
        }
        template_record_release(&t);
runtime:;
        /* The runtime the binding names runs it, for as long as it lives. */
        const struct runtime_driver *driver = sb->runtime[0] ? runtime_registry_for(&ctx->runtimes, sb, err)
                                                             : runtime_registry_for_binding(&ctx->runtimes, sb->environment, err);
        if (!driver)
                return -1;
        snprintf(sb->runtime, sizeof(sb->runtime), "%s", driver->ops->name);
        sb->runtime_state[0] = '\0';
        /* No idle policy of its own asked for: its template's (IDLE in its Spacefile), kept
         * in the binding's config (a snapshot's binding is its origin's). */
        if (!sb->idle) {
                const json_t *own = json_object_get(json_object_get(sb->environment, "config"), "idle");
                struct space_error ignored = { 0 };
                if (own && idle_policy_parse(own, "idle", &sb->idle, &ignored) < 0)
                        sb->idle = NULL;
        }
        /* What it is made with on this host (microvm: the VMM and guest kernel versions) is
         * part of the sandbox's binding; the template's copy stays as it is. */
        if (driver->caps.version[0]) {
                json_t *env = json_deep_copy(sb->environment);
                if (!env || json_object_set_new(env, "runtime_version", json_string(driver->caps.version)) < 0) {
                        json_decref(env);
                        return space_error_set(err, SPACE_E_INTERNAL, "out of memory");
                }
                json_decref(sb->environment);
                sb->environment = env;
        }
        return 0;
}

int sandbox_lifecycle_insert(struct spaced_context *ctx, struct sandbox *sb, struct operation *ret_op, struct space_error *err)
{
        random_id("sb-", 8, sb->id, sizeof(sb->id));
        sb->state = SANDBOX_CREATING;
        sb->created_at_ms = sb->updated_at_ms = wallclock_now_ms();
        operation_init(ret_op, "sandbox.create", sb->id);
        /* A snapshot it is made from stays until the create has run (checked as it is stored). */
        snprintf(ret_op->snapshot_id, sizeof(ret_op->snapshot_id), "%s", sb->parent_snapshot_id);

        int r = STORE(ctx, sandbox_insert, sb, ret_op);
        if (r == -ENOENT && sb->parent_snapshot_id[0])
                return space_error_set(err, SPACE_E_NOT_FOUND, "snapshot %s not found (deleted meanwhile)",
                                       sb->parent_snapshot_id);
        if (r < 0)
                return space_error_errno(err, r, "store sandbox");
        operation_queue_submit(ctx->queue, ret_op->id);
        return 0;
}

int sandbox_lifecycle_create(struct spaced_context *ctx, struct sandbox *sb, struct operation *ret_op, struct space_error *err)
{
        return sandbox_lifecycle_bind(ctx, sb, err) < 0 ? -1 : sandbox_lifecycle_insert(ctx, sb, ret_op, err);
}

int sandbox_lifecycle_insert_running(struct spaced_context *ctx, struct sandbox *sb, struct operation *ret_op,
                                     struct space_error *err)
{
        int64_t now = wallclock_now_ms();
        sb->state = SANDBOX_RUNNING;
        sb->state_reason[0] = '\0';
        sb->created_at_ms = sb->updated_at_ms = now;
        sb->expires_at_ms = sandbox_step_expiry_at(sb);
        operation_init(ret_op, "sandbox.create", sb->id);
        ret_op->started_at_ms = now;
        operation_mark_succeeded(ret_op);
        /* Made here (a warm sandbox of this node's pool), with no claim that would say so. */
        snprintf(sb->node_id, sizeof(sb->node_id), "%s", spaced_runs_operations(ctx) ? ctx->node_id : "");
        /* The sandbox row and its create's end in one transaction: never one without the other. */
        int r = STORE(ctx, sandbox_insert, sb, ret_op);
        if (r < 0)
                return space_error_errno(err, r, "store sandbox");
        metrics_operation_ended(ctx->metrics, "sandbox.create", true, 0, (ret_op->finished_at_ms - now) * 1000);
        return 0;
}

int sandbox_lifecycle_submit(struct spaced_context *ctx, const char *id, enum sandbox_action action, struct operation *ret_op,
                             struct space_error *err)
{
        return sandbox_lifecycle_submit_with(ctx, id, action, NULL, ret_op, err);
}

static int submit(struct spaced_context *ctx, const char *id, enum sandbox_action action, unsigned from, enum sandbox_state to,
                  json_t *params, struct operation *ret_op, struct space_error *err);

int sandbox_lifecycle_submit_with(struct spaced_context *ctx, const char *id, enum sandbox_action action, json_t *params,
                                  struct operation *ret_op, struct space_error *err)
{
        return submit(ctx, id, action, actions[action].from, actions[action].to, params, ret_op, err);
}

int sandbox_lifecycle_submit_held(struct spaced_context *ctx, const char *id, enum sandbox_action action, enum sandbox_state held,
                                  json_t *params, struct operation *ret_op, struct space_error *err)
{
        return submit(ctx, id, action, M(held), held, params, ret_op, err);
}

static int submit(struct spaced_context *ctx, const char *id, enum sandbox_action action, unsigned from, enum sandbox_state to,
                  json_t *params, struct operation *ret_op, struct space_error *err)
{
        enum sandbox_state current;
        if (action == SANDBOX_ACTION_DESTROY && storage_gate_check(ctx, STORAGE_WRITES, err) < 0) {
                json_decref(params);
                return -1; /* its subvolume could not be deleted */
        }
        operation_init(ret_op, actions[action].kind, id);
        if (params && operation_set_params(ret_op, params, err) < 0)
                return -1;
        int r = STORE(ctx, sandbox_transition, id, from, to, "", ret_op, &current);
        if (r == -ENOENT)
                return space_error_set(err, SPACE_E_NOT_FOUND, "sandbox %s not found", id);
        if (r == -ESTALE)
                return space_error_set(err, SPACE_E_INVALID_STATE, "cannot %s sandbox %s while it is %s", actions[action].name,
                                       id, sandbox_state_name(current));
        if (r == -EBUSY)
                return space_error_set(
                        err, SPACE_E_INVALID_STATE,
                        "cannot %s sandbox %s while a fork or snapshot of it that was accepted first has not finished; "
                        "try again when it has",
                        actions[action].name, id);
        if (r < 0)
                return space_error_errno(err, r, "store transition");
        operation_queue_submit(ctx->queue, ret_op->id);
        return 0;
}

void sandbox_step_wrong_state(const struct sandbox *sb, const char *expected, struct space_error *err)
{
        if (sb->state == SANDBOX_DESTROYING || sb->state == SANDBOX_DESTROYED)
                space_error_set(err, SPACE_E_INVALID_STATE,
                                "sandbox %s was destroyed before its %s ran: the destroy accepted after it supersedes it", sb->id,
                                expected);
        else
                space_error_set(err, SPACE_E_INVALID_STATE, "sandbox %s is %s, not %s", sb->id, sandbox_state_name(sb->state),
                                expected);
}

int sandbox_step_load(struct spaced_context *ctx, const char *id, struct sandbox *sb, struct space_error *err)
{
        int r = STORE(ctx, sandbox_get, id, sb);
        if (r < 0)
                return space_error_errno(err, r, "load sandbox %s", id);
        return 0;
}

int sandbox_step_move(struct spaced_context *ctx, const char *id, unsigned from, enum sandbox_state to, const char *reason,
                      struct space_error *err)
{
        enum sandbox_state current;
        int r = STORE(ctx, sandbox_transition, id, from, to, reason, NULL, &current);
        if (r == -ESTALE)
                return space_error_set(err, SPACE_E_INVALID_STATE, "sandbox %s became %s meanwhile", id,
                                       sandbox_state_name(current));
        return r < 0 ? space_error_errno(err, r, "store state of %s", id) : 0;
}

int64_t sandbox_step_expiry_at(const struct sandbox *sb)
{
        return sb->timeout_s > 0 ? wallclock_now_ms() + sb->timeout_s * 1000 : 0;
}

int sandbox_step_settle(struct spaced_context *ctx, struct operation *op, const char *id, struct sandbox_settlement *set,
                        const struct space_error *fail_err, struct space_error *err)
{
        struct operation before = *op;
        if (fail_err)
                operation_mark_failed(op, fail_err);
        else
                operation_mark_succeeded(op);
        set->op = op;
        enum sandbox_state current;
        int r = STORE(ctx, sandbox_settle, id, set, &current);
        if (r == 0)
                return 0;
        *op = before;
        if (r == -ESTALE)
                return space_error_set(err, SPACE_E_INVALID_STATE, "sandbox %s became %s meanwhile", id,
                                       sandbox_state_name(current));
        return space_error_errno(err, r, "store state of %s", id);
}

/* The sandbox's current rootfs gets its disk limit and joins the sandboxes' quota group. */
static int sandbox_disk_limit(struct spaced_context *ctx, const struct sandbox *sb, struct space_error *err)
{
        if (!ctx->cfg.disk_quota)
                return 0;
        const struct runtime_driver *d = runtime_registry_for(&ctx->runtimes, sb, err);
        if (!d)
                return -1;
        int q = d->ops->disk_limit(d, sb, (uint64_t)sb->resources.disk_mb << 20);
        if (q == -EDQUOT)
                return space_error_set(err, SPACE_E_UNAVAILABLE,
                                       "the pool's space for sandboxes is used up (all sandboxes together are at the "
                                       "pool size less its reserve): delete sandboxes or snapshots to free some");
        return q < 0 ? space_error_errno(err, q, "disk limit of %s", sb->id) : 0;
}

int sandbox_lifecycle_disk_limits(struct spaced_context *ctx)
{
        struct sandbox *all = NULL;
        size_t n = 0;
        int r = STORE(ctx, sandbox_list, -1, NULL, NULL, &all, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                const struct runtime_driver *d = runtime_registry_find(&ctx->runtimes, all[i].runtime);
                if (all[i].state == SANDBOX_DESTROYED || !d || !ctx->cfg.disk_quota || !spaced_node_owns(ctx, &all[i]))
                        continue;
                int q = d->ops->disk_limit(d, &all[i], (uint64_t)all[i].resources.disk_mb << 20);
                if (q < 0 && q != -ENOENT) /* -ENOENT: no rootfs (yet, or any more) */
                        log_warn("sandbox.disk_limit_failed", "sandbox=%s error=\"%s\"", all[i].id, strerror(-q));
        }
        sandbox_array_free(all, n);
        return 0;
}

int sandbox_step_launch(struct spaced_context *ctx, struct sandbox *sb, struct space_error *err)
{
        return sandbox_step_launch_as(ctx, sb, true, err);
}

static int launch(struct spaced_context *ctx, struct sandbox *sb, bool record, const char *image_dir, struct space_error *err);

int sandbox_step_launch_as(struct spaced_context *ctx, struct sandbox *sb, bool record, struct space_error *err)
{
        return launch(ctx, sb, record, NULL, err);
}

int sandbox_step_launch_image(struct spaced_context *ctx, struct sandbox *sb, const char *image_dir, struct space_error *err)
{
        return launch(ctx, sb, true, image_dir, err);
}

static int launch(struct spaced_context *ctx, struct sandbox *sb, bool record, const char *image_dir, struct space_error *err)
{
        /* Every way a sandbox comes to run (create, start, restore, fork, the reconciler)
         * passes here: its current rootfs gets its disk limit before anything runs in it,
         * again on every start, so a rootfs made new by a restore or a redone create is
         * never without one. */
        if (sandbox_disk_limit(ctx, sb, err) < 0)
                return -1;
        const struct runtime_driver *d = runtime_registry_for(&ctx->runtimes, sb, err);
        if (d && image_dir && !d->ops->start_from_image)
                return space_error_set(err, SPACE_E_UNSUPPORTED, "the %s runtime cannot start from a memory image", d->ops->name);
        if (!d || (image_dir ? d->ops->start_from_image(d, sb, image_dir, err) : d->ops->start(d, sb, err)) < 0)
                return -1;
        int r = record ? STORE(ctx, sandbox_set_runtime, sb->id, sb->runtime_state) : 0;
        if (r < 0) {
                struct space_error ignored;
                d->ops->stop(d, sb, &ignored);
                return space_error_errno(err, r, "store runtime of %s", sb->id);
        }
        /* Its egress, if it has one, before anyone can run a command in it. */
        if (sandbox_network_attach(ctx, sb, err) < 0) {
                struct space_error ignored;
                d->ops->stop(d, sb, &ignored);
                return -1;
        }
        return 0;
}

int sandbox_op_create(struct spaced_context *ctx, struct operation *op, struct space_error *err)
{
        struct sandbox sb;
        const struct runtime_driver *d = NULL;
        char tpath[PATH_MAX];
        if (sandbox_step_load(ctx, op->target, &sb, err) < 0)
                return -1;
        int r = -1;
        if (sb.state != SANDBOX_CREATING) {
                sandbox_step_wrong_state(&sb, "create", err);
                goto out;
        }
        /* From its template, or from the snapshot it was created from. */
        if ((sb.parent_snapshot_id[0] ? btrfs_pool_snapshot_path(&ctx->pool, sb.parent_snapshot_id, tpath, sizeof(tpath))
                                      : btrfs_pool_template_path(&ctx->pool, sb.template_name, tpath, sizeof(tpath))) < 0) {
                space_error_set(err, SPACE_E_INTERNAL, "bad source %s%s", sb.template_name, sb.parent_snapshot_id);
                goto fail;
        }
        /* A create redone after a crash may find processes of the first attempt using the
         * rootfs: clear them before the rootfs is made again. */
        if (!(d = runtime_registry_for(&ctx->runtimes, &sb, err)) || d->ops->stop(d, &sb, err) < 0 ||
            d->ops->create_rootfs(d, &sb, tpath, err) < 0 ||
            (create_from_image(ctx, d, &sb) ? sandbox_memory_launch(ctx, &sb, sb.parent_snapshot_id, err)
                                            : sandbox_step_launch(ctx, &sb, err)) < 0)
                goto fail;
        struct sandbox_settlement running = { .from_mask = M(SANDBOX_CREATING),
                                              .to = SANDBOX_RUNNING,
                                              .reason = "",
                                              .set_expiry = true,
                                              .expires_at_ms = sandbox_step_expiry_at(&sb) };
        /* On invalid_state it was destroyed while being created: the destroy cleans up after us. */
        r = sandbox_step_settle(ctx, op, sb.id, &running, NULL, err);
        goto out;
fail : {
        struct space_error ignored;
        if (d) {
                d->ops->stop(d, &sb, &ignored);
                d->ops->destroy_rootfs(d, &sb, &ignored);
        }
        struct sandbox_settlement failed = { .from_mask = M(SANDBOX_CREATING), .to = SANDBOX_FAILED, .reason = err->message };
        sandbox_step_settle(ctx, op, sb.id, &failed, err, &ignored);
}
out:
        sandbox_release(&sb);
        return r;
}

int sandbox_op_start(struct spaced_context *ctx, struct operation *op, struct space_error *err)
{
        struct sandbox sb;
        if (sandbox_step_load(ctx, op->target, &sb, err) < 0)
                return -1;
        int r = -1;
        if (sb.state != SANDBOX_STARTING) {
                sandbox_step_wrong_state(&sb, "start", err);
        } else if (sandbox_step_launch(ctx, &sb, err) < 0) {
                struct space_error ignored;
                char reason[300];
                snprintf(reason, sizeof(reason), "start failed: %s", err->message);
                sandbox_step_move(ctx, sb.id, M(SANDBOX_STARTING), SANDBOX_STOPPED, reason, &ignored);
        } else {
                struct sandbox_settlement running = { .from_mask = M(SANDBOX_STARTING),
                                                      .to = SANDBOX_RUNNING,
                                                      .reason = "",
                                                      .set_expiry = true,
                                                      .expires_at_ms = sandbox_step_expiry_at(&sb) };
                r = sandbox_step_settle(ctx, op, sb.id, &running, NULL, err);
        }
        sandbox_release(&sb);
        return r;
}

int sandbox_op_stop(struct spaced_context *ctx, struct operation *op, struct space_error *err)
{
        struct sandbox sb;
        const struct runtime_driver *d;
        if (sandbox_step_load(ctx, op->target, &sb, err) < 0)
                return -1;
        int r = -1;
        if (sb.state != SANDBOX_STOPPING)
                sandbox_step_wrong_state(&sb, "stop", err);
        else if ((d = runtime_registry_for(&ctx->runtimes, &sb, err)) && d->ops->stop(d, &sb, err) == 0) {
                sandbox_network_forget(ctx, &sb);
                struct sandbox_settlement stopped = { .from_mask = M(SANDBOX_STOPPING),
                                                      .to = SANDBOX_STOPPED,
                                                      .reason = "",
                                                      .set_runtime = true,
                                                      .set_expiry = true };
                r = sandbox_step_settle(ctx, op, sb.id, &stopped, NULL, err);
                if (r == 0)
                        sandbox_memory_drop(ctx, sb.id); /* a hibernated one's processes end with it */
        }
        sandbox_release(&sb);
        return r;
}

static int freeze_op(struct spaced_context *ctx, struct operation *op, bool pause, struct space_error *err)
{
        struct sandbox sb;
        const struct runtime_driver *d;
        if (sandbox_step_load(ctx, op->target, &sb, err) < 0)
                return -1;
        enum sandbox_state from = pause ? SANDBOX_RUNNING : SANDBOX_PAUSED;
        enum sandbox_state to = pause ? SANDBOX_PAUSED : SANDBOX_RUNNING;
        json_t *params = json_loads(op->params, 0, NULL);
        /* Hibernation (pause {memory_to_disk}) and the wake of a hibernated sandbox. */
        bool to_disk = pause && json_is_true(json_object_get(params, "memory_to_disk"));
        bool wake = !pause && sandbox_memory_hibernated(&sb);
        json_decref(params);
        /* A paused sandbox is hibernated in place (the controller's idle policy, E2B's pause). */
        if (to_disk && sb.state == SANDBOX_PAUSED && !sandbox_memory_hibernated(&sb))
                from = SANDBOX_PAUSED;
        int r = -1;
        if (sb.state == to && from != to)
                r = 0; /* redone after a restart: already there */
        else if (sb.state != from)
                space_error_set(err, SPACE_E_INVALID_STATE, "sandbox %s is %s", sb.id, sandbox_state_name(sb.state));
        else if ((d = runtime_registry_for(&ctx->runtimes, &sb, err)) &&
                 (to_disk         ? sandbox_memory_hibernate(ctx, d, &sb, err)
                          : wake  ? sandbox_memory_wake(ctx, &sb, err)
                          : pause ? d->ops->pause(d, &sb, err)
                                  : d->ops->resume(d, &sb, err)) == 0) {
                struct sandbox_settlement moved = { .from_mask = M(from),
                                                    .to = to,
                                                    .reason = to_disk ? "hibernated: its memory is on disk" : "",
                                                    .set_runtime = to_disk,
                                                    .runtime_state = RUNTIME_STATE_HIBERNATED,
                                                    .set_expiry = !pause,
                                                    .expires_at_ms = pause ? 0 : sandbox_step_expiry_at(&sb) };
                r = sandbox_step_settle(ctx, op, sb.id, &moved, NULL, err);
                /* Its processes run again: a hibernation's image is spent (also one of a wake
                 * whose record a crash came before: the redo is no wake). */
                if (r == 0 && !pause)
                        sandbox_memory_drop(ctx, sb.id);
                if (to_disk || wake) {
                        /* the store failed: the redo (or the controller) finishes it */
                        sandbox_release(&sb);
                        return r;
                }
                /* The row still says `from`: the sandbox goes back to it, or it would stay
                 * frozen while shown running (or run while shown paused), and nothing
                 * would ever notice (it is alive, so the controller leaves it be). */
                struct space_error ignored;
                if (r < 0 && (pause ? d->ops->resume(d, &sb, &ignored) : d->ops->pause(d, &sb, &ignored)) < 0)
                        log_warn("sandbox.freeze_undo_failed", "sandbox=%s message=\"%s\"", sb.id, LOG_ESC(ignored.message));
        }
        sandbox_release(&sb);
        return r;
}

int sandbox_op_pause(struct spaced_context *ctx, struct operation *op, struct space_error *err)
{
        return freeze_op(ctx, op, true, err);
}

int sandbox_op_resume(struct spaced_context *ctx, struct operation *op, struct space_error *err)
{
        return freeze_op(ctx, op, false, err);
}

int sandbox_op_destroy(struct spaced_context *ctx, struct operation *op, struct space_error *err)
{
        struct sandbox sb;
        const struct runtime_driver *d;
        if (sandbox_step_load(ctx, op->target, &sb, err) < 0)
                return -1;
        int r = -1;
        if (sb.state == SANDBOX_DESTROYED)
                r = 0;
        else if (sb.state != SANDBOX_DESTROYING)
                space_error_set(err, SPACE_E_INVALID_STATE, "sandbox %s is %s, not destroying", sb.id,
                                sandbox_state_name(sb.state));
        else if ((d = runtime_registry_for(&ctx->runtimes, &sb, err)) && d->ops->stop(d, &sb, err) == 0 &&
                 d->ops->destroy_rootfs(d, &sb, err) == 0) {
                sandbox_network_forget(ctx, &sb);
                /* Everything on disk goes before the row says destroyed (a re-run then has it all). */
                char logs[PATH_MAX];
                command_channels_log_dir(ctx, sb.id, NULL, logs, sizeof(logs));
                (void)command_log_remove(logs);
                struct sandbox_settlement destroyed = { .from_mask = M(SANDBOX_DESTROYING),
                                                        .to = SANDBOX_DESTROYED,
                                                        .reason = "",
                                                        .set_runtime = true,
                                                        .set_expiry = true };
                r = sandbox_step_settle(ctx, op, sb.id, &destroyed, NULL, err);
                if (r == 0)
                        sandbox_memory_drop(ctx, sb.id);
        }
        sandbox_release(&sb);
        return r;
}

operation_handler operation_handler_for(const char *kind)
{
        static const struct {
                const char *kind;
                operation_handler h;
        } table[] = {
                { "sandbox.create", sandbox_op_create },     { "sandbox.start", sandbox_op_start },
                { "sandbox.stop", sandbox_op_stop },         { "sandbox.pause", sandbox_op_pause },
                { "sandbox.resume", sandbox_op_resume },     { "sandbox.destroy", sandbox_op_destroy },
                { "sandbox.snapshot", sandbox_op_snapshot }, { "sandbox.restore", sandbox_op_restore },
                { "sandbox.fork", sandbox_op_fork },         { "template.build", template_op_build },
        };
        for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
                if (strcmp(table[i].kind, kind) == 0)
                        return table[i].h;
        return NULL;
}
