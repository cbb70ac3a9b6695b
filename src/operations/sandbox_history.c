#include "operations/sandbox_history.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/snapshot_sizer.h"
#include "operations/operation_queue.h"
#include "operations/sandbox_lifecycle.h"
#include "operations/sandbox_memory.h"
#include "operations/storage_gate.h"
#include "runtime/runtime_registry.h"
#include "spaced/log.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

#define M(s) (1u << (s))
#define SNAPSHOTTABLE (M(SANDBOX_RUNNING) | M(SANDBOX_PAUSED) | M(SANDBOX_STOPPED))
#define FORK_MAX 16

static void snapshot_init(struct snapshot *snap, const char *sandbox_id, const char *label)
{
        memset(snap, 0, sizeof(*snap));
        random_id("snap-", 8, snap->id, sizeof(snap->id));
        snprintf(snap->sandbox_id, sizeof(snap->sandbox_id), "%s", sandbox_id);
        snprintf(snap->state, sizeof(snap->state), "creating");
        snprintf(snap->label, sizeof(snap->label), "%s", label ? label : "");
        snprintf(snap->kind, sizeof(snap->kind), "filesystem");
        snap->bytes_exclusive = -1;
        snap->created_at_ms = wallclock_now_ms();
}

static int load_sandbox(struct spaced_context *ctx, const char *id, struct sandbox *ret, struct space_error *err)
{
        int r = STORE(ctx, sandbox_get, id, ret);
        if (r == -ENOENT || (r == 0 && ret->state == SANDBOX_DESTROYED)) {
                if (r == 0)
                        sandbox_release(ret);
                return space_error_set(err, SPACE_E_NOT_FOUND, "sandbox %s not found", id);
        }
        return r < 0 ? space_error_errno(err, r, "load sandbox %s", id) : 0;
}

static int load_snapshot(struct spaced_context *ctx, const char *id, struct snapshot *ret, struct space_error *err)
{
        int r = STORE(ctx, snapshot_get, id, ret);
        if (r == -ENOENT)
                return space_error_set(err, SPACE_E_NOT_FOUND, "snapshot %s not found", id);
        return r < 0 ? space_error_errno(err, r, "load snapshot %s", id) : 0;
}

static int snapshot_dir(struct spaced_context *ctx, const char *id, char *buf, size_t size, struct space_error *err)
{
        int r = btrfs_pool_snapshot_path(&ctx->pool, id, buf, size);
        return r < 0 ? space_error_errno(err, r, "snapshot path of %s", id) : 0;
}

static json_t *params_of(const struct operation *op)
{
        json_t *j = json_loads(op->params, 0, NULL);
        return j ? j : json_object();
}

static int queue(struct spaced_context *ctx, const struct operation *op, struct space_error *err)
{
        operation_queue_submit(ctx->queue, op->id);
        return 0;
}

/* ---- snapshot ---- */

int sandbox_history_snapshot(struct spaced_context *ctx, const char *sandbox_id, const char *label, bool memory, bool rolling,
                             struct snapshot *ret_snap, struct operation *ret_op, struct space_error *err)
{
        struct sandbox sb;
        if (storage_gate_check(ctx, STORAGE_WRITES, err) < 0 || load_sandbox(ctx, sandbox_id, &sb, err) < 0)
                return -1;
        enum sandbox_state state = sb.state;
        bool with_network = sb.network != NULL;
        const struct runtime_driver *d = runtime_registry_for(&ctx->runtimes, &sb, err);
        sandbox_release(&sb);
        if (!d)
                return -1;
        /* Its own driver decides (a namespace sandbox's is a 422 unsupported). */
        if (memory && sandbox_memory_check(d, sandbox_id, state, with_network, err) < 0)
                return -1;
        if (!(SNAPSHOTTABLE & M(state)))
                return space_error_set(err, SPACE_E_INVALID_STATE, "cannot snapshot sandbox %s while it is %s", sandbox_id,
                                       sandbox_state_name(state));
        snapshot_init(ret_snap, sandbox_id, label);
        if (memory)
                snprintf(ret_snap->kind, sizeof(ret_snap->kind), "memory");
        ret_snap->rolling = rolling;
        operation_init(ret_op, "sandbox.snapshot", sandbox_id);
        if (operation_set_params(ret_op, json_pack("{s:s}", "snapshot_id", ret_snap->id), err) < 0)
                return -1;
        snprintf(ret_op->snapshot_id, sizeof(ret_op->snapshot_id), "%s", ret_snap->id);
        int r = STORE(ctx, insert_batch, NULL, 0, ret_snap, 1, ret_op);
        if (r < 0)
                return space_error_errno(err, r, "store snapshot");
        return queue(ctx, ret_op, err);
}

