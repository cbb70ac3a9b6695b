#include "templates/template_build.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "operations/idle_policy.h"
#include "runtime/runtime_registry.h"
#include "spaced/log.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"
#include "storage/btrfs_pool.h"
#include "templates/build_copy.h"
#include "templates/build_env.h"
#include "templates/build_log.h"
#include "templates/build_registry.h"
#include "templates/build_sandbox.h"
#include "templates/rootfs_path.h"
#include "templates/spacefile.h"
#include "templates/template_catalog.h"
#include "templates/template_ref.h"

/* Builds read the layer cache; pruning it waits for none of them to run. */
static pthread_rwlock_t layers_lock = PTHREAD_RWLOCK_INITIALIZER;

int template_build_cancel(struct spaced_context *ctx, const char *op_id, struct space_error *err)
{
        struct operation op;
        int r = STORE(ctx, operation_get, op_id, &op);
        if (r == -ENOENT)
                return space_error_set(err, SPACE_E_NOT_FOUND, "operation %s not found", op_id);
        if (r < 0)
                return space_error_errno(err, r, "read operation %s", op_id);
        if (strcmp(op.kind, "template.build") != 0)
                return space_error_set(err, SPACE_E_INVALID_STATE, "only template builds can be cancelled, not %s", op.kind);
        if (op.state == OPERATION_SUCCEEDED || op.state == OPERATION_FAILED)
                return space_error_set(err, SPACE_E_INVALID_STATE, "operation %s has finished", op_id);
        if (build_registry_cancel(ctx, op_id) < 0)
                return space_error_set(err, SPACE_E_UNAVAILABLE, "too many builds at once");
        log_info("template.build_cancel", "op=%s", op_id);
        return 0;
}

/* ---- keys ---- */

static void key_mix(char key[65], const char *a, const char *b, const char *c)
{
        unsigned char out[EVP_MAX_MD_SIZE];
        unsigned len = 0;
        EVP_MD_CTX *md = EVP_MD_CTX_new();
        EVP_DigestInit_ex(md, EVP_sha256(), NULL);
        const char *parts[] = { key, a, b, c };
        for (size_t i = 0; i < ARRAY_SIZE(parts); i++)
                EVP_DigestUpdate(md, parts[i] ? parts[i] : "", strlen(parts[i] ? parts[i] : "") + 1);
        EVP_DigestFinal_ex(md, out, &len);
        EVP_MD_CTX_free(md);
        for (unsigned i = 0; i < len && i < 32; i++)
                snprintf(key + 2 * i, 3, "%02x", out[i]);
}

/* ---- the build ---- */

struct build;
static int build_op(struct spaced_context *ctx, struct operation *op, const char *parent, struct space_error *err);

struct build {
        struct spaced_context *ctx;
        const char *op_id;
        const char *reg_id; /* the top-level build: its log, its cancellation */
        struct build_log log;
        int ctxfd;
        json_t *env, *labels;
        json_t *idle; /* IDLE's policy (operations/idle_policy.h), or NULL: none */
        char workdir[PATH_MAX];
        char user[64];
        bool sudo; /* SUDO on: the template's users may become root inside (docs/isolation.md) */
        char key[65];
        char layer[PATH_MAX]; /* the current layer (or the FROM template) */
};

static char *config_text(const struct build *b, bool with_labels)
{
        json_t *j = json_pack("{s:O, s:s, s:s}", "env", b->env, "workdir", b->workdir, "user", b->user);
        if (b->sudo) /* only when on: templates without it keep the digests they had */
                json_object_set_new(j, "sudo", json_true());
        if (with_labels)
                json_object_set(j, "labels", b->labels);
        if (with_labels && b->idle)
                json_object_set(j, "idle", b->idle);
        char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
        json_decref(j);
        return s;
}

