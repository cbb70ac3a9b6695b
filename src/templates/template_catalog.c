#include "templates/template_catalog.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "operations/operation_queue.h"
#include "runtime/runtime_driver.h"
#include "spaced/log.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"
#include "storage/btrfs_pool.h"

static const struct {
        const char *name;
        const char *base;
        bool build_at_start;
} builtins[] = {
        { "busybox", "debian:bookworm/busybox-static", true },
        { "debian", "debian:bookworm/minbase", false },
};

bool template_catalog_is_builtin(const char *name)
{
        for (size_t i = 0; i < sizeof(builtins) / sizeof(builtins[0]); i++)
                if (strcmp(builtins[i].name, name) == 0)
                        return true;
        return false;
}

static const char *base_of(const char *name)
{
        for (size_t i = 0; i < sizeof(builtins) / sizeof(builtins[0]); i++)
                if (strcmp(builtins[i].name, name) == 0)
                        return builtins[i].base;
        return "";
}

static int set_state(struct spaced_context *ctx, const char *name, const char *state, json_t *environment, const char *reason)
{
        struct template_record t = { 0 };
        snprintf(t.name, sizeof(t.name), "%s", name);
        snprintf(t.state, sizeof(t.state), "%s", state);
        snprintf(t.state_reason, sizeof(t.state_reason), "%s", reason ? reason : "");
        t.environment = environment;
        t.updated_at_ms = wallclock_now_ms();
        return STORE(ctx, template_upsert, &t);
}

/* Builds into staging/, then swaps the finished read-only subvolume into templates/. */
static int build(struct spaced_context *ctx, const char *name, const char *tag, struct space_error *err)
{
        char staging[PATH_MAX], final[PATH_MAX], digest[80], created[32], log_path[PATH_MAX], leaf[128];
        snprintf(leaf, sizeof(leaf), "%s-%s", name, tag);
        if (btrfs_pool_staging_path(&ctx->pool, leaf, staging, sizeof(staging)) < 0 ||
            btrfs_pool_template_path(&ctx->pool, name, final, sizeof(final)) < 0)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "bad template name %s", name);
        snprintf(log_path, sizeof(log_path), "%s/logs/template-%s.log", ctx->cfg.state_dir, name);
        btrfs_pool_subvolume_delete(staging);
        int r = btrfs_pool_subvolume_create(staging);
        if (r < 0)
                return space_error_errno(err, r, "create subvolume %s", staging);
        if (strcmp(name, "busybox") == 0)
                r = busybox_rootfs_build(staging, err);
        else if (strcmp(name, "debian") == 0)
                r = debian_rootfs_build(staging, ctx->cfg.debian_mirror, log_path, err);
        else
                r = space_error_set(err, SPACE_E_INVALID_REQUEST, "template %s has no builder", name);
        if (r == 0 && (r = template_digest(staging, digest, sizeof(digest))) < 0)
                space_error_errno(err, r, "digest %s", staging);
        if (r == 0 && (r = btrfs_pool_subvolume_delete(final)) < 0)
                space_error_errno(err, r, "remove old %s", final);
        /* A read-only snapshot publishes it (a read-only subvolume cannot be renamed). */
        if (r == 0 && (r = btrfs_pool_snapshot(staging, final, true)) < 0)
                space_error_errno(err, r, "publish %s", final);
        btrfs_pool_subvolume_delete(staging);
        if (r < 0)
                return -1;
        wallclock_format(wallclock_now_ms(), created, sizeof(created));
        json_t *env = json_pack("{s:s, s:s, s:s, s:s, s:s}", "driver", ctx->driver->name, "driver_version",
                                ctx->driver->version, "base", base_of(name), "digest", digest, "created_at", created);
        r = set_state(ctx, name, "ready", env, "");
        json_decref(env);
        if (r < 0)
                return space_error_errno(err, r, "store template %s", name);
        log_info("template.built", "template=%s digest=%s", name, digest);
        return 0;
}

