/* The gvisor runtime driver: a sandbox is a gVisor sandbox (runsc, systrap platform) whose
 * root is the sandbox's btrfs subvolume, written through directly, with space-agent as
 * PID 1 serving the agent protocol on a unix socket that runsc creates on the host. The
 * rootfs, agent and cgroup ops are the namespaces runtime's (sandbox_host.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent_protocol/agent_client.h"
#include "runtime/cgroup/cgroup_manager.h"
#include "runtime/gvisor/gv_driver.h"
#include "runtime/namespaces/ns_network.h"
#include "spaced/host_command.h"
#include "storage/btrfs_pool.h"

#define SOCKET_DIR "agent"

static void gv_free(struct runtime_driver *d)
{
        struct gv_driver *gv = d ? d->state : NULL;
        if (!gv)
                return;
        free(gv->host.cgroups);
        ns_network_free(gv->network);
        free(gv);
        d->state = NULL;
}

/* "runsc version 0.0~20240729.0" → "0.0~20240729.0"; -ENOENT when runsc is missing,
 * -ENOTSUP when it has no systrap platform (bookworm's own build). */
static int detect_runsc(const struct gv_driver *gv, char *version, size_t size)
{
        char out[512];
        const char *args[] = { "--version", NULL };
        int r = gv_runsc_capture(gv, args, out, sizeof(out));
        if (r < 0 || r == 127)
                return -ENOENT;
        const char *v = strstr(out, "runsc version ");
        if (r != 0 || !v)
                return -ENOEXEC;
        v += strlen("runsc version ");
        size_t n = strcspn(v, " \n");
        snprintf(version, size, "%.*s", (int)(n < size ? n : size - 1), v);
        /* systrap came in 2023; Debian's versions are 0.0~YYYYMMDD */
        const char *date = strchr(version, '~');
        return date && strncmp(date + 1, "2023", 4) >= 0 ? 0 : -ENOTSUP;
}

static int gv_init(struct runtime_driver *d, const struct runtime_config *cfg, struct space_error *err)
{
        char reason[1024] = "";
        struct gv_driver *gv = calloc(1, sizeof(*gv));
        if (!gv)
                return space_error_errno(err, ENOMEM, "gvisor driver");
        d->state = gv;
        d->caps = (struct runtime_capabilities){ .pause = true, .fd_passing = false };
        gv->host.config = *cfg;
        gv->host.socket_leaf = SOCKET_DIR "/agent.sock";
        snprintf(gv->runsc_root, sizeof(gv->runsc_root), "%s/runsc", cfg->state_dir);
        int r = detect_runsc(gv, d->caps.version, sizeof(d->caps.version));
        if (r < 0) {
                space_error_set(err, SPACE_E_UNSUPPORTED,
                                r == -ENOENT ? "runsc is not installed (Debian package runsc, from bookworm-backports)"
                                             : "runsc %s has no systrap platform (install runsc from bookworm-backports)",
                                d->caps.version);
                goto fail;
        }
        d->caps.memory_snapshot = true;
        snprintf(d->caps.memory_snapshot_detail, sizeof(d->caps.memory_snapshot_detail),
                 "runsc %s checkpoint and restore (docs/memory-state.md)", d->caps.version);
        if ((r = cgroup_manager_detect(cfg->instance, &gv->host.cgroups, reason, sizeof(reason))) < 0) {
                space_error_set(err, SPACE_E_INTERNAL, "%s", reason);
                goto fail;
        }
        snprintf(d->caps.cgroup, sizeof(d->caps.cgroup), "%s", gv->host.cgroups->ops->name);
        if ((mkdir(cfg->run_dir, 0700) < 0 && errno != EEXIST) || (mkdir(gv->runsc_root, 0700) < 0 && errno != EEXIST)) {
                space_error_errno(err, errno, "mkdir %s", gv->runsc_root);
                goto fail;
        }
        /* The same links, table and address blocks as the namespaces runtime's. */
        if (cfg->egress_tcp_port && ns_network_open(cfg, &gv->network, err) < 0)
                goto fail;
        return 0;
fail:
        gv_free(d);
        return -1;
}

