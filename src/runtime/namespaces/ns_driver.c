/* The namespaces runtime driver: a sandbox is a tree of processes in its own user, pid,
 * mount, network, ipc, uts and cgroup namespaces, on a writable btrfs snapshot of its
 * template, with space-agent as PID 1. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent_protocol/agent_client.h"
#include "cleanup.h"
#include "runtime/cgroup/cgroup_manager.h"
#include "runtime/namespaces/ns_agent_image.h"
#include "runtime/namespaces/ns_launch.h"
#include "runtime/namespaces/ns_proc_view.h"
#include "spaced/log.h"
#include "runtime/namespaces/seccomp_policy.h"
#include "runtime/runtime_driver.h"
#include "spaced/host_command.h"
#include "spaced/wallclock.h"
#include "storage/btrfs_pool.h"

static struct runtime_config config;
static struct runtime_capabilities caps = { .memory_snapshot = false, .pause = true };

/* Memory snapshots of namespace sandboxes would need CRIU >= 4.1 (older ones fail on current
 * kernels). Say precisely what this host has; the capability itself stays off until the
 * CRIU path exists. */
static void detect_criu(void)
{
        char out[512];
        char *argv[] = { "criu", "--version", NULL };
        int r = host_command_run(argv, NULL, out, sizeof(out), 10);
        const char *v = r == 0 ? strstr(out, "Version: ") : NULL;
        int major = 0, minor = 0;
        if (r < 0 || r == 127)
                snprintf(caps.memory_snapshot_detail, sizeof(caps.memory_snapshot_detail), "criu is not installed");
        else if (!v || sscanf(v, "Version: %d.%d", &major, &minor) < 1)
                snprintf(caps.memory_snapshot_detail, sizeof(caps.memory_snapshot_detail), "criu did not report a version");
        else if (major < 4 || (major == 4 && minor < 1))
                snprintf(caps.memory_snapshot_detail, sizeof(caps.memory_snapshot_detail),
                         "criu %d.%d is too old for this kernel (needs >= 4.1)", major, minor);
        else
                snprintf(caps.memory_snapshot_detail, sizeof(caps.memory_snapshot_detail),
                         "criu %d.%d found, but memory snapshots of namespace sandboxes are not implemented yet", major, minor);
}
static struct sock_fprog seccomp_program;
static int agent_fd = -1;
static int reaper_epoll = -1;

/* Sandbox inits launched by this spaced are its children: each is watched through a pidfd
 * and reaped the moment it exits, without a waitpid(-1) that could steal the exit status of
 * a helper program. Inits launched by an earlier spaced belong to the host's init. */
static void *reaper_main(void *arg)
{
        struct epoll_event events[16];
        for (;;) {
                int n = epoll_wait(reaper_epoll, events, 16, -1);
                for (int i = 0; i < n; i++) {
                        int pidfd = events[i].data.fd;
                        siginfo_t info;
                        memset(&info, 0, sizeof(info));
                        if (waitid(P_PIDFD, (id_t)pidfd, &info, WEXITED | WNOHANG) == 0 && info.si_pid == 0)
                                continue; /* spurious */
                        /* Out of the interest list before the number can be reused: a copy of
                         * the pidfd in a child being cloned would otherwise keep reporting it. */
                        epoll_ctl(reaper_epoll, EPOLL_CTL_DEL, pidfd, NULL);
                        close(pidfd);
                }
        }
        return NULL;
}

static void reaper_watch(int pidfd)
{
        struct epoll_event ev = { .events = EPOLLIN, .data.fd = pidfd };
        if (epoll_ctl(reaper_epoll, EPOLL_CTL_ADD, pidfd, &ev) < 0)
                close(pidfd);
}