/* Takes the snapshot row's data from the sandbox; marks it ready and the sandbox's head. */
static int take_snapshot(struct spaced_context *ctx, struct sandbox *sb, struct snapshot *snap, struct space_error *err)
{
        char dst[PATH_MAX];
        if (!(SNAPSHOTTABLE & M(sb->state)))
                return space_error_set(err, SPACE_E_INVALID_STATE, "sandbox %s became %s", sb->id, sandbox_state_name(sb->state));
        const struct runtime_driver *d = runtime_registry_for(&ctx->runtimes, sb, err);
        if (!d || snapshot_dir(ctx, snap->id, dst, sizeof(dst), err) < 0 ||
            (sandbox_memory_of(snap) ? sandbox_memory_take(ctx, d, sb, snap, dst, &snap->pause_us, err)
                                     : d->ops->snapshot_rootfs(d, sb, dst, &snap->pause_us, err)) < 0)
                return -1;
        snprintf(snap->parent_snapshot_id, sizeof(snap->parent_snapshot_id), "%s", sb->head_snapshot_id);
        snprintf(snap->state, sizeof(snap->state), "ready");
        int r = STORE(ctx, snapshot_update, snap);
        if (r == 0)
                r = STORE(ctx, sandbox_set_head, sb->id, snap->id);
        if (r < 0)
                return space_error_errno(err, r, "store snapshot %s", snap->id);
        log_info("snapshot.taken", "sandbox=%s snapshot=%s kind=%s pause_us=%lld", sb->id, snap->id, snap->kind,
                 (long long)snap->pause_us);
        return 0;
}

static void drop_snapshot(struct spaced_context *ctx, const char *id)
{
        char dir[PATH_MAX];
        struct space_error ignored;
        if (snapshot_dir(ctx, id, dir, sizeof(dir), &ignored) == 0)
                btrfs_pool_subvolume_delete(dir);
        sandbox_memory_drop(ctx, id);
        /* Left behind, the row is dropped by the reconciler (not ready, no operation). */
        int r = STORE(ctx, snapshot_delete, id, false, NULL);
        if (r < 0)
                log_warn("snapshot.drop_failed", "snapshot=%s error=\"%s\"", id, strerror(-r));
}

