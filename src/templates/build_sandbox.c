#include "templates/build_sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "operations/sandbox_lifecycle.h"
#include "runtime/runtime_registry.h"
#include "spaced/spaced_context.h"
#include "storage/btrfs_pool.h"
#include "templates/build_job.h"
#include "templates/build_log.h"
#include "templates/build_network.h"
#include "templates/build_registry.h"

int build_sandbox_create(struct spaced_context *ctx, const char *id, const char *parent_layer, struct build_sandbox *ret,
                         struct space_error *err)
{
        struct build_sandbox b = { 0 };
        const struct runtime_driver *d = runtime_registry_default(&ctx->runtimes);
        snprintf(b.sb.id, sizeof(b.sb.id), "%s", id);
        snprintf(b.sb.runtime, sizeof(b.sb.runtime), "%s", d->ops->name); /* templates are built with the default driver */
        b.sb.state = SANDBOX_CREATING;
        b.sb.resources = (struct sandbox_resources){ .cpus = 2, .memory_mb = 4096, .pids = 4096 };
        if (btrfs_pool_sandbox_path(&ctx->pool, id, b.rootfs, sizeof(b.rootfs)) < 0)
                return space_error_set(err, SPACE_E_INTERNAL, "bad build sandbox id %s", id);
        /* A step redone after a crash: clear what the first attempt left. */
        struct space_error ignored;
        d->ops->stop(d, &b.sb, &ignored);
        if (d->ops->create_rootfs(d, &b.sb, parent_layer, err) < 0)
                return -1;
        b.has_rootfs = true;
        *ret = b;
        return 0;
}

int build_sandbox_run(struct spaced_context *ctx, struct build_sandbox *b, char **argv, char **envp, const char *cwd,
                      const char *user, struct build_log *log, struct space_error *err)
{
        struct build_network net;
        char log_path[PATH_MAX];
        _cleanup_close_ int rootfd = open(b->rootfs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (rootfd < 0)
                return space_error_errno(err, -errno, "open %s", b->rootfs);
        snprintf(log_path, sizeof(log_path), "%s/logs/build-network.log", ctx->cfg.state_dir);
        const struct runtime_driver *d = runtime_registry_for(&ctx->runtimes, &b->sb, err);
        if (!d)
                return -1;
        int r = build_network_prepare(&net, ctx->cfg.build_network, rootfd, err);
        if (r == 0)
                r = d->ops->start(d, &b->sb, err);
        int pid = r == 0 ? d->ops->host_pid(d, &b->sb) : -1;
        if (r == 0 && pid < 0)
                r = space_error_errno(err, pid, "find the build sandbox's init");
        if (r == 0)
                r = build_network_attach(&net, pid, log_path, err);
        /* A cancel from here on kills the running sandbox; one from before is seen here. */
        if (r == 0 && b->cancel_key[0] && build_registry_cancelled(b->cancel_key))
                r = space_error_set(err, SPACE_E_CANCELLED, "the build was cancelled");
        struct build_job_result res = { 0 };
        struct runtime_stats before, after;
        struct exec_result limits = { 0 };
        if (r == 0) {
                char msg[256] = "";
                int before_r = d->ops->stats(d, &b->sb, &before);
                int q = build_job_run(d, &b->sb, argv, envp, cwd, user, BUILD_STEP_TIMEOUT_S * 1000u, log, &res, msg,
                                      sizeof(msg));
                int after_r = d->ops->stats(d, &b->sb, &after);
                exec_result_set_limits(&limits, before_r, &before, after_r, &after);
                if (q < 0)
                        r = msg[0] ? space_error_set(err, SPACE_E_BUILD_FAILED, "%s", msg)
                                   : space_error_errno(err, q, "run the step in its build sandbox");
        }
        struct space_error ignored;
        d->ops->stop(d, &b->sb, &ignored);
        build_network_finish(&net, rootfd);
        if (r < 0)
                return -1;
        bool oom = limits.oom_killed;
        if (res.timed_out)
                r = space_error_set(err, SPACE_E_BUILD_FAILED, "timed out after %d s", BUILD_STEP_TIMEOUT_S);
        else if (res.exit_code != 0)
                r = space_error_set(err, SPACE_E_BUILD_FAILED, "exited with status %d%s", res.exit_code,
                                    oom ? " (out of memory)" : "");
        return r;
}

int build_sandbox_commit(struct build_sandbox *b, const char *layer_path, struct space_error *err)
{
        int r = btrfs_pool_snapshot(b->rootfs, layer_path, true);
        if (r == -EEXIST)
                return 0; /* another build made the same layer: it is the same */
        return r < 0 ? space_error_errno(err, r, "make layer %s", layer_path) : 0;
}

void build_sandbox_destroy(struct spaced_context *ctx, struct build_sandbox *b)
{
        struct space_error ignored;
        const struct runtime_driver *d = runtime_registry_for(&ctx->runtimes, &b->sb, &ignored);
        if (!d)
                return;
        d->ops->stop(d, &b->sb, &ignored);
        if (b->has_rootfs)
                d->ops->destroy_rootfs(d, &b->sb, &ignored);
        b->has_rootfs = false;
}

void build_sandbox_kill(struct spaced_context *ctx, const char *id)
{
        struct sandbox sb = { 0 };
        const struct runtime_driver *d = runtime_registry_default(&ctx->runtimes);
        snprintf(sb.id, sizeof(sb.id), "%s", id);
        snprintf(sb.runtime, sizeof(sb.runtime), "%s", d->ops->name);
        d->ops->kill(d, &sb);
}