static int set_workdir(struct build *b, const char *value)
{
        char joined[PATH_MAX * 2], clean[PATH_MAX];
        snprintf(joined, sizeof(joined), "%s/%s", value[0] == '/' ? "" : b->workdir, value);
        if (rootfs_path_clean(joined, true, clean, sizeof(clean)) < 0)
                return -EINVAL;
        snprintf(b->workdir, sizeof(b->workdir), "/%s", strcmp(clean, ".") == 0 ? "" : clean);
        return 0;
}

/* A RUN or COPY: from the cache, or run in a build sandbox and kept as a layer. */
static int filesystem_step(struct build *b, const struct spacefile_step *st, size_t i, size_t n, struct space_error *err)
{
        char copy_hex[65] = "", layer[PATH_MAX], id[32];
        if (st->kind == SPACEFILE_COPY) {
                if (b->ctxfd < 0)
                        return space_error_set(err, SPACE_E_BUILD_FAILED, "COPY needs a build context");
                if (build_copy_digest(b->ctxfd, st, copy_hex, sizeof(copy_hex), err) < 0)
                        return -1;
        }
        _cleanup_free_ char *cfg = config_text(b, false);
        key_mix(b->key, st->text, cfg, copy_hex);
        btrfs_pool_layer_path(&b->ctx->pool, b->key, layer, sizeof(layer));
        if (access(layer, F_OK) == 0) {
                build_log_printf(&b->log, "#%zu CACHED %.12s", i, b->key);
                snprintf(b->layer, sizeof(b->layer), "%s", layer);
                return 0;
        }
        if (build_registry_cancelled(b->reg_id))
                return space_error_set(err, SPACE_E_CANCELLED, "the build was cancelled");
        int64_t t0 = monotonic_now_us();
        struct build_sandbox sb;
        random_id("bld-", 8, id, sizeof(id));
        build_registry_set_sandbox(b->reg_id, id);
        if (build_sandbox_create(b->ctx, id, b->layer, &sb, err) < 0)
                return -1;
        snprintf(sb.cancel_key, sizeof(sb.cancel_key), "%s", b->reg_id);
        int r = 0;
        _cleanup_close_ int rootfd = open(sb.rootfs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (rootfd < 0)
                r = space_error_errno(err, -errno, "open %s", sb.rootfs);
        if (r == 0 && strcmp(b->workdir, "/") != 0) {
                /* A missing WORKDIR is made owned by the USER in effect (root when none). */
                uid_t uid = 0;
                gid_t gid = 0;
                if (b->user[0] && build_copy_owner(rootfd, b->user, &uid, &gid, err) < 0)
                        space_error_set(err, SPACE_E_BUILD_FAILED, "USER %s: not in the image's /etc/passwd", b->user), r = -1;
                int d = r < 0 ? -EINVAL : rootfs_path_mkdirs(rootfd, b->workdir, uid, gid, uid != 0 || gid != 0);
                if (d < 0 && r == 0)
                        r = space_error_set(err, SPACE_E_BUILD_FAILED, "WORKDIR %s: %s", b->workdir, strerror(-d));
                else if (d >= 0)
                        close(d);
        }
        if (r == 0 && st->kind == SPACEFILE_COPY)
                r = build_copy_apply(b->ctxfd, rootfd, st, b->workdir, err);
        if (r == 0 && st->kind == SPACEFILE_RUN) {
                char *shell_argv[] = { "/bin/sh", "-c", st->value, NULL };
                char **envp = build_env_envp(b->env, b->user);
                char user[64];
                snprintf(user, sizeof(user), "%.*s", (int)strcspn(b->user, ":"), b->user); /* the group is not used */
                bool root = !user[0] || strcmp(user, "root") == 0 || strcmp(user, "0") == 0;
                r = envp ? build_sandbox_run(b->ctx, &sb, st->argv ? st->argv : shell_argv, envp, b->workdir, root ? NULL : user,
                                             &b->log, err)
                         : space_error_set(err, SPACE_E_INTERNAL, "out of memory");
                build_env_strv_free(envp);
        }
        build_registry_set_sandbox(b->reg_id, NULL);
        if (build_registry_cancelled(b->reg_id))
                r = space_error_set(err, SPACE_E_CANCELLED, "the build was cancelled");
        if (r == 0)
                r = build_sandbox_commit(&sb, layer, err);
        build_sandbox_destroy(b->ctx, &sb);
        if (r < 0) {
                build_log_printf(&b->log, "#%zu ERROR %s", i, err->message);
                space_error_wrap(err, "step %zu/%zu (line %u) %.120s", i, n, st->line, st->text);
                return -1;
        }
        snprintf(b->layer, sizeof(b->layer), "%s", layer);
        build_log_printf(&b->log, "#%zu DONE %.1fs", i, (double)(monotonic_now_us() - t0) / 1e6);
        return 0;
}

static int apply_metadata(struct build *b, const struct spacefile_step *st, struct space_error *err)
{
        switch (st->kind) {
        case SPACEFILE_ENV:
        case SPACEFILE_LABEL: {
                /* Values see the environment as it was before the line (ENV A=2 B=$A: B gets the old A), as in Docker. */
                json_t *before = json_copy(b->env);
                for (size_t k = 0; before && k + 1 < st->argc; k += 2) {
                        char *v = st->kind == SPACEFILE_ENV ? build_env_expand(before, st->argv[k + 1]) : strdup(st->argv[k + 1]);
                        if (!v)
                                break;
                        json_object_set_new(st->kind == SPACEFILE_ENV ? b->env : b->labels, st->argv[k], json_string(v));
                        free(v);
                }
                json_decref(before);
                break;
        }
        case SPACEFILE_WORKDIR: {
                char *v = build_env_expand(b->env, st->value);
                int r = v ? set_workdir(b, v) : -ENOMEM;
                free(v);
                if (r < 0)
                        return space_error_set(err, SPACE_E_BUILD_FAILED, "WORKDIR %.200s climbs out of /", st->value);
                break;
        }
        case SPACEFILE_USER:
                snprintf(b->user, sizeof(b->user), "%s", st->value);
                break;
        case SPACEFILE_IDLE: {
                enum idle_action a = IDLE_HIBERNATE;
                json_t *p = st->argc == 2 && idle_action_from_name(st->argv[1], &a) == 0 ? idle_policy_new(atoll(st->argv[0]), a)
                                                                                         : NULL;
                if (!p)
                        return space_error_set(err, SPACE_E_INTERNAL, "IDLE: out of memory");
                json_decref(b->idle);
                b->idle = p;
                break;
        }
        case SPACEFILE_SUDO:
                b->sudo = strcasecmp(st->value, "on") == 0;
                break;
        default:
                break;
        }
        key_mix(b->key, st->text, NULL, NULL);
        return 0;
}

/* The FROM template: ready (a built-in or preset is built first), its path, digest, config. */
static int load_base(struct build *b, const char *ref, char *base, size_t base_size, struct space_error *err)
{
        struct template_record t;
        int r = template_ref_resolve(b->ctx, ref, &t);
        if (r == -ENOENT)
                return space_error_set(err, SPACE_E_NOT_FOUND, "FROM %s: no such template", ref);
        if (r < 0)
                return space_error_errno(err, r, "read template %s", ref);
        char name[64];
        snprintf(name, sizeof(name), "%s", t.name);
        if (strcmp(t.state, "ready") != 0) {
                template_record_release(&t);
                if (!template_catalog_is_builtin(name) && !template_build_is_preset(b->ctx, name))
                        return space_error_set(err, SPACE_E_TEMPLATE_NOT_READY, "FROM %s: the template is not ready", ref);
                build_log_printf(&b->log, "#0 building the %s template first", name);
                if (template_build_is_preset(b->ctx, name)) {
                        /* A preset on the way: built here, into this build's log. */
                        struct operation sub = { .state = OPERATION_RUNNING };
                        snprintf(sub.id, sizeof(sub.id), "%.19s-%.11s", b->op_id, name);
                        snprintf(sub.kind, sizeof(sub.kind), "template.build");
                        snprintf(sub.target, sizeof(sub.target), "%s", name);
                        snprintf(sub.params, sizeof(sub.params), "{\"preset\":true}");
                        if (build_op(b->ctx, &sub, b->reg_id, err) < 0)
                                return -1;
                        build_log_printf(&b->log, "#0 %s is ready; back to this build", name);
                } else if (template_catalog_build_now(b->ctx, name, b->reg_id, err) < 0) {
                        return -1;
                }
                if (STORE(b->ctx, template_get, name, &t) < 0)
                        return space_error_set(err, SPACE_E_INTERNAL, "template %s vanished", name);
        }
        const char *digest = json_string_value(json_object_get(t.environment, "digest"));
        json_t *config = json_object_get(t.environment, "config");
        if (json_is_object(json_object_get(config, "env")))
                json_object_update(b->env, json_object_get(config, "env"));
        if (json_is_object(json_object_get(config, "labels")))
                json_object_update(b->labels, json_object_get(config, "labels"));
        if (json_is_string(json_object_get(config, "workdir")))
                snprintf(b->workdir, sizeof(b->workdir), "%s", json_string_value(json_object_get(config, "workdir")));
        if (json_is_string(json_object_get(config, "user")))
                snprintf(b->user, sizeof(b->user), "%s", json_string_value(json_object_get(config, "user")));
        struct space_error ignored = { 0 };
        json_t *idle = NULL;
        if (idle_policy_parse(json_object_get(config, "idle"), "idle", &idle, &ignored) == 0 && idle) {
                json_decref(b->idle);
                b->idle = idle;
        }
        b->sudo = json_is_true(json_object_get(config, "sudo"));
        snprintf(base, base_size, "%s@%s", name, digest ? digest : "unknown");
        key_mix(b->key, "space-layer-v1", base, NULL);
        btrfs_pool_template_path(&b->ctx->pool, name, b->layer, sizeof(b->layer));
        template_record_release(&t);
        return 0;
}

static int publish(struct build *b, const char *row, const char *base, struct space_error *err)
{
        char path[PATH_MAX], digest[80], created[32];
        _cleanup_free_ char *cfg = config_text(b, true);
        char final_key[65];
        memcpy(final_key, b->key, sizeof(final_key));
        key_mix(final_key, "config", cfg, NULL);
        snprintf(digest, sizeof(digest), "sha256:%s", final_key);
        if (btrfs_pool_template_path(&b->ctx->pool, row, path, sizeof(path)) < 0)
                return space_error_set(err, SPACE_E_INTERNAL, "bad template name %s", row);
        int r = btrfs_pool_subvolume_delete(path);
        if (r == 0)
                r = btrfs_pool_snapshot(b->layer, path, true);
        if (r < 0)
                return space_error_errno(err, r, "publish %s", row);
        wallclock_format(wallclock_now_ms(), created, sizeof(created));
        struct template_record t = { 0 };
        snprintf(t.name, sizeof(t.name), "%s", row);
        snprintf(t.state, sizeof(t.state), "ready");
        t.environment = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:{s:O, s:s, s:s, s:O}}", "driver",
                                  runtime_registry_default(&b->ctx->runtimes)->ops->name, "driver_version",
                                  runtime_registry_default(&b->ctx->runtimes)->ops->version, "base", base, "digest", digest,
                                  "created_at", created, "build_operation", b->op_id, "config", "env", b->env, "workdir",
                                  b->workdir, "user", b->user, "labels", b->labels);
        if (t.environment && b->idle) /* the idle policy of its sandboxes (IDLE) */
                json_object_set(json_object_get(t.environment, "config"), "idle", b->idle);
        if (b->sudo)
                json_object_set_new(json_object_get(t.environment, "config"), "sudo", json_true());
        t.updated_at_ms = wallclock_now_ms();
        r = STORE(b->ctx, template_upsert, &t);
        json_decref(t.environment);
        if (r < 0)
                return space_error_errno(err, r, "store template %s", row);
        build_log_printf(&b->log, "BUILD SUCCEEDED %s %s", row, digest);
        log_info("template.built", "template=%s digest=%s op=%s", row, digest, b->op_id);
        return 0;
}

