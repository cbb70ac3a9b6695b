#include "templates/build_sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "operations/sandbox_lifecycle.h"
#include "runtime/cgroup/cgroup_manager.h"
#include "spaced/spaced_context.h"
#include "storage/btrfs_pool.h"
#include "templates/build_job.h"
#include "templates/build_log.h"
#include "templates/build_network.h"

int build_sandbox_create(struct spaced_context *ctx, const char *id, const char *parent_layer, struct build_sandbox *ret,
                         struct space_error *err)
{
        struct build_sandbox b = { 0 };
        snprintf(b.sb.id, sizeof(b.sb.id), "%s", id);
        b.sb.state = SANDBOX_CREATING;
        b.sb.resources = (struct sandbox_resources){ .cpus = 2, .memory_mb = 4096, .pids = 4096 };
        if (btrfs_pool_sandbox_path(&ctx->pool, id, b.rootfs, sizeof(b.rootfs)) < 0)
                return space_error_set(err, SPACE_E_INTERNAL, "bad build sandbox id %s", id);
        /* A step redone after a crash: clear what the first attempt left. */
        struct space_error ignored;
        ctx->driver->stop(&b.sb, &ignored);
        if (ctx->driver->create_rootfs(&b.sb, parent_layer, err) < 0)
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
        if (!b->has_uid) {
                if (sandbox_uid_allocate(ctx, &b->sb.uid_base) < 0)
                        return space_error_set(err, SPACE_E_UNAVAILABLE, "no free uid range for a build sandbox");
                b->has_uid = true;
        }
        int r = build_network_prepare(&net, ctx->cfg.build_network, rootfd, err);
        if (r == 0)
                r = ctx->driver->start(&b->sb, err);
        if (r == 0)
                r = build_network_attach(&net, b->sb.pid, log_path, err);
        struct build_job_result res = { 0 };
        struct cgroup_events before = { 0 }, after = { 0 };
        if (r == 0) {
                char sock[PATH_MAX + 32], msg[256] = "";
                snprintf(sock, sizeof(sock), "%s/run/%s/agent.sock", ctx->cfg.state_dir, b->sb.id);
                ctx->cgroups->read_events(b->sb.id, &before);
                int q = build_job_run(sock, argv, envp, cwd, user, BUILD_STEP_TIMEOUT_S * 1000u, log, &res, msg, sizeof(msg));
                ctx->cgroups->read_events(b->sb.id, &after);
                if (q < 0)
                        r = msg[0] ? space_error_set(err, SPACE_E_BUILD_FAILED, "%s", msg)
                                   : space_error_errno(err, q, "run the step in its build sandbox");
        }
        struct space_error ignored;
        ctx->driver->stop(&b->sb, &ignored);
        build_network_finish(&net, rootfd);
        if (r < 0)
                return -1;
        bool oom = after.oom_kills > before.oom_kills;
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
        ctx->driver->stop(&b->sb, &ignored);
        if (b->has_rootfs)
                ctx->driver->destroy_rootfs(&b->sb, &ignored);
        if (b->has_uid)
                sandbox_uid_release(b->sb.uid_base);
        b->has_rootfs = b->has_uid = false;
}

void build_sandbox_kill(struct spaced_context *ctx, const char *id)
{
        ctx->cgroups->kill_all(id);
}