static int ns_init(const struct runtime_config *cfg, struct space_error *err)
{
        config = *cfg;
        agent_fd = ns_agent_image_open(cfg->agent_path);
        if (agent_fd < 0)
                return space_error_errno(err, -agent_fd, "load space-agent %s", cfg->agent_path);
        detect_criu();
        char why[200];
        if (!ns_proc_view_available(why, sizeof(why)))
                log_warn("runtime.proc_views_off", "reason=\"%s\" effect=\"sandboxes' /proc/meminfo, stat, loadavg and uptime show the host's figures\"", why);
        int r = seccomp_policy_build(&seccomp_program);
        if (r < 0)
                return space_error_errno(err, r, "build seccomp filter");
        if (mkdir(cfg->run_dir, 0700) < 0 && errno != EEXIST)
                return space_error_errno(err, errno, "mkdir %s", cfg->run_dir);
        reaper_epoll = epoll_create1(EPOLL_CLOEXEC);
        if (reaper_epoll < 0)
                return space_error_errno(err, errno, "epoll_create1");
        pthread_t t;
        r = pthread_create(&t, NULL, reaper_main, NULL);
        if (r != 0)
                return space_error_errno(err, r, "start reaper");
        pthread_detach(t);
        return 0;
}

static void run_path(const char *id, const char *leaf, char *buf, size_t size)
{
        snprintf(buf, size, "%s/%s%s%s", config.run_dir, id, leaf ? "/" : "", leaf ? leaf : "");
}

static int ns_create_rootfs(const struct sandbox *sb, const char *template_path, struct space_error *err)
{
        char path[PATH_MAX];
        int r = btrfs_pool_sandbox_path(config.pool, sb->id, path, sizeof(path));
        if (r < 0)
                return space_error_errno(err, r, "sandbox path");
        r = btrfs_pool_snapshot(template_path, path, false);
        if (r == -EEXIST) {
                /* A create interrupted after the snapshot: start again from the template. */
                btrfs_pool_subvolume_delete(path);
                r = btrfs_pool_snapshot(template_path, path, false);
        }
        if (r < 0)
                return space_error_errno(err, r, "snapshot %s", template_path);
        return 0;
}

static int ns_destroy_rootfs(const struct sandbox *sb, struct space_error *err)
{
        char path[PATH_MAX];
        int r = btrfs_pool_sandbox_path(config.pool, sb->id, path, sizeof(path));
        if (r == 0)
                r = btrfs_pool_subvolume_delete(path);
        return r < 0 ? space_error_errno(err, r, "delete rootfs of %s", sb->id) : 0;
}

static int ns_snapshot_rootfs(const struct sandbox *sb, const char *dst, int64_t *ret_pause_us, struct space_error *err)
{
        char path[PATH_MAX];
        int r = btrfs_pool_sandbox_path(config.pool, sb->id, path, sizeof(path));
        if (r < 0)
                return space_error_errno(err, r, "sandbox path");
        /* Freeze so no write is half done; btrfs flushes the subvolume's dirty data into the
         * snapshot as part of taking it. A paused sandbox is frozen already. */
        bool freeze = sb->state == SANDBOX_RUNNING;
        /* Write most dirty data out before freezing: the snapshot flushes what is left, and
         * that is then all the sandbox waits for. */
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd >= 0) {
                syncfs(fd);
                close(fd);
        }
        int64_t t0 = monotonic_now_us();
        if (freeze && (r = config.cgroups->freeze(sb->id, true)) < 0)
                return space_error_errno(err, r, "freeze %s", sb->id);
        btrfs_pool_subvolume_delete(dst); /* a partial earlier attempt */
        int snap = btrfs_pool_snapshot(path, dst, true);
        if (freeze && (r = config.cgroups->freeze(sb->id, false)) < 0)
                return space_error_errno(err, r, "thaw %s", sb->id);
        *ret_pause_us = freeze ? monotonic_now_us() - t0 : 0;
        return snap < 0 ? space_error_errno(err, snap, "snapshot %s", path) : 0;
}

static int ns_restore_rootfs(const struct sandbox *sb, const char *src, struct space_error *err)
{
        char path[PATH_MAX], next[PATH_MAX + 16];
        int r = btrfs_pool_sandbox_path(config.pool, sb->id, path, sizeof(path));
        if (r < 0)
                return space_error_errno(err, r, "sandbox path");
        snprintf(next, sizeof(next), "%s.restore", path);
        /* Build the new rootfs beside the old one, then swap: at every instant one of them is
         * complete, and a redo starts the copy again from the snapshot. */
        btrfs_pool_subvolume_delete(next);
        if ((r = btrfs_pool_snapshot(src, next, false)) < 0)
                return space_error_errno(err, r, "copy %s", src);
        if ((r = btrfs_pool_subvolume_delete(path)) < 0)
                return space_error_errno(err, r, "remove old rootfs of %s", sb->id);
        if (rename(next, path) < 0)
                return space_error_errno(err, errno, "put restored rootfs of %s in place", sb->id);
        return 0;
}