static int read_spacefile(struct build *b, const char *preset_path, const char *name, char **ret, size_t *ret_len,
                          struct space_error *err)
{
        _cleanup_close_ int fd = preset_path ? open(preset_path, O_RDONLY | O_CLOEXEC)
                : b->ctxfd >= 0              ? rootfs_path_open(b->ctxfd, name, O_RDONLY, 0)
                                             : -ENOENT;
        if (fd < 0)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "no Spacefile %s", preset_path ? preset_path : name);
        size_t cap = SPACEFILE_MAX_BYTES + 1, len = 0;
        char *buf = malloc(cap);
        ssize_t n;
        while (buf && len < cap && (n = read(fd, buf + len, cap - len)) > 0)
                len += (size_t)n;
        if (!buf)
                return space_error_set(err, SPACE_E_INTERNAL, "out of memory");
        *ret = buf;
        *ret_len = len;
        return 0;
}

int template_build_dir(const struct spaced_context *ctx, const char *op_id, char *buf, size_t size)
{
        return snprintf(buf, size, "%s/builds/%s", ctx->pool.root, op_id) >= (int)size ? -ENAMETOOLONG : 0;
}

bool template_build_is_preset(const struct spaced_context *ctx, const char *name)
{
        char path[PATH_MAX];
        if (!template_ref_ok(name) || strchr(name, ':'))
                return false;
        snprintf(path, sizeof(path), "%s/%s.Spacefile", ctx->cfg.presets_dir, name);
        return access(path, R_OK) == 0;
}