int template_catalog_init(struct spaced_context *ctx, struct space_error *err)
{
        for (size_t i = 0; i < sizeof(builtins) / sizeof(builtins[0]); i++) {
                struct template_record t;
                char path[PATH_MAX];
                int r = STORE(ctx, template_get, builtins[i].name, &t);
                if (r == 0) {
                        bool ready = strcmp(t.state, "ready") == 0;
                        template_record_release(&t);
                        btrfs_pool_template_path(&ctx->pool, builtins[i].name, path, sizeof(path));
                        if (ready && access(path, F_OK) == 0)
                                continue;
                } else if (r != -ENOENT) {
                        return space_error_errno(err, r, "read template %s", builtins[i].name);
                }
                json_t *empty = json_object();
                set_state(ctx, builtins[i].name, "not_built", empty, "");
                json_decref(empty);
                if (builtins[i].build_at_start && build(ctx, builtins[i].name, "init", err) < 0) {
                        space_error_wrap(err, "build template %s", builtins[i].name);
                        return -1;
                }
        }
        return 0;
}

int template_catalog_submit_build(struct spaced_context *ctx, const char *name, struct operation *ret_op, struct space_error *err)
{
        struct template_record t;
        int r = STORE(ctx, template_get, name, &t);
        if (r == -ENOENT || (r == 0 && !template_catalog_is_builtin(name))) {
                if (r == 0)
                        template_record_release(&t);
                return space_error_set(err, SPACE_E_NOT_FOUND, "template %s not found (built-in templates: busybox, debian)", name);
        }
        if (r < 0)
                return space_error_errno(err, r, "read template %s", name);
        bool building = strcmp(t.state, "building") == 0;
        json_t *env = json_incref(t.environment);
        template_record_release(&t);
        if (building) {
                json_decref(env);
                return space_error_set(err, SPACE_E_INVALID_STATE, "template %s is already being built", name);
        }
        operation_init(ret_op, "template.build", name);
        r = set_state(ctx, name, "building", env, "");
        json_decref(env);
        if (r == 0)
                r = STORE(ctx, operation_insert, ret_op);
        if (r < 0)
                return space_error_errno(err, r, "store build of %s", name);
        operation_queue_submit(ctx->queue, ret_op->id);
        return 0;
}

int template_op_build(struct spaced_context *ctx, struct operation *op, struct space_error *err)
{
        if (build(ctx, op->target, op->id, err) == 0)
                return 0;
        json_t *empty = json_object();
        set_state(ctx, op->target, "failed", empty, err->message);
        json_decref(empty);
        return -1;
}

int template_catalog_delete(struct spaced_context *ctx, const char *name, struct space_error *err)
{
        struct template_record t;
        char path[PATH_MAX];
        int r = STORE(ctx, template_get, name, &t);
        if (r == -ENOENT)
                return space_error_set(err, SPACE_E_NOT_FOUND, "template %s not found", name);
        if (r < 0)
                return space_error_errno(err, r, "read template %s", name);
        bool building = strcmp(t.state, "building") == 0;
        template_record_release(&t);
        if (building)
                return space_error_set(err, SPACE_E_INVALID_STATE, "template %s is being built", name);
        /* Sandboxes made from it own independent snapshots, so the subvolume can go now. */
        if (btrfs_pool_template_path(&ctx->pool, name, path, sizeof(path)) == 0 && (r = btrfs_pool_subvolume_delete(path)) < 0)
                return space_error_errno(err, r, "delete %s", path);
        if (template_catalog_is_builtin(name)) {
                json_t *empty = json_object();
                r = set_state(ctx, name, "not_built", empty, "");
                json_decref(empty);
        } else {
                r = STORE(ctx, template_delete, name);
        }
        return r < 0 ? space_error_errno(err, r, "store template %s", name) : 0;
}
