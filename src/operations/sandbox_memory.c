/* sandbox_memory: memory snapshots' images, taken, launched from and dropped (sandbox_memory.h). */
#include "operations/sandbox_memory.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "operations/operation_queue.h"
#include "operations/sandbox_lifecycle.h"
#include "runtime/runtime_registry.h"
#include "spaced/fault_point.h"
#include "spaced/log.h"
#include "spaced/dir_tree.h"
#include "spaced/spaced_context.h"
#include "storage/btrfs_pool.h"
#include "storage/memory_image.h"

#define M(s) (1u << (s))

bool sandbox_memory_of(const struct snapshot *snap)
{
        return strcmp(snap->kind, "memory") == 0;
}

int sandbox_memory_check(const struct runtime_driver *d, const char *sandbox_id, enum sandbox_state state, bool with_network,
                         struct space_error *err)
{
        if (!d->caps.memory_snapshot || !d->ops->checkpoint || !d->ops->start_from_image)
                return space_error_set(err, SPACE_E_UNSUPPORTED,
                                       "memory snapshots are not available with the %s runtime on this host: %s", d->ops->name,
                                       d->caps.memory_snapshot_detail);
        if (with_network && !d->caps.memory_snapshot_network)
                return space_error_set(err, SPACE_E_UNSUPPORTED,
                                       "memory snapshots of a %s sandbox with egress are not available: its runtime cannot "
                                       "checkpoint a sandbox on a network link (docs/network.md); take a disk snapshot",
                                       d->ops->name);
        if (!((M(SANDBOX_RUNNING) | M(SANDBOX_PAUSED)) & M(state)))
                return space_error_set(err, SPACE_E_INVALID_STATE,
                                       "sandbox %s is %s: it has no processes whose memory could be snapshotted", sandbox_id,
                                       sandbox_state_name(state));
        return 0;
}

int sandbox_memory_take(struct spaced_context *ctx, const struct runtime_driver *d, const struct sandbox *sb,
                        const struct snapshot *snap, const char *dst, int64_t *ret_pause_us, struct space_error *err)
{
        char partial[PATH_MAX];
        if (sandbox_memory_check(d, sb->id, sb->state, sb->network != NULL, err) < 0)
                return -1;
        if (sandbox_memory_hibernated(sb))
                return space_error_set(err, SPACE_E_INVALID_STATE,
                                       "sandbox %s is hibernated: resume it for a memory snapshot (a filesystem one needs "
                                       "no resume)",
                                       sb->id);
        int r = memory_image_begin(&ctx->pool, snap->id, partial, sizeof(partial));
        if (r < 0)
                return space_error_errno(err, -r, "memory image of %s", snap->id);
        if (d->ops->checkpoint(d, sb, dst, partial, true, ret_pause_us, err) < 0)
                return -1;
        /* A crash here leaves a partial image and a rootfs snapshot of a row still creating:
         * the operation, redone, takes both again. */
        fault_point("snapshot.memory", "checkpointed");
        if ((r = memory_image_commit(&ctx->pool, snap->id)) < 0)
                return space_error_errno(err, -r, "memory image of %s", snap->id);
        return 0;
}

int sandbox_memory_launch(struct spaced_context *ctx, struct sandbox *sb, const char *snapshot_id, struct space_error *err)
{
        char image[PATH_MAX];
        int r = memory_image_path(&ctx->pool, snapshot_id, image, sizeof(image));
        if (r < 0)
                return space_error_errno(err, -r, "memory image of %s", snapshot_id);
        if ((r = memory_image_exists(&ctx->pool, snapshot_id)) <= 0)
                return r < 0 ? space_error_errno(err, -r, "memory image of %s", snapshot_id)
                             : space_error_set(err, SPACE_E_INTERNAL, "the memory image of snapshot %s is missing", snapshot_id);
        return sandbox_step_launch_image(ctx, sb, image, err);
}

void sandbox_memory_drop(struct spaced_context *ctx, const char *snapshot_id)
{
        int r = memory_image_remove(&ctx->pool, snapshot_id);
        if (r < 0)
                log_warn("snapshot.memory_drop_failed", "snapshot=%s error=\"%s\" note=\"removed at the next start\"",
                         snapshot_id, strerror(-r));
}

/* A hibernation's image (keyed by a sandbox id) stays while its sandbox is running or
 * paused (hibernated, or a hibernation to be redone); else it goes. A running sandbox may
 * keep one left by a crash after its wake, until its next hibernation or its end. */