static int run(struct build *b, const char *row, const json_t *params, struct space_error *err)
{
        const char *spacefile_name = json_string_value(json_object_get(params, "spacefile"));
        bool preset = json_is_true(json_object_get(params, "preset"));
        char preset_path[PATH_MAX], dir[PATH_MAX], base[200];
        snprintf(preset_path, sizeof(preset_path), "%s/%s.Spacefile", b->ctx->cfg.presets_dir, row);
        template_build_dir(b->ctx, b->op_id, dir, sizeof(dir));
        if (!preset) {
                char context[PATH_MAX + 16];
                snprintf(context, sizeof(context), "%s/context", dir);
                b->ctxfd = open(context, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (b->ctxfd < 0)
                        return space_error_set(err, SPACE_E_INTERNAL, "the build context %s is gone", context);
        }
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        if (read_spacefile(b, preset ? preset_path : NULL, spacefile_name ? spacefile_name : "Spacefile", &text, &len, err) < 0)
                return -1;
        struct spacefile f;
        struct spacefile_error perr;
        if (spacefile_parse(text, len, &f, &perr) < 0)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "Spacefile line %u: %s", perr.line, perr.message);
        int64_t t0 = monotonic_now_us();
        size_t n = f.nsteps - 1;
        if (build_registry_cancelled(b->reg_id)) {
                spacefile_release(&f);
                return space_error_set(err, SPACE_E_CANCELLED, "the build was cancelled");
        }
        build_log_printf(&b->log, "#0 [0/%zu] %s", n, f.steps[0].text);
        int r = load_base(b, f.steps[0].value, base, sizeof(base), err);
        for (size_t i = 1; r == 0 && i <= n; i++) {
                const struct spacefile_step *st = &f.steps[i];
                build_log_printf(&b->log, "#%zu [%zu/%zu] %s", i, i, n, st->text);
                r = st->kind == SPACEFILE_RUN || st->kind == SPACEFILE_COPY ? filesystem_step(b, st, i, n, err)
                                                                            : apply_metadata(b, st, err);
        }
        spacefile_release(&f);
        if (r == 0)
                r = publish(b, row, base, err);
        if (r == 0)
                build_log_printf(&b->log, "built in %.1fs", (double)(monotonic_now_us() - t0) / 1e6);
        return r;
}