int sandbox_op_snapshot(struct spaced_context *ctx, struct operation *op, struct space_error *err)
{
        json_t *params = params_of(op);
        const char *snap_id = json_string_value(json_object_get(params, "snapshot_id"));
        struct snapshot snap;
        struct sandbox sb;
        int r = -1;
        if (!snap_id || load_snapshot(ctx, snap_id, &snap, err) < 0) {
                if (!snap_id)
                        space_error_set(err, SPACE_E_INTERNAL, "operation %s has no snapshot_id", op->id);
                goto out;
        }
        if (sandbox_step_load(ctx, op->target, &sb, err) < 0) {
                /* Not taken, and this operation ends: a row left "creating" would show until
                 * the next start (only then are those without an operation dropped). */
                if (strcmp(snap.state, "ready") != 0)
                        drop_snapshot(ctx, snap.id);
                goto out;
        }
        if (strcmp(snap.state, "ready") != 0) {
                r = take_snapshot(ctx, &sb, &snap, err);
                if (r < 0) {
                        sandbox_release(&sb);
                        drop_snapshot(ctx, snap.id);
                        goto out;
                }
        } else if (strcmp(sb.head_snapshot_id, snap.parent_snapshot_id) == 0) {
                /* Redone after a crash between marking it ready and moving the head. */
                r = STORE(ctx, sandbox_set_head, sb.id, snap.id);
                if (r < 0) {
                        sandbox_release(&sb);
                        space_error_errno(err, r, "store the head of %s", sb.id);
                        goto out;
                }
        }
        sandbox_release(&sb);
        r = operation_set_result(op, json_pack("{s:s, s:f}", "snapshot_id", snap.id, "pause_ms", (double)snap.pause_us / 1000.0),
                                 err);
out:
        json_decref(params);
        return r;
}

int sandbox_history_delete_snapshot(struct spaced_context *ctx, const char *snapshot_id, struct space_error *err)
{
        struct snapshot snap;
        if (load_snapshot(ctx, snapshot_id, &snap, err) < 0)
                return -1;
        if (strcmp(snap.state, "ready") != 0)
                return space_error_set(err, SPACE_E_INVALID_STATE, "snapshot %s is still being taken", snapshot_id);
        char dir[PATH_MAX], user[32] = "";
        if (snapshot_dir(ctx, snapshot_id, dir, sizeof(dir), err) < 0)
                return -1;
        /* A create, restore or fork accepted but not finished would lose its source: the store
         * refuses in the same transaction as the deletion, and an operation that needs the
         * snapshot is stored only while the row is there (struct operation.snapshot_id).
         * The row goes first: a crash after it leaves a subvolume without a row, which the
         * next start removes; the other order could leave a row without its data. */
        int r = STORE(ctx, snapshot_delete, snapshot_id, true, user);
        if (r == -EBUSY)
                return space_error_set(err, SPACE_E_INVALID_STATE,
                                       "snapshot %s is needed by operation %s, which has not finished", snapshot_id, user);
        if (r < 0 && r != -ENOENT)
                return space_error_errno(err, r, "store deletion of %s", snapshot_id);
        /* Our own background reader steps aside (and may pick it up again in between: retry). */
        for (int attempt = 0; attempt < 5; attempt++) {
                snapshot_sizer_release(snapshot_id);
                r = btrfs_pool_subvolume_delete(dir);
                if (r != -EPERM && r != -EBUSY && r != -EAGAIN)
                        break;
        }
        if (r < 0)
                log_warn("snapshot.delete_deferred", "snapshot=%s path=%s error=\"%s\" note=\"removed at the next start\"",
                         snapshot_id, dir, strerror(-r));
        sandbox_memory_drop(ctx, snapshot_id);
        return 0;
}

/* ---- restore ---- */

