#include "templates/template_catalog.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "operations/operation_queue.h"
#include "runtime/runtime_registry.h"
#include "spaced/log.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"
#include "storage/btrfs_pool.h"
#include "operations/storage_gate.h"
#include "templates/build_log.h"
#include "templates/build_network.h"
#include "templates/build_registry.h"
#include "templates/rootfs_path.h"
#include "templates/template_build.h"
#include "templates/template_ref.h"

#include <dirent.h>
#include <fcntl.h>

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

/* Builds into staging/, then swaps the finished read-only subvolume into templates/. A
 * build for an operation (op_id: its own, or the Spacefile build whose FROM needs this one)
 * writes into that operation's log, where GET /v1/templates/builds/{op}/log serves it, and
 * is cancelled with it; one made at start (op_id NULL) logs to logs/template-NAME.log. */
static int build(struct spaced_context *ctx, const char *name, const char *tag, const char *op_id, struct space_error *err)
{
        char staging[PATH_MAX], final[PATH_MAX], digest[80], created[32], log_path[PATH_MAX], leaf[128];
        snprintf(leaf, sizeof(leaf), "%s-%s", name, tag);
        if (btrfs_pool_staging_path(&ctx->pool, leaf, staging, sizeof(staging)) < 0 ||
            btrfs_pool_template_path(&ctx->pool, name, final, sizeof(final)) < 0)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "bad template name %s", name);
        if (op_id)
                build_log_path(ctx->cfg.state_dir, op_id, log_path, sizeof(log_path));
        else
                snprintf(log_path, sizeof(log_path), "%s/logs/template-%s.log", ctx->cfg.state_dir, name);
        struct build_log log = { 0 };
        int64_t t0 = monotonic_now_us();
        if (op_id && build_log_open(ctx->cfg.state_dir, op_id, &log) == 0) {
                if (strcmp(name, "debian") == 0)
                        build_log_printf(&log, "debian: debootstrap --variant=minbase bookworm from %s", ctx->cfg.debian_mirror);
                else
                        build_log_printf(&log, "%s: spaced's own builder", name);
                fflush(log.f);
        }
        btrfs_pool_subvolume_delete(staging);
        int r = btrfs_pool_subvolume_create(staging);
        if (r < 0)
                return space_error_errno(err, r, "create subvolume %s", staging);
        if (strcmp(name, "busybox") == 0)
                r = busybox_rootfs_build(staging, err);
        else if (strcmp(name, "debian") == 0)
                r = debian_rootfs_build(staging, ctx->cfg.debian_mirror, log_path, op_id, err);
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
        if (log.f) {
                if (r < 0)
                        build_log_printf(&log, "%s: FAILED %s", name, err->message);
                else
                        build_log_printf(&log, "%s built in %.1fs", name, (double)(monotonic_now_us() - t0) / 1e6);
                build_log_close(&log);
        }
        if (r < 0)
                return -1;
        wallclock_format(wallclock_now_ms(), created, sizeof(created));
        json_t *env = json_pack("{s:s, s:s, s:s, s:s, s:s}", "driver", runtime_registry_default(&ctx->runtimes)->ops->name,
                                "driver_version", runtime_registry_default(&ctx->runtimes)->ops->version, "base", base_of(name),
                                "digest", digest, "created_at", created);
        r = set_state(ctx, name, "ready", env, "");
        json_decref(env);
        if (r < 0)
                return space_error_errno(err, r, "store template %s", name);
        log_info("template.built", "template=%s digest=%s", name, digest);
        return 0;
}

int template_catalog_build_now(struct spaced_context *ctx, const char *name, const char *build_key, struct space_error *err)
{
        if (!template_catalog_is_builtin(name))
                return space_error_set(err, SPACE_E_TEMPLATE_NOT_READY,
                                       "template %s is not built; build it first (POST /v1/templates/%s/build)", name, name);
        return build(ctx, name, "now", build_key, err);
}

/* A row (not_built) for every preset Spacefile that has none yet. */
static void register_presets(struct spaced_context *ctx)
{
        DIR *d = opendir(ctx->cfg.presets_dir);
        struct dirent *de;
        while (d && (de = readdir(d))) {
                char name[64];
                size_t n = strlen(de->d_name);
                if (n <= 10 || n - 10 >= sizeof(name) || strcmp(de->d_name + n - 10, ".Spacefile") != 0)
                        continue;
                snprintf(name, sizeof(name), "%.*s", (int)(n - 10), de->d_name);
                struct template_record t;
                if (!template_ref_ok(name) || strchr(name, ':') || template_catalog_is_builtin(name))
                        continue;
                if (STORE(ctx, template_get, name, &t) == 0) {
                        template_record_release(&t);
                        continue;
                }
                json_t *empty = json_object();
                set_state(ctx, name, "not_built", empty, "");
                json_decref(empty);
        }
        if (d)
                closedir(d);
}

/* Build directories of builds that are over (their contexts) go; unfinished ones are redone. */
static void sweep_build_dirs(struct spaced_context *ctx)
{
        char dir[PATH_MAX];
        snprintf(dir, sizeof(dir), "%s/builds", ctx->pool.root);
        mkdir(dir, 0700);
        _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = fd >= 0 ? opendir(dir) : NULL;
        struct dirent *de;
        while (d && (de = readdir(d))) {
                struct operation op;
                if (de->d_name[0] == '.')
                        continue;
                if (STORE(ctx, operation_get, de->d_name, &op) == 0 &&
                    (op.state == OPERATION_PENDING || op.state == OPERATION_RUNNING))
                        continue;
                int r = rootfs_path_remove_at(fd, de->d_name);
                log_info("reconcile.build_dir_removed", "op=%s result=%d", de->d_name, r);
        }
        if (d)
                closedir(d);
}