static void remove_build_dir(struct spaced_context *ctx, const char *op_id)
{
        char dir[PATH_MAX];
        template_build_dir(ctx, op_id, dir, sizeof(dir));
        char *slash = strrchr(dir, '/');
        *slash = '\0';
        _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd >= 0)
                rootfs_path_remove_at(fd, slash + 1);
}

/* parent: the build this one runs inside (a preset its FROM needs), which owns the log and
 * the cancellation; NULL for an operation's own build. */
static int build_op(struct spaced_context *ctx, struct operation *op, const char *parent, struct space_error *err)
{
        struct build b = {
                .ctx = ctx, .op_id = op->id, .reg_id = parent ? parent : op->id, .ctxfd = -1, .workdir = "/", .user = ""
        };
        json_t *params = json_loads(op->params[0] ? op->params : "{}", 0, NULL);
        b.env = json_object();
        b.labels = json_object();
        int r = build_log_open(ctx->cfg.state_dir, b.reg_id, &b.log);
        if (r < 0)
                log_warn("template.build_log", "op=%s error=\"%s\"", op->id, strerror(-r));
        build_registry_set_sandbox(b.reg_id, NULL);
        r = run(&b, op->target, params, err);
        if (r < 0) {
                build_log_printf(&b.log, "BUILD FAILED %s", err->message);
                struct template_record t;
                if (STORE(ctx, template_get, op->target, &t) == 0) {
                        bool published = json_object_get(t.environment, "digest") != NULL;
                        int w = 0;
                        if (template_build_is_preset(ctx, op->target)) {
                                snprintf(t.state, sizeof(t.state), "failed");
                                snprintf(t.state_reason, sizeof(t.state_reason), "%s", err->message);
                                w = STORE(ctx, template_upsert, &t);
                        } else if (!published) {
                                w = STORE(ctx, template_delete, op->target); /* nothing but the log is left */
                        }
                        if (w < 0) /* left building: the reconciler settles it at the next start */
                                log_error("template.build_settle_failed", "template=%s error=\"%s\"", op->target, strerror(-w));
                        template_record_release(&t);
                }
        }
        if (!parent)
                build_registry_leave(op->id);
        if (b.ctxfd >= 0)
                close(b.ctxfd);
        build_log_close(&b.log);
        json_decref(b.env);
        json_decref(b.labels);
        json_decref(b.idle);
        json_decref(params);
        remove_build_dir(ctx, op->id);
        return r;
}