static void sandbox_image_reconcile(struct spaced_context *ctx, const char *id, bool partial)
{
        struct sandbox sb;
        int r = STORE(ctx, sandbox_get, id, &sb);
        if (r < 0 && r != -ENOENT)
                return;
        bool keep = r == 0 && (sb.state == SANDBOX_RUNNING || sb.state == SANDBOX_PAUSED);
        if (r == 0)
                sandbox_release(&sb);
        if (keep)
                return;
        r = memory_image_remove(&ctx->pool, id);
        log_info("reconcile.orphan_memory_image_removed", "sandbox=%s partial=%d result=%d", id, partial, r);
}

void sandbox_memory_reconcile(struct spaced_context *ctx)
{
        struct snapshot *snaps = NULL;
        size_t n = 0, ni = 0;
        char **ids = NULL, path[PATH_MAX];
        int *partial = NULL;
        if (STORE(ctx, snapshot_list, NULL, NULL, NULL, &snaps, &n) < 0)
                return;
        /* A ready memory snapshot without its image cannot bring its processes back: it goes
         * (its row, then its subvolume), as one whose subvolume is missing does. */
        for (size_t i = 0; i < n; i++) {
                if (!sandbox_memory_of(&snaps[i]) || strcmp(snaps[i].state, "ready") != 0 ||
                    memory_image_exists(&ctx->pool, snaps[i].id) != 0)
                        continue;
                int r = STORE(ctx, snapshot_delete, snaps[i].id, false, NULL);
                if (r == 0 && btrfs_pool_snapshot_path(&ctx->pool, snaps[i].id, path, sizeof(path)) == 0)
                        btrfs_pool_subvolume_delete(path);
                log_warn("reconcile.snapshot_lost", "snapshot=%s reason=\"its memory image is missing\" result=%d", snaps[i].id,
                         r);
                snaps[i].state[0] = '\0';
        }
        /* Images of no row, and partial images of rows already ready (a crash between the
         * rename and the row), go; a partial image of a row still creating is its
         * operation's, redone. */
        if (memory_image_list(&ctx->pool, &ids, &partial, &ni) < 0)
                ni = 0;
        for (size_t i = 0; i < ni; i++) {
                const struct snapshot *row = NULL;
                for (size_t j = 0; j < n && !row; j++)
                        if (snaps[j].state[0] && strcmp(snaps[j].id, ids[i]) == 0)
                                row = &snaps[j];
                if (strncmp(ids[i], "sb-", 3) == 0) {
                        sandbox_image_reconcile(ctx, ids[i], partial[i]);
                } else if (!row || (partial[i] && strcmp(row->state, "ready") == 0)) {
                        int r = row ? 0 : memory_image_remove(&ctx->pool, ids[i]);
                        if (row && memory_image_path(&ctx->pool, ids[i], path, sizeof(path)) == 0) {
                                /* only the partial one: the image in place stays */
                                char leftover[PATH_MAX + 16];
                                snprintf(leftover, sizeof(leftover), "%s.partial", path);
                                r = dir_tree_remove(leftover);
                        }
                        log_info("reconcile.orphan_memory_image_removed", "snapshot=%s partial=%d result=%d", ids[i], partial[i],
                                 r);
                }
                free(ids[i]);
        }
        free(ids);
        free(partial);
        free(snaps);
}

bool sandbox_memory_can_hibernate(struct spaced_context *ctx, const struct sandbox *sb)
{
        struct space_error ignored;
        const struct runtime_driver *d = runtime_registry_for(&ctx->runtimes, sb, &ignored);
        return d && d->caps.memory_snapshot && (!sb->network || d->caps.memory_snapshot_network) && d->ops->checkpoint &&
                d->ops->start_from_image;
}

int sandbox_memory_rolling_check(struct spaced_context *ctx, const struct sandbox *sb, struct space_error *err)
{
        if (!sb->rolling || !json_is_true(json_object_get(sb->rolling, "memory")) || sandbox_memory_can_hibernate(ctx, sb))
                return 0;
        return space_error_set(err, SPACE_E_UNSUPPORTED,
                               "rolling memory snapshots are not available with the %s runtime on this host (gvisor has them)",
                               sb->runtime);
}

bool sandbox_memory_hibernated(const struct sandbox *sb)
{
        return strcmp(sb->runtime_state, RUNTIME_STATE_HIBERNATED) == 0;
}

/* A hibernation that failed before it was recorded: the sandbox goes on running without an
 * image (the old state; frozen is true when the checkpoint left it frozen), and its
 * state_reason says why. Returns -1, err kept. */