int template_catalog_init(struct spaced_context *ctx, struct space_error *err)
{
        if (!ctx->cfg.build_network[0])
                snprintf(ctx->cfg.build_network, sizeof(ctx->cfg.build_network), "%s", build_network_default());
        sweep_build_dirs(ctx);
        register_presets(ctx);
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
                if (builtins[i].build_at_start && build(ctx, builtins[i].name, "init", NULL, err) < 0) {
                        space_error_wrap(err, "build template %s", builtins[i].name);
                        return -1;
                }
        }
        return 0;
}

int template_catalog_submit_build(struct spaced_context *ctx, const char *name, struct operation *ret_op, struct space_error *err)
{
        if (storage_gate_check(ctx, STORAGE_GROWS, err) < 0)
                return -1;
        struct template_record t;
        int r = STORE(ctx, template_get, name, &t);
        bool preset = template_build_is_preset(ctx, name);
        if (r == -ENOENT || (r == 0 && !template_catalog_is_builtin(name) && !preset)) {
                if (r == 0)
                        template_record_release(&t);
                return space_error_set(
                        err, SPACE_E_NOT_FOUND,
                        "template %s not found (built-in templates: busybox, debian; presets: python, node, e2b-base;"
                        " build others with POST /v1/templates)",
                        name);
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
        if (preset)
                snprintf(ret_op->params, sizeof(ret_op->params), "{\"preset\":true}");
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
        if (op->params[0])
                return template_build_op(ctx, op, err);
        int r = build(ctx, op->target, op->id, op->id, err);
        build_registry_leave(op->id);
        if (r == 0)
                return 0;
        json_t *empty = json_object();
        set_state(ctx, op->target, "failed", empty, err->message);
        json_decref(empty);
        return -1;
}

/* What still depends on template name: sandboxes made from it that are not destroyed, and
 * templates built FROM it (their base is name@digest). 0 (none), 1 (err says which), -1. */
static int dependents(struct spaced_context *ctx, const char *name, struct space_error *err)
{
        struct sandbox *all = NULL;
        struct template_record *ts = NULL;
        size_t n = 0, nt = 0, nsb = 0, ntpl = 0;
        char first_sb[32] = "", first_tpl[64] = "";
        int r = STORE(ctx, sandbox_list, -1, NULL, NULL, &all, &n);
        if (r < 0)
                return space_error_errno(err, r, "list sandboxes");
        for (size_t i = 0; i < n; i++)
                if (strcmp(all[i].template_name, name) == 0 && nsb++ == 0)
                        snprintf(first_sb, sizeof(first_sb), "%s", all[i].id);
        sandbox_array_free(all, n);
        if ((r = STORE(ctx, template_list, NULL, NULL, &ts, &nt)) < 0)
                return space_error_errno(err, r, "list templates");
        size_t len = strlen(name);
        for (size_t i = 0; i < nt; i++) {
                const char *base = json_string_value(json_object_get(ts[i].environment, "base"));
                if (base && strncmp(base, name, len) == 0 && base[len] == '@' && strcmp(ts[i].name, name) != 0 && ntpl++ == 0)
                        snprintf(first_tpl, sizeof(first_tpl), "%s", ts[i].name);
                template_record_release(&ts[i]);
        }
        free(ts);
        if (!nsb && !ntpl)
                return 0;
        space_error_set(err, SPACE_E_CONFLICT,
                        "template %s is in use: %zu sandbox%s made from it%s%s%s, %zu template%s built from it%s%s%s; they keep "
                        "working without it, but cannot be rebuilt from it: delete it anyway with force=true (space "
                        "template rm --force)",
                        name, nsb, nsb == 1 ? "" : "es", nsb ? " (" : "", first_sb, nsb ? (nsb > 1 ? ", …)" : ")") : "", ntpl,
                        ntpl == 1 ? "" : "s", ntpl ? " (" : "", first_tpl, ntpl ? (ntpl > 1 ? ", …)" : ")") : "");
        return 1;
}

int template_catalog_delete(struct spaced_context *ctx, const char *ref, bool force, struct space_error *err)
{
        struct template_record t;
        char path[PATH_MAX], name[64];
        int r = template_ref_resolve(ctx, ref, &t);
        if (r == -ENOENT)
                return space_error_set(err, SPACE_E_NOT_FOUND, "template %s not found", ref);
        if (r < 0)
                return space_error_errno(err, r, "read template %s", ref);
        snprintf(name, sizeof(name), "%s", t.name);
        bool building = strcmp(t.state, "building") == 0;
        template_record_release(&t);
        if (building)
                return space_error_set(err, SPACE_E_INVALID_STATE, "template %s is being built", name);
        if (!force && dependents(ctx, name, err) != 0)
                return -1;
        /* Sandboxes made from it own independent snapshots, so the subvolume can go now. */
        if (btrfs_pool_template_path(&ctx->pool, name, path, sizeof(path)) == 0 && (r = btrfs_pool_subvolume_delete(path)) < 0)
                return space_error_errno(err, r, "delete %s", path);
        if (template_catalog_is_builtin(name) || template_build_is_preset(ctx, name)) {
                json_t *empty = json_object();
                r = set_state(ctx, name, "not_built", empty, "");
                json_decref(empty);
        } else {
                r = STORE(ctx, template_delete, name);
        }
        return r < 0 ? space_error_errno(err, r, "store template %s", name) : 0;
}