static bool init_alive(const struct sandbox *sb)
{
        return sb->pid > 0 && sb->pid_start && ns_process_start_time(sb->pid) == sb->pid_start;
}

static int ns_stop(const struct sandbox *sb, struct space_error *err)
{
        char path[PATH_MAX];
        if (init_alive(sb))
                kill(sb->pid, SIGKILL); /* PID 1 dying takes its whole pid namespace with it */
        int r = config.cgroups->kill_all(sb->id);
        if (r < 0)
                return space_error_errno(err, r, "kill processes of %s", sb->id);
        r = config.cgroups->destroy(sb->id);
        if (r < 0)
                return space_error_errno(err, r, "remove cgroup of %s", sb->id);
        run_path(sb->id, "agent.sock", path, sizeof(path));
        unlink(path);
        run_path(sb->id, "root", path, sizeof(path));
        rmdir(path);
        run_path(sb->id, NULL, path, sizeof(path));
        if (rmdir(path) < 0 && errno != ENOENT)
                return space_error_errno(err, errno, "remove %s", path);
        return 0;
}

/* The CPUs a sandbox's /proc shows: its limit rounded up, at least one, at most the host's. */
static uint32_t ns_shown_cpus(double cpus)
{
        long host = sysconf(_SC_NPROCESSORS_ONLN);
        uint32_t n = cpus > 0 ? (uint32_t)cpus : 0;
        if ((double)n < cpus)
                n++;
        if (n < 1 || (host > 0 && n > (uint32_t)host))
                n = host > 0 ? (uint32_t)host : 1;
        return n;
}

static int ns_start(struct sandbox *sb, struct space_error *err)
{
        char rootfs[PATH_MAX], dir[PATH_MAX], sock[PATH_MAX];
        /* Whatever an interrupted earlier attempt left behind goes first. */
        if (ns_stop(sb, err) < 0)
                return -1;
        int r = btrfs_pool_sandbox_path(config.pool, sb->id, rootfs, sizeof(rootfs));
        if (r < 0)
                return space_error_errno(err, r, "sandbox path");
        run_path(sb->id, NULL, dir, sizeof(dir));
        run_path(sb->id, "agent.sock", sock, sizeof(sock));
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                return space_error_errno(err, errno, "mkdir %s", dir);
        r = config.cgroups->create(sb->id, &sb->resources);
        if (r < 0)
                return space_error_errno(err, r, "create cgroup");
        struct ns_launch_params p = {
                .id = sb->id,
                .rootfs = rootfs,
                .run_dir = dir,
                .socket_path = sock,
                .uid_base = sb->uid_base,
                .memory_bytes = sb->resources.memory_mb > 0 ? (uint64_t)sb->resources.memory_mb << 20 : 0,
                .cpus = ns_shown_cpus(sb->resources.cpus),
                .agent_fd = agent_fd,
                .seccomp = &seccomp_program,
                .cgroups = config.cgroups,
        };
        int pidfd = -1;
        pid_t pid = ns_launch(&p, &pidfd, err);
        if (pid < 0) {
                struct space_error ignored;
                ns_stop(sb, &ignored);
                return -1;
        }
        reaper_watch(pidfd);
        sb->pid = pid;
        sb->pid_start = ns_process_start_time(pid);
        r = agent_client_hello(sock, 5000, NULL);
        if (r < 0) {
                struct space_error ignored;
                ns_stop(sb, &ignored);
                return space_error_errno(err, r, "space-agent did not answer");
        }
        return 0;
}

static int ns_pause(const struct sandbox *sb, struct space_error *err)
{
        int r = config.cgroups->freeze(sb->id, true);
        return r < 0 ? space_error_errno(err, r, "freeze %s", sb->id) : 0;
}

static int ns_resume(const struct sandbox *sb, struct space_error *err)
{
        int r = config.cgroups->freeze(sb->id, false);
        return r < 0 ? space_error_errno(err, r, "thaw %s", sb->id) : 0;
}