int sandbox_history_restore(struct spaced_context *ctx, const char *sandbox_id, const char *snapshot_id, struct operation *ret_op,
                            struct space_error *err)
{
        struct snapshot snap;
        struct sandbox sb;
        if (storage_gate_check(ctx, STORAGE_WRITES, err) < 0 || load_sandbox(ctx, sandbox_id, &sb, err) < 0)
                return -1;
        enum sandbox_state state = sb.state;
        sandbox_release(&sb);
        if (load_snapshot(ctx, snapshot_id, &snap, err) < 0)
                return -1;
        if (strcmp(snap.sandbox_id, sandbox_id) != 0)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "snapshot %s belongs to sandbox %s; fork from it instead",
                                       snapshot_id, snap.sandbox_id);
        if (strcmp(snap.state, "ready") != 0)
                return space_error_set(err, SPACE_E_INVALID_STATE, "snapshot %s is still being taken", snapshot_id);
        if (!(SNAPSHOTTABLE & M(state)))
                return space_error_set(err, SPACE_E_INVALID_STATE, "cannot restore sandbox %s while it is %s", sandbox_id,
                                       sandbox_state_name(state));
        operation_init(ret_op, "sandbox.restore", sandbox_id);
        /* A sandbox that was running (or paused) runs again on the restored filesystem; a
         * memory snapshot's processes always run again, where they were. */
        bool memory = sandbox_memory_of(&snap);
        if (operation_set_params(ret_op,
                                 json_pack("{s:s, s:b, s:b}", "snapshot_id", snapshot_id, "restart",
                                           memory || state != SANDBOX_STOPPED, "memory", memory),
                                 err) < 0)
                return -1;
        snprintf(ret_op->snapshot_id, sizeof(ret_op->snapshot_id), "%s", snapshot_id);
        enum sandbox_state current;
        int r = STORE(ctx, sandbox_transition, sandbox_id, M(state), SANDBOX_RESTORING, "", ret_op, &current);
        if (r == -ESTALE)
                return space_error_set(err, SPACE_E_INVALID_STATE, "sandbox %s changed to %s meanwhile", sandbox_id,
                                       sandbox_state_name(current));
        if (r == -ENOENT)
                return space_error_set(err, SPACE_E_NOT_FOUND, "snapshot %s not found (deleted meanwhile)", snapshot_id);
        if (r < 0)
                return space_error_errno(err, r, "store restore");
        return queue(ctx, ret_op, err);
}

int sandbox_op_restore(struct spaced_context *ctx, struct operation *op, struct space_error *err)
{
        json_t *params = params_of(op);
        const char *snap_id = json_string_value(json_object_get(params, "snapshot_id"));
        bool restart = json_is_true(json_object_get(params, "restart"));
        bool memory = json_is_true(json_object_get(params, "memory"));
        char src[PATH_MAX], reason[300];
        struct sandbox sb;
        struct space_error ignored;
        int r = -1;
        if (sandbox_step_load(ctx, op->target, &sb, err) < 0)
                goto out_params;
        if (sb.state != SANDBOX_RESTORING) {
                sandbox_step_wrong_state(&sb, "restore", err);
                goto out;
        }
        const struct runtime_driver *d = runtime_registry_for(&ctx->runtimes, &sb, err);
        if (!d || !snap_id || snapshot_dir(ctx, snap_id, src, sizeof(src), err) < 0 || d->ops->stop(d, &sb, err) < 0 ||
            d->ops->restore_rootfs(d, &sb, src, err) < 0) {
                /* Shown stopped only once it is: when the stop was what failed, it may still
                 * run. If it cannot be stopped now, it stays restoring, which the controller
                 * settles (stopping it) when no operation drives it any more. */
                snprintf(reason, sizeof(reason), "restore failed: %s", err->message);
                if (d && d->ops->stop(d, &sb, &ignored) == 0)
                        sandbox_step_move(ctx, sb.id, M(SANDBOX_RESTORING), SANDBOX_STOPPED, reason, &ignored);
                goto out;
        }
        /* The new head and the cleared runtime handle go with the final state, in one
         * transaction (a start that fails is written the same way, without the op). */
        struct sandbox_settlement done = { .from_mask = M(SANDBOX_RESTORING),
                                           .to = SANDBOX_STOPPED,
                                           .reason = "",
                                           .head_snapshot_id = snap_id,
                                           .set_runtime = true,
                                           .runtime_state = "" };
        if (restart && (memory ? sandbox_memory_launch(ctx, &sb, snap_id, err) : sandbox_step_launch(ctx, &sb, err)) < 0) {
                snprintf(reason, sizeof(reason), "restored, but start failed: %s", err->message);
                done.reason = reason;
                enum sandbox_state current;
                int q = STORE(ctx, sandbox_settle, sb.id, &done, &current);
                if (q < 0)
                        log_warn("sandbox.restore_settle_failed", "sandbox=%s error=\"%s\"", sb.id, strerror(-q));
                goto out;
        }
        if (restart) /* sandbox_step_launch stored the new handle */
                done.set_runtime = false;
        if (restart) {
                done.to = SANDBOX_RUNNING;
                done.set_expiry = true;
                done.expires_at_ms = sandbox_step_expiry_at(&sb);
        }
        /* The result goes into the operation's final row, written with the sandbox's state. */
        r = operation_set_result(op, json_pack("{s:s}", "snapshot_id", snap_id), err);
        if (r == 0)
                r = sandbox_step_settle(ctx, op, sb.id, &done, NULL, err);
out:
        sandbox_release(&sb);
out_params:
        json_decref(params);
        return r;
}