static void remove_run_dir(const struct gv_driver *gv, const char *id)
{
        static const char *const leaves[] = {
                SOCKET_DIR "/agent.sock", "bundle/config.json", "bundle/config.json.tmp", "runsc.log", SOCKET_DIR, "bundle", NULL
        };
        char path[PATH_MAX];
        for (size_t i = 0; leaves[i]; i++) {
                sandbox_host_run_path(&gv->host, id, leaves[i], path, sizeof(path));
                if (unlink(path) < 0 && (errno == EISDIR || errno == EPERM))
                        rmdir(path);
        }
}

static int gv_stop(const struct runtime_driver *d, const struct sandbox *sb, struct space_error *err)
{
        const struct gv_driver *gv = gv_driver_of(d);
        const struct cgroup_manager *cg = gv->host.cgroups;
        char path[PATH_MAX];
        /* runsc's own record (and its gofer) goes with delete --force; the cgroup's kill
         * catches a sandbox process runsc no longer knows of. */
        const char *kill_args[] = { "delete", "--force", sb->id, NULL };
        gv_runsc(gv, NULL, kill_args);
        int r = cg->ops->kill_all(cg, sb->id);
        if (r < 0)
                return space_error_errno(err, r, "kill processes of %s", sb->id);
        if ((r = cg->ops->destroy(cg, sb->id)) < 0)
                return space_error_errno(err, r, "remove cgroup of %s", sb->id);
        /* No process of the sandbox is left: its link and address block may go to another. */
        sandbox_host_run_path(&gv->host, sb->id, NULL, path, sizeof(path));
        if (gv->network && (r = ns_network_detach(gv->network, sb->id, path)) < 0)
                return space_error_errno(err, r, "remove the network link of %s", sb->id);
        sandbox_host_run_path(&gv->host, sb->id, GV_NETNS_LEAF, path, sizeof(path));
        ns_network_netns_remove(path);
        remove_run_dir(gv, sb->id);
        sandbox_host_run_path(&gv->host, sb->id, NULL, path, sizeof(path));
        if (rmdir(path) < 0 && errno != ENOENT)
                return space_error_errno(err, errno, "remove %s", path);
        return 0;
}