int template_build_op(struct spaced_context *ctx, struct operation *op, struct space_error *err)
{
        pthread_rwlock_rdlock(&layers_lock);
        int r = build_op(ctx, op, NULL, err);
        pthread_rwlock_unlock(&layers_lock);
        return r;
}

int template_build_prune_layers(struct spaced_context *ctx, unsigned *ret_removed, struct space_error *err)
{
        char dir[PATH_MAX];
        if (pthread_rwlock_trywrlock(&layers_lock) != 0)
                return space_error_set(err, SPACE_E_INVALID_STATE, "template builds are running; prune when they are done");
        snprintf(dir, sizeof(dir), "%s/layers", ctx->pool.root);
        DIR *d = opendir(dir);
        struct dirent *de;
        unsigned removed = 0;
        int r = d ? 0 : -errno;
        while (r == 0 && d && (de = readdir(d))) {
                char path[PATH_MAX * 2];
                if (de->d_name[0] == '.')
                        continue;
                snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
                if ((r = btrfs_pool_subvolume_delete(path)) == 0)
                        removed++;
        }
        if (d)
                closedir(d);
        pthread_rwlock_unlock(&layers_lock);
        if (r < 0)
                return space_error_errno(err, r, "prune %s", dir);
        log_info("template.layers_pruned", "removed=%u", removed);
        *ret_removed = removed;
        return 0;
}