static int hibernate_undo(struct spaced_context *ctx, const struct runtime_driver *d, const struct sandbox *sb, bool frozen,
                          const struct space_error *err)
{
        struct space_error ignored;
        char reason[300];
        /* A paused sandbox stays paused (its agent parked), as the checkpoint left it. */
        if (frozen && sb->state == SANDBOX_RUNNING && d->ops->resume(d, sb, &ignored) < 0)
                log_warn("sandbox.hibernate_undo_failed", "sandbox=%s message=\"%s\"", sb->id, LOG_ESC(ignored.message));
        sandbox_memory_drop(ctx, sb->id);
        snprintf(reason, sizeof(reason), "hibernation failed: %s", err->message);
        (void)sandbox_step_move(ctx, sb->id, M(sb->state), sb->state, reason, &ignored);
        return -1;
}

int sandbox_memory_hibernate(struct spaced_context *ctx, const struct runtime_driver *d, const struct sandbox *sb,
                             struct space_error *err)
{
        char partial[PATH_MAX];
        int64_t pause_us;
        /* Redone after the image was recorded: what is left is ending the processes. */
        if (sandbox_memory_hibernated(sb))
                return d->ops->stop(d, sb, err);
        if (sandbox_memory_check(d, sb->id, sb->state, sb->network != NULL, err) < 0)
                return -1;
        int r = memory_image_begin(&ctx->pool, sb->id, partial, sizeof(partial));
        if (r < 0)
                return space_error_errno(err, -r, "memory image of %s", sb->id);
        if (d->ops->checkpoint(d, sb, NULL, partial, false, &pause_us, err) < 0)
                return hibernate_undo(ctx, d, sb, false, err); /* it went on running */
        fault_point("hibernate", "checkpointed");
        /* Whole on disk before the processes go: a crash before the record leaves the
         * sandbox frozen with its processes whole, and the redo takes the image again. */
        if ((r = memory_image_commit(&ctx->pool, sb->id)) < 0) {
                space_error_errno(err, -r, "memory image of %s", sb->id);
                return hibernate_undo(ctx, d, sb, true, err);
        }
        fault_point("hibernate", "committed");
        /* Recorded before the processes end, so that nothing (the controller's liveness
         * check, a restart) takes the sandbox for dead meanwhile. */
        if ((r = STORE(ctx, sandbox_set_runtime, sb->id, RUNTIME_STATE_HIBERNATED)) < 0) {
                space_error_errno(err, -r, "store the hibernation of %s", sb->id);
                return hibernate_undo(ctx, d, sb, true, err);
        }
        fault_point("hibernate", "recorded");
        if (d->ops->stop(d, sb, err) < 0)
                return -1;
        fault_point("hibernate", "stopped");
        log_info("sandbox.hibernated", "sandbox=%s bytes=%lld", sb->id, (long long)memory_image_bytes(&ctx->pool, sb->id));
        return 0;
}

int sandbox_memory_wake(struct spaced_context *ctx, struct sandbox *sb, struct space_error *err)
{
        if (sandbox_memory_launch(ctx, sb, sb->id, err) < 0)
                return -1;
        /* A crash here: the handle of the woken sandbox is recorded, its row still paused. The
         * redo is a resume of a sandbox that runs (the driver only unparks its agent); the
         * image, spent, goes once it is settled running. */
        fault_point("wake", "launched");
        return 0;
}

int sandbox_memory_submit_hibernate(struct spaced_context *ctx, const char *id, struct operation *ret_op, struct space_error *err)
{
        struct sandbox sb;
        int r = STORE(ctx, sandbox_get, id, &sb);
        if (r == -ENOENT || (r == 0 && sb.state == SANDBOX_DESTROYED)) {
                if (r == 0)
                        sandbox_release(&sb);
                return space_error_set(err, SPACE_E_NOT_FOUND, "sandbox %s not found", id);
        }
        if (r < 0)
                return space_error_errno(err, r, "load sandbox %s", id);
        const struct runtime_driver *d = runtime_registry_for(&ctx->runtimes, &sb, err);
        enum sandbox_state state = sb.state;
        bool hibernated = sandbox_memory_hibernated(&sb), with_network = sb.network != NULL;
        sandbox_release(&sb);
        if (!d || sandbox_memory_check(d, id, state, with_network, err) < 0)
                return -1;
        if (state != SANDBOX_RUNNING && (state != SANDBOX_PAUSED || hibernated))
                return space_error_set(err, SPACE_E_INVALID_STATE, "cannot hibernate sandbox %s while it is %s%s", id,
                                       sandbox_state_name(state), hibernated ? " (hibernated already)" : "");
        json_t *params = json_pack("{s:b}", "memory_to_disk", 1);
        return state == SANDBOX_PAUSED
                ? sandbox_lifecycle_submit_held(ctx, id, SANDBOX_ACTION_PAUSE, SANDBOX_PAUSED, params, ret_op, err)
                : sandbox_lifecycle_submit_with(ctx, id, SANDBOX_ACTION_PAUSE, params, ret_op, err);
}