/* ---- fork ---- */

static void child_from_parent(struct sandbox *child, const struct sandbox *parent, const char *snapshot_id, json_t *metadata)
{
        memset(child, 0, sizeof(*child));
        random_id("sb-", 8, child->id, sizeof(child->id));
        child->state = SANDBOX_CREATING;
        snprintf(child->template_name, sizeof(child->template_name), "%s", parent->template_name);
        child->environment = json_incref(parent->environment);
        snprintf(child->runtime, sizeof(child->runtime), "%s", parent->runtime); /* the same driver reads its rootfs */
        child->resources = parent->resources;
        child->env = json_incref(parent->env);
        child->metadata = json_incref(metadata ? metadata : parent->metadata);
        child->timeout_s = parent->timeout_s;
        child->rolling = parent->rolling ? json_incref(parent->rolling) : NULL;
        child->network = parent->network ? json_incref(parent->network) : NULL; /* the same egress */
        child->idle = parent->idle ? json_incref(parent->idle) : NULL;
        child->private_ports = parent->private_ports; /* E2B: its ports stay private, under the child's own token */
        snprintf(child->on_timeout, sizeof(child->on_timeout), "%s", parent->on_timeout);
        child->created_at_ms = child->updated_at_ms = wallclock_now_ms();
        snprintf(child->parent_sandbox_id, sizeof(child->parent_sandbox_id), "%s", parent->id);
        snprintf(child->project_id, sizeof(child->project_id), "%s", parent->project_id);
        snprintf(child->parent_snapshot_id, sizeof(child->parent_snapshot_id), "%s", snapshot_id);
        snprintf(child->head_snapshot_id, sizeof(child->head_snapshot_id), "%s", snapshot_id);
}