static int ns_agent_socket(const struct sandbox *sb, char *buf, size_t size)
{
        run_path(sb->id, "agent.sock", buf, size);
        return 0;
}

static int ns_exec(const struct sandbox *sb, const struct exec_request *req, struct exec_result *ret, struct space_error *err)
{
        char sock[PATH_MAX], msg[256] = "";
        struct cgroup_events before, after;
        run_path(sb->id, "agent.sock", sock, sizeof(sock));
        config.cgroups->read_events(sb->id, &before);
        int r = agent_client_exec(sock, req, ret, msg, sizeof(msg));
        if (r < 0) {
                if (msg[0])
                        return space_error_set(err, r == -EINVAL || r == -ENOENT ? SPACE_E_INVALID_REQUEST
                                                    : r == -EAGAIN ? SPACE_E_UNAVAILABLE
                                                                   : SPACE_E_INTERNAL,
                                               "%s", msg);
                if (r == -ECONNREFUSED || r == -ENOENT || r == -ECONNRESET || r == -EPIPE)
                        return space_error_set(err, SPACE_E_UNAVAILABLE, "the sandbox's agent is not running (%s)", strerror(-r));
                return space_error_errno(err, r, "exec in %s", sb->id);
        }
        config.cgroups->read_events(sb->id, &after);
        ret->oom_killed = after.oom_kills > before.oom_kills;
        ret->pids_limit_hit = after.pids_max_hits > before.pids_max_hits;
        return 0;
}

static int ns_probe(const struct sandbox *sb, bool deep)
{
        char sock[PATH_MAX];
        if (!init_alive(sb))
                return 0;
        if (!deep || sb->state == SANDBOX_PAUSED)
                return 1; /* a frozen agent cannot answer until thawed */
        run_path(sb->id, "agent.sock", sock, sizeof(sock));
        return agent_client_hello(sock, 2000, NULL) == 0 ? 1 : 0;
}

static int add_name(char ***ids, size_t *n, const char *name)
{
        for (size_t i = 0; i < *n; i++)
                if (strcmp((*ids)[i], name) == 0)
                        return 0;
        char **grown = realloc(*ids, (*n + 1) * sizeof(**ids));
        if (!grown)
                return -ENOMEM;
        *ids = grown;
        grown[*n] = strdup(name);
        if (!grown[*n])
                return -ENOMEM;
        (*n)++;
        return 0;
}

static int add_dir_entries(char ***ids, size_t *n, const char *dir)
{
        DIR *d = opendir(dir);
        if (!d)
                return errno == ENOENT ? 0 : -errno;
        struct dirent *de;
        int r = 0;
        while (r == 0 && (de = readdir(d)))
                if (de->d_name[0] != '.')
                        r = add_name(ids, n, de->d_name);
        closedir(d);
        return r;
}

static int ns_list_resources(char ***ret_ids, size_t *ret_n)
{
        char **ids = NULL, **cg = NULL;
        size_t n = 0, ncg = 0;
        char dir[PATH_MAX];
        snprintf(dir, sizeof(dir), "%s/sandboxes", config.pool->root);
        int r = add_dir_entries(&ids, &n, dir);
        if (r == 0)
                r = add_dir_entries(&ids, &n, config.run_dir);
        if (r == 0 && (r = config.cgroups->list(&cg, &ncg)) == 0)
                for (size_t i = 0; i < ncg; i++) {
                        if (r == 0)
                                r = add_name(&ids, &n, cg[i]);
                        free(cg[i]);
                }
        free(cg);
        *ret_ids = ids;
        *ret_n = n;
        return r;
}

const struct runtime_driver runtime_driver_namespaces = {
        .name = "namespaces",
        .version = "1",
        .caps_detected = &caps,
        .init = ns_init,
        .create_rootfs = ns_create_rootfs,
        .destroy_rootfs = ns_destroy_rootfs,
        .snapshot_rootfs = ns_snapshot_rootfs,
        .restore_rootfs = ns_restore_rootfs,
        .start = ns_start,
        .stop = ns_stop,
        .pause = ns_pause,
        .resume = ns_resume,
        .exec = ns_exec,
        .agent_socket = ns_agent_socket,
        .probe = ns_probe,
        .list_resources = ns_list_resources,
};