/* The last line runsc wrote to the sandbox's log, for an error message. */
static void log_tail(const char *log_path, char *buf, size_t size)
{
        buf[0] = '\0';
        int fd = open(log_path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return;
        off_t end = lseek(fd, 0, SEEK_END);
        off_t from = end > (off_t)size - 1 ? end - (off_t)size + 1 : 0;
        ssize_t n = pread(fd, buf, size - 1, from);
        close(fd);
        buf[n > 0 ? n : 0] = '\0';
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
                buf[--n] = '\0';
        char *nl = strrchr(buf, '\n');
        if (nl)
                memmove(buf, nl + 1, strlen(nl + 1) + 1);
}

int gv_runsc_failed(const char *what, int r, const char *log_path, const char *id, struct space_error *err)
{
        char tail[200];
        log_tail(log_path, tail, sizeof(tail));
        return space_error_set(err, SPACE_E_INTERNAL, "runsc %s of %s failed (%d): %s", what, id, r,
                               tail[0] ? tail : "no output");
}

int gv_agent_wait(const struct gv_driver *gv, const struct sandbox *sb, const struct init_handle *h, struct space_error *err)
{
        char sock[PATH_MAX];
        sandbox_host_socket_path(&gv->host, sb->id, sock, sizeof(sock));
        /* runsc start (or the agent's unpark) returns before the agent has bound its socket */
        for (int waited_ms = 0; access(sock, F_OK) < 0 && waited_ms < 10000 && init_handle_alive(h); waited_ms += 10)
                usleep(10000);
        /* ... and may not be listening yet when its socket appears */
        int r = agent_client_hello(sock, 10000, NULL);
        for (int tries = 0; (r == -ECONNREFUSED || r == -ENOENT) && tries < 500 && init_handle_alive(h); tries++) {
                usleep(10000);
                r = agent_client_hello(sock, 10000, NULL);
        }
        return r < 0 ? space_error_errno(err, -r, "space-agent did not answer") : 0;
}

/* Starts the sandbox afresh (image_dir NULL: runsc create, into the cgroup, start) or from a
 * checkpoint image (runsc restore, then into the cgroup: restore has no created stage). */
static int gv_launch(const struct runtime_driver *d, struct sandbox *sb, const char *image_dir, struct space_error *err)
{
        const struct gv_driver *gv = gv_driver_of(d);
        char rootfs[PATH_MAX], dir[PATH_MAX], bundle[PATH_MAX], sockdir[PATH_MAX], log[PATH_MAX], netns[PATH_MAX], addr[16];
        struct init_handle h = { 0 };
        struct space_error ignored;
        if (gv_stop(d, sb, err) < 0) /* whatever an interrupted earlier attempt left */
                return -1;
        int r = btrfs_pool_sandbox_path(gv->host.config.pool, sb->id, rootfs, sizeof(rootfs));
        if (r < 0)
                return space_error_errno(err, r, "sandbox path");
        sandbox_host_run_path(&gv->host, sb->id, NULL, dir, sizeof(dir));
        sandbox_host_run_path(&gv->host, sb->id, "bundle", bundle, sizeof(bundle));
        sandbox_host_run_path(&gv->host, sb->id, SOCKET_DIR, sockdir, sizeof(sockdir));
        sandbox_host_run_path(&gv->host, sb->id, "runsc.log", log, sizeof(log));
        if ((mkdir(dir, 0700) < 0 && errno != EEXIST) || (mkdir(bundle, 0700) < 0 && errno != EEXIST) ||
            (mkdir(sockdir, 0700) < 0 && errno != EEXIST))
                return space_error_errno(err, errno, "mkdir %s", dir);
        /* A link is made before runsc runs: its netstack takes over what the namespace holds
         * when the sandbox boots or is restored. A restored sandbox gets a new link (its
         * sockets open at the checkpoint are reset: their peers were another address). */
        sandbox_host_run_path(&gv->host, sb->id, GV_NETNS_LEAF, netns, sizeof(netns));
        if (gv_has_link(gv, sb)) {
                if ((r = ns_network_netns_make(netns)) < 0) {
                        space_error_errno(err, -r, "make the network namespace of %s", sb->id);
                        goto fail;
                }
                if (ns_network_attach(gv->network, sb->id, netns, dir, rootfs, addr, sizeof(addr), err) < 0)
                        goto fail;
        }
        if (gv_bundle_write(gv, sb, bundle, rootfs, sockdir, gv_has_link(gv, sb) ? netns : NULL, err) < 0)
                goto fail;
        if ((r = gv->host.cgroups->ops->create(gv->host.cgroups, sb->id, &sb->resources)) < 0) {
                space_error_errno(err, r, "create cgroup");
                goto fail;
        }
        /* create, then into the cgroup, then start: nothing of the sandbox runs outside it */
        const char *create_args[] = { "create", "--bundle", bundle, sb->id, NULL };
        const char *restore_args[] = { "restore", "--image-path", image_dir, "--bundle", bundle, "--detach", sb->id, NULL };
        if ((r = gv_runsc_for(gv, sb, log, image_dir ? restore_args : create_args)) != 0) {
                gv_runsc_failed(image_dir ? "restore" : "create", r, log, sb->id, err);
                goto fail;
        }
        pid_t pid = gv_runsc_sandbox_pid(gv, sb->id);
        if (pid < 0) {
                space_error_errno(err, -pid, "runsc state of %s", sb->id);
                goto fail;
        }
        h.pid = pid;
        h.pid_start = init_handle_start_time(pid);
        /* Recorded first, so that a later stop finds the sandbox. */
        if ((r = init_handle_write(&h, sb->runtime_state, sizeof(sb->runtime_state))) < 0) {
                space_error_errno(err, r, "record the handle of %s", sb->id);
                goto fail;
        }
        if ((r = gv->host.cgroups->ops->attach(gv->host.cgroups, sb->id, pid)) < 0) {
                space_error_errno(err, r, "join cgroup");
                goto fail;
        }
        const char *start_args[] = { "start", sb->id, NULL };
        if (!image_dir && (r = gv_runsc_for(gv, sb, log, start_args)) != 0) {
                gv_runsc_failed("start", r, log, sb->id, err);
                goto fail;
        }
        /* A restored agent was checkpointed parked: it listens again when told. */
        if ((image_dir && gv_agent_unpark(gv, sb, err) < 0) || gv_agent_wait(gv, sb, &h, err) < 0)
                goto fail;
        return 0;
fail:
        gv_stop(d, sb, &ignored);
        return -1;
}

static int gv_start(const struct runtime_driver *d, struct sandbox *sb, struct space_error *err)
{
        return gv_launch(d, sb, NULL, err);
}

static int gv_start_from_image(const struct runtime_driver *d, struct sandbox *sb, const char *image_dir, struct space_error *err)
{
        return gv_launch(d, sb, image_dir, err);
}

/* A paused sandbox's agent is parked (it holds no host socket): pause is when a sandbox's
 * memory can be saved (gv_checkpoint.c), and runsc cannot signal a paused sandbox. */
static int gv_pause(const struct runtime_driver *d, const struct sandbox *sb, struct space_error *err)
{
        const struct gv_driver *gv = gv_driver_of(d);
        struct space_error ignored;
        const char *args[] = { "pause", sb->id, NULL };
        if (gv_agent_park(gv, sb, err) < 0)
                return -1;
        int r = gv_runsc(gv, NULL, args);
        if (r != 0) {
                gv_agent_unpark(gv, sb, &ignored);
                return space_error_set(err, SPACE_E_INTERNAL, "runsc pause of %s failed (%d)", sb->id, r);
        }
        return 0;
}

static int gv_resume(const struct runtime_driver *d, const struct sandbox *sb, struct space_error *err)
{
        const struct gv_driver *gv = gv_driver_of(d);
        const char *args[] = { "resume", sb->id, NULL };
        struct init_handle h;
        char status[32] = "";
        int r = gv_runsc(gv, NULL, args);
        /* Redone after a crash, it may find the sandbox running already (a resume, or the
         * launch of a wake, that finished before its record): what is left is the unpark. */
        if (r != 0 && (gv_runsc_state(gv, sb->id, NULL, status, sizeof(status)) < 0 || strcmp(status, "running") != 0))
                return space_error_set(err, SPACE_E_INTERNAL, "runsc resume of %s failed (%d)", sb->id, r);
        init_handle_read(sb->runtime_state, &h);
        return gv_agent_unpark(gv, sb, err) < 0 || gv_agent_wait(gv, sb, &h, err) < 0 ? -1 : 0;
}

/* The link was made at launch (before runsc took it over): only its address is told. */
static int gv_network_attach(const struct runtime_driver *d, const struct sandbox *sb, char *ret_addr, size_t size,
                             struct space_error *err)
{
        const struct gv_driver *gv = gv_driver_of(d);
        char dir[PATH_MAX];
        if (!gv->network)
                return space_error_set(err, SPACE_E_UNSUPPORTED, "this server has no egress gateway");
        sandbox_host_run_path(&gv->host, sb->id, NULL, dir, sizeof(dir));
        int r = ns_network_address(gv->network, dir, ret_addr, size);
        return r < 0 ? space_error_errno(err, -r, "the egress link of %s (not running?)", sb->id) : 0;
}

/* A hibernated sandbox has no process, and is alive all the same (its memory is on disk). */
static int gv_probe(const struct runtime_driver *d, const struct sandbox *sb, bool deep)
{
        if (strcmp(sb->runtime_state, RUNTIME_STATE_HIBERNATED) == 0)
                return 1;
        return sandbox_host_probe(d, sb, deep);
}

const struct runtime_driver_ops runtime_driver_gvisor = {
        .name = "gvisor",
        .version = "1",
        .init = gv_init,
        .free = gv_free,
        .create_rootfs = sandbox_host_rootfs_create,
        .destroy_rootfs = sandbox_host_rootfs_destroy,
        .snapshot_rootfs = sandbox_host_rootfs_snapshot,
        .restore_rootfs = sandbox_host_rootfs_restore,
        .start = gv_start,
        .stop = gv_stop,
        .pause = gv_pause,
        .resume = gv_resume,
        .exec = sandbox_host_exec,
        .probe = gv_probe,
        .agent_connect = sandbox_host_agent_connect,
        .stats = sandbox_host_stats,
        .path_exists = sandbox_host_rootfs_path_exists,
        .disk_limit = sandbox_host_rootfs_disk_limit,
        .changed_since = sandbox_host_rootfs_changed_since,
        .kill = sandbox_host_kill,
        .host_pid = sandbox_host_host_pid,
        .network_attach = gv_network_attach,
        .port_connect = sandbox_host_port_connect, /* its network stack is its own: through the agent */
        .checkpoint = gv_checkpoint,
        .start_from_image = gv_start_from_image,
        .list_resources = sandbox_host_rootfs_list_resources,
};