int sandbox_history_fork(struct spaced_context *ctx, const char *sandbox_id, const char *snapshot_id, int count, bool memory,
                         json_t *metadata, char (**ret_ids)[32], struct operation *ret_op, struct space_error *err)
{
        struct sandbox parent;
        struct snapshot snap;
        bool take = !snapshot_id;
        if (count < 1 || count > FORK_MAX)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "count must be between 1 and %d", FORK_MAX);
        if (storage_gate_check(ctx, STORAGE_GROWS, err) < 0 || load_sandbox(ctx, sandbox_id, &parent, err) < 0)
                return -1;
        int r = -1;
        struct sandbox *children = calloc((size_t)count, sizeof(*children));
        char(*ids)[32] = calloc((size_t)count, sizeof(*ids));
        int made = 0;
        if (!children || !ids) {
                space_error_set(err, SPACE_E_INTERNAL, "out of memory");
                goto out;
        }
        if (take) {
                if (!(SNAPSHOTTABLE & M(parent.state))) {
                        space_error_set(err, SPACE_E_INVALID_STATE, "cannot fork sandbox %s while it is %s", sandbox_id,
                                        sandbox_state_name(parent.state));
                        goto out;
                }
                if (memory) {
                        const struct runtime_driver *d = runtime_registry_for(&ctx->runtimes, &parent, err);
                        if (!d || sandbox_memory_check(d, sandbox_id, parent.state, parent.network != NULL, err) < 0)
                                goto out;
                }
                snapshot_init(&snap, sandbox_id, "fork");
                if (memory)
                        snprintf(snap.kind, sizeof(snap.kind), "memory");
        } else {
                if (load_snapshot(ctx, snapshot_id, &snap, err) < 0)
                        goto out;
                if (strcmp(snap.sandbox_id, sandbox_id) != 0) {
                        space_error_set(err, SPACE_E_INVALID_REQUEST, "snapshot %s belongs to sandbox %s", snapshot_id,
                                        snap.sandbox_id);
                        goto out;
                }
                if (strcmp(snap.state, "ready") != 0) {
                        space_error_set(err, SPACE_E_INVALID_STATE, "snapshot %s is still being taken", snapshot_id);
                        goto out;
                }
        }
        json_t *child_ids = json_array();
        for (; made < count; made++) {
                child_from_parent(&children[made], &parent, snap.id, metadata);
                memcpy(ids[made], children[made].id, sizeof(ids[made]));
                json_array_append_new(child_ids, json_string(children[made].id));
        }
        operation_init(ret_op, "sandbox.fork", sandbox_id);
        if (operation_set_params(
                    ret_op, json_pack("{s:s, s:b, s:o}", "snapshot_id", snap.id, "take_snapshot", take, "children", child_ids),
                    err) < 0) {
                r = -1;
                goto out;
        }
        snprintf(ret_op->snapshot_id, sizeof(ret_op->snapshot_id), "%s", snap.id);
        r = STORE(ctx, insert_batch, children, (size_t)count, take ? &snap : NULL, take ? 1 : 0, ret_op);
        if (r == -ENOENT) {
                space_error_set(err, SPACE_E_NOT_FOUND, "snapshot %s not found (deleted meanwhile)", snap.id);
                goto out;
        }
        if (r < 0) {
                space_error_errno(err, r, "store fork");
                goto out;
        }
        r = queue(ctx, ret_op, err);
        if (r == 0) {
                *ret_ids = ids;
                ids = NULL;
        }
out:
        for (int i = 0; children && i < count; i++)
                sandbox_release(&children[i]);
        free(children);
        free(ids);
        sandbox_release(&parent);
        return r;
}

/* A launched child's move to running and its timeout, in one transaction. */
static int settle_child_running(struct spaced_context *ctx, const struct sandbox *child)
{
        struct sandbox_settlement up = { .from_mask = M(SANDBOX_CREATING),
                                         .to = SANDBOX_RUNNING,
                                         .reason = "",
                                         .set_expiry = true,
                                         .expires_at_ms = sandbox_step_expiry_at(child) };
        enum sandbox_state current;
        int r = STORE(ctx, sandbox_settle, child->id, &up, &current);
        if (r < 0 && r != -ESTALE)
                log_warn("sandbox.fork_settle_failed", "sandbox=%s error=\"%s\"", child->id, strerror(-r));
        return r;
}

/* Brings one fork child from creating to running on a copy of the snapshot (its processes
 * from the snapshot's image when it is a memory snapshot). */
static int start_child(struct spaced_context *ctx, const char *id, const char *src, const struct snapshot *snap,
                       struct space_error *err)
{
        struct sandbox child;
        struct space_error ignored;
        if (sandbox_step_load(ctx, id, &child, err) < 0)
                return -1;
        int r = 0;
        const struct runtime_driver *d = runtime_registry_for(&ctx->runtimes, &child, err);
        if (child.state == SANDBOX_CREATING && !d) {
                sandbox_step_move(ctx, child.id, M(SANDBOX_CREATING), SANDBOX_FAILED, err->message, &ignored);
                r = -1;
        } else if (child.state == SANDBOX_CREATING) {
                if (d->ops->stop(d, &child, err) < 0 || d->ops->create_rootfs(d, &child, src, err) < 0 ||
                    (sandbox_memory_of(snap) ? sandbox_memory_launch(ctx, &child, snap->id, err)
                                             : sandbox_step_launch(ctx, &child, err)) < 0) {
                        d->ops->stop(d, &child, &ignored);
                        d->ops->destroy_rootfs(d, &child, &ignored);
                        /* A child no longer creating was destroyed meanwhile: its destroy
                         * (which may be what broke the launch) decides its fate, and the
                         * fork did all that was asked of it. */
                        struct space_error moved = { 0 };
                        if (sandbox_step_move(ctx, child.id, M(SANDBOX_CREATING), SANDBOX_FAILED, err->message, &moved) < 0 &&
                            moved.code == SPACE_E_INVALID_STATE)
                                r = 0;
                        else
                                r = -1;
                } else if ((r = settle_child_running(ctx, &child)) < 0) {
                        /* -ESTALE: destroyed while we launched it (its destroy runs apart from
                         * this fork): leave nothing behind whichever of the two finishes last.
                         * Else the store failed: the child did not come up, and says so. */
                        d->ops->stop(d, &child, &ignored);
                        d->ops->destroy_rootfs(d, &child, &ignored);
                        if (r == -ESTALE) {
                                r = 0;
                        } else {
                                space_error_errno(err, r, "store state of %s", child.id);
                                sandbox_step_move(ctx, child.id, M(SANDBOX_CREATING), SANDBOX_FAILED, err->message, &ignored);
                                r = -1;
                        }
                }
        }
        sandbox_release(&child);
        return r;
}

static void fail_children(struct spaced_context *ctx, json_t *children, const char *reason)
{
        size_t i;
        json_t *v;
        struct space_error ignored;
        json_array_foreach(children, i, v)
                sandbox_step_move(ctx, json_string_value(v), M(SANDBOX_CREATING), SANDBOX_FAILED, reason, &ignored);
}

int sandbox_op_fork(struct spaced_context *ctx, struct operation *op, struct space_error *err)
{
        json_t *params = params_of(op);
        const char *snap_id = json_string_value(json_object_get(params, "snapshot_id"));
        json_t *children = json_object_get(params, "children");
        struct snapshot snap;
        char src[PATH_MAX];
        int r = -1, failed = 0;
        if (!snap_id || !json_is_array(children)) {
                space_error_set(err, SPACE_E_INTERNAL, "operation %s has malformed parameters", op->id);
                goto out;
        }
        if (load_snapshot(ctx, snap_id, &snap, err) < 0) {
                fail_children(ctx, children, err->message);
                goto out;
        }
        if (strcmp(snap.state, "ready") != 0) {
                struct sandbox parent;
                if (sandbox_step_load(ctx, op->target, &parent, err) < 0) {
                        drop_snapshot(ctx, snap.id); /* not taken, and nothing will take it */
                        fail_children(ctx, children, err->message);
                        goto out;
                }
                int t = take_snapshot(ctx, &parent, &snap, err);
                sandbox_release(&parent);
                if (t < 0) {
                        drop_snapshot(ctx, snap.id);
                        fail_children(ctx, children, err->message);
                        goto out;
                }
        }
        if (snapshot_dir(ctx, snap.id, src, sizeof(src), err) < 0)
                goto out;
        size_t i;
        json_t *v;
        struct space_error first = { 0 };
        json_array_foreach(children, i, v)
        {
                struct space_error e = { 0 };
                if (start_child(ctx, json_string_value(v), src, &snap, &e) < 0 && failed++ == 0)
                        first = e;
        }
        if (failed) {
                space_error_set(err, first.code, "%d of %zu forks failed; first: %s", failed, json_array_size(children),
                                first.message);
                goto out;
        }
        r = operation_set_result(op, json_pack("{s:s, s:O}", "snapshot_id", snap.id, "sandbox_ids", children), err);
out:
        json_decref(params);
        return r;
}
