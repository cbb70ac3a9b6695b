/* The namespaces runtime driver: a sandbox is a tree of processes in its own user, pid,
 * mount, network, ipc, uts and cgroup namespaces, on a writable btrfs snapshot of its
 * template, with space-agent as PID 1. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent_protocol/agent_client.h"
#include "cleanup.h"
#include "runtime/cgroup/cgroup_manager.h"
#include "runtime/namespaces/ns_agent_image.h"
#include "runtime/namespaces/ns_driver.h"
#include "runtime/namespaces/ns_launch.h"
#include "runtime/namespaces/ns_network.h"
#include "runtime/namespaces/ns_port.h"
#include "runtime/namespaces/ns_proc_view.h"
#include "spaced/log.h"
#include "runtime/namespaces/ns_uid_range.h"
#include "runtime/namespaces/seccomp_policy.h"
#include "runtime/runtime_driver.h"
#include "runtime/sandbox_host.h"
#include "spaced/host_command.h"
#include "storage/btrfs_pool.h"

/* Memory snapshots of namespace sandboxes would need CRIU >= 4.1 (older ones fail on current
 * kernels). Say precisely what this host has; the capability itself stays off until the
 * CRIU path exists. */
static void detect_criu(struct runtime_capabilities *caps)
{
        char out[512];
        char *argv[] = { "criu", "--version", NULL };
        int r = host_command_run(argv, NULL, out, sizeof(out), 10);
        const char *v = r == 0 ? strstr(out, "Version: ") : NULL;
        int major = 0, minor = 0;
        char *detail = caps->memory_snapshot_detail;
        size_t size = sizeof(caps->memory_snapshot_detail);
        if (r < 0 || r == 127)
                snprintf(detail, size, "criu is not installed");
        else if (!v || sscanf(v, "Version: %d.%d", &major, &minor) < 1)
                snprintf(detail, size, "criu did not report a version");
        else if (major < 4 || (major == 4 && minor < 1))
                snprintf(detail, size, "criu %d.%d is too old for this kernel (needs >= 4.1)", major, minor);
        else
                snprintf(detail, size, "criu %d.%d found, but memory snapshots of namespace sandboxes are not implemented yet",
                         major, minor);
}

/* Sandbox inits launched by this spaced are its children: each is watched through a pidfd
 * and reaped the moment it exits, without a waitpid(-1) that could steal the exit status of
 * a helper program. Inits launched by an earlier spaced belong to the host's init. */
static void *reaper_main(void *arg)
{
        const struct ns_driver *ns = arg;
        int epfd = ns->reaper_epoll;
        struct epoll_event events[16];
        for (;;) {
                int n = epoll_wait(epfd, events, 16, -1);
                for (int i = 0; i < n; i++) {
                        int pidfd = events[i].data.fd;
                        if (pidfd == ns->reaper_stop)
                                return NULL; /* the instance is being freed */
                        siginfo_t info;
                        memset(&info, 0, sizeof(info));
                        if (waitid(P_PIDFD, (id_t)pidfd, &info, WEXITED | WNOHANG) == 0 && info.si_pid == 0)
                                continue; /* spurious */
                        /* Out of the interest list before the number can be reused: a copy of
                         * the pidfd in a child being cloned would otherwise keep reporting it. */
                        epoll_ctl(epfd, EPOLL_CTL_DEL, pidfd, NULL);
                        close(pidfd);
                }
        }
        return NULL;
}

static void reaper_watch(const struct ns_driver *ns, int pidfd)
{
        struct epoll_event ev = { .events = EPOLLIN, .data.fd = pidfd };
        if (epoll_ctl(ns->reaper_epoll, EPOLL_CTL_ADD, pidfd, &ev) < 0)
                close(pidfd);
}

/* The range a sandbox's run directory says it holds (written before its init is launched,
 * so a crash cannot lose it), 0 for none. */
static uint32_t recorded_uid_base(const struct ns_driver *ns, const char *id)
{
        char path[PATH_MAX];
        sandbox_host_run_path(&ns->host, id, "uid_base", path, sizeof(path));
        return ns_uid_ranges_recorded(path);
}

static int keep_recorded(uint32_t base, const char *sandbox_id, void *arg)
{
        return recorded_uid_base(arg, sandbox_id) == base;
}

static void ns_free(struct runtime_driver *d)
{
        struct ns_driver *ns = d ? d->state : NULL;
        if (!ns)
                return;
        if (ns->reaper_running) {
                uint64_t one = 1;
                (void)!write(ns->reaper_stop, &one, sizeof(one));
                pthread_join(ns->reaper, NULL);
        }
        if (ns->reaper_stop >= 0)
                close(ns->reaper_stop);
        if (ns->agent_fd >= 0)
                close(ns->agent_fd);
        if (ns->reaper_epoll >= 0)
                close(ns->reaper_epoll);
        free(ns->seccomp_program.filter);
        ns_network_free(ns->network);
        ns_uid_ranges_free(ns->uids);
        free(ns->host.cgroups);
        free(ns);
        d->state = NULL;
}

static int ns_init(struct runtime_driver *d, const struct runtime_config *cfg, struct space_error *err)
{
        char reason[1024] = "";
        struct ns_driver *ns = calloc(1, sizeof(*ns));
        if (!ns)
                return space_error_errno(err, ENOMEM, "namespaces driver");
        ns->agent_fd = ns->reaper_epoll = ns->reaper_stop = -1;
        d->state = ns;
        d->caps = (struct runtime_capabilities){ .pause = true, .fd_passing = true, .exec_watch = true };
        ns->host.config = *cfg;
        ns->host.socket_leaf = "agent.sock";
        snprintf(ns->instance, sizeof(ns->instance), "%s", cfg->instance);
        int r = cgroup_manager_detect(cfg->instance, &ns->host.cgroups, reason, sizeof(reason));
        if (r < 0) {
                space_error_set(err, SPACE_E_INTERNAL, "%s", reason);
                goto fail;
        }
        snprintf(d->caps.cgroup, sizeof(d->caps.cgroup), "%s", ns->host.cgroups->ops->name);
        ns->agent_fd = ns_agent_image_open(cfg->agent_path);
        if (ns->agent_fd < 0) {
                space_error_errno(err, -ns->agent_fd, "load space-agent %s", cfg->agent_path);
                goto fail;
        }
        detect_criu(&d->caps);
        char why[200];
        if (cfg->proc_views && !ns_proc_view_available(why, sizeof(why)))
                log_warn("runtime.proc_views_off",
                         "reason=\"%s\" effect=\"sandboxes' /proc/meminfo, stat, loadavg and uptime show the host's figures\"",
                         why);
        if ((r = seccomp_policy_build(&ns->seccomp_program)) < 0) {
                space_error_errno(err, r, "build seccomp filter");
                goto fail;
        }
        if (mkdir(cfg->run_dir, 0700) < 0 && errno != EEXIST) {
                space_error_errno(err, errno, "mkdir %s", cfg->run_dir);
                goto fail;
        }
        if ((r = ns_uid_ranges_open(cfg->uid_range_dir, cfg->instance, cfg->state_dir, &ns->uids)) < 0) {
                space_error_errno(err, r, "open the host's uid ranges (%s)",
                                  cfg->uid_range_dir[0] ? cfg->uid_range_dir : NS_UID_RANGE_DIR);
                goto fail;
        }
        /* Ranges taken by an earlier run of this instance that no sandbox recorded (it stopped
         * between the two steps) go back; no sandbox of this instance is starting yet. */
        if ((r = ns_uid_ranges_sweep(ns->uids, keep_recorded, ns)) < 0) {
                space_error_errno(err, r, "sweep the host's uid ranges");
                goto fail;
        }
        if (cfg->egress_tcp_port && ns_network_open(cfg, &ns->network, err) < 0) {
                if (cfg->egress_required)
                        goto fail;
                log_warn("runtime.egress_off", "reason=\"%s\" effect=\"sandboxes with an egress profile cannot be created\"",
                         LOG_ESC(err->message));
                *err = (struct space_error){ 0 };
        }
        ns->reaper_epoll = epoll_create1(EPOLL_CLOEXEC);
        ns->reaper_stop = eventfd(0, EFD_CLOEXEC);
        struct epoll_event stop = { .events = EPOLLIN };
        stop.data.fd = ns->reaper_stop;
        if (ns->reaper_epoll < 0 || ns->reaper_stop < 0 ||
            epoll_ctl(ns->reaper_epoll, EPOLL_CTL_ADD, ns->reaper_stop, &stop) < 0) {
                space_error_errno(err, errno, "set up the reaper");
                goto fail;
        }
        r = pthread_create(&ns->reaper, NULL, reaper_main, ns);
        if (r != 0) {
                space_error_errno(err, r, "start reaper");
                goto fail;
        }
        ns->reaper_running = true;
        return 0;
fail:
        ns_free(d);
        return -1;
}

static int ns_stop(const struct runtime_driver *d, const struct sandbox *sb, struct space_error *err)
{
        const struct ns_driver *ns = ns_driver_of(d);
        struct init_handle h;
        char path[PATH_MAX];
        init_handle_read(sb->runtime_state, &h);
        if (init_handle_alive(&h))
                kill(h.pid, SIGKILL); /* PID 1 dying takes its whole pid namespace with it */
        int r = ns->host.cgroups->ops->kill_all(ns->host.cgroups, sb->id);
        if (r < 0)
                return space_error_errno(err, r, "kill processes of %s", sb->id);
        r = ns->host.cgroups->ops->destroy(ns->host.cgroups, sb->id);
        if (r < 0)
                return space_error_errno(err, r, "remove cgroup of %s", sb->id);
        /* No process of the sandbox is left: its uid range and its link may go to another. */
        sandbox_host_run_path(&ns->host, sb->id, NULL, path, sizeof(path));
        if (ns->network && (r = ns_network_detach(ns->network, sb->id, path)) < 0)
                return space_error_errno(err, r, "remove the network link of %s", sb->id);
        uint32_t base = recorded_uid_base(ns, sb->id);
        if (base && (r = ns_uid_ranges_give(ns->uids, base, sb->id)) < 0)
                return space_error_errno(err, r, "give back the uid range of %s", sb->id);
        sandbox_host_run_path(&ns->host, sb->id, "uid_base", path, sizeof(path));
        unlink(path);
        sandbox_host_run_path(&ns->host, sb->id, "agent.sock", path, sizeof(path));
        unlink(path);
        sandbox_host_run_path(&ns->host, sb->id, "root", path, sizeof(path));
        rmdir(path);
        sandbox_host_run_path(&ns->host, sb->id, NULL, path, sizeof(path));
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

/* Takes a host uid range for the sandbox and records it in its run directory. */
static int take_uid_range(const struct ns_driver *ns, const struct sandbox *sb, uint32_t *ret_base, struct space_error *err)
{
        char path[PATH_MAX];
        uint32_t base;
        int r = ns_uid_ranges_take(ns->uids, sb->id, &base);
        if (r == -ENOSPC)
                return space_error_set(err, SPACE_E_UNAVAILABLE, "no free uid range for another sandbox on this host");
        if (r < 0)
                return space_error_errno(err, r, "take a uid range");
        sandbox_host_run_path(&ns->host, sb->id, "uid_base", path, sizeof(path));
        if ((r = ns_uid_ranges_record(path, base)) < 0) {
                ns_uid_ranges_give(ns->uids, base, sb->id);
                return space_error_errno(err, -r, "record the uid range of %s", sb->id);
        }
        *ret_base = base;
        return 0;
}

static int ns_start(const struct runtime_driver *d, struct sandbox *sb, struct space_error *err)
{
        const struct ns_driver *ns = ns_driver_of(d);
        char rootfs[PATH_MAX], dir[PATH_MAX], sock[PATH_MAX];
        struct init_handle h = { 0 };
        struct space_error ignored;
        /* Whatever an interrupted earlier attempt left behind goes first. */
        if (ns_stop(d, sb, err) < 0)
                return -1;
        int r = btrfs_pool_sandbox_path(ns->host.config.pool, sb->id, rootfs, sizeof(rootfs));
        if (r < 0)
                return space_error_errno(err, r, "sandbox path");
        sandbox_host_run_path(&ns->host, sb->id, NULL, dir, sizeof(dir));
        sandbox_host_run_path(&ns->host, sb->id, "agent.sock", sock, sizeof(sock));
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                return space_error_errno(err, errno, "mkdir %s", dir);
        if (take_uid_range(ns, sb, &h.uid_base, err) < 0) {
                ns_stop(d, sb, &ignored);
                return -1;
        }
        r = ns->host.cgroups->ops->create(ns->host.cgroups, sb->id, &sb->resources);
        if (r < 0) {
                ns_stop(d, sb, &ignored);
                return space_error_errno(err, r, "create cgroup");
        }
        struct ns_launch_params p = {
                .id = sb->id,
                .rootfs = rootfs,
                .run_dir = dir,
                .socket_path = sock,
                .uid_base = h.uid_base,
                .proc_views = ns->host.config.proc_views,
                .memory_bytes = sb->resources.memory_mb > 0 ? (uint64_t)sb->resources.memory_mb << 20 : 0,
                .cpus = ns_shown_cpus(sb->resources.cpus),
                .sudo = json_is_true(json_object_get(json_object_get(sb->environment, "config"), "sudo")),
                .agent_fd = ns->agent_fd,
                .seccomp = &ns->seccomp_program,
                .cgroups = ns->host.cgroups,
        };
        int pidfd = -1;
        pid_t pid = ns_launch(&p, &pidfd, err);
        if (pid < 0) {
                ns_stop(d, sb, &ignored);
                return -1;
        }
        reaper_watch(ns, pidfd);
        h.pid = pid;
        h.pid_start = init_handle_start_time(pid);
        /* Recorded first, so that the stop below (or a later one) finds the init. */
        if ((r = init_handle_write(&h, sb->runtime_state, sizeof(sb->runtime_state))) < 0) {
                kill(pid, SIGKILL);
                ns_stop(d, sb, &ignored);
                return space_error_errno(err, r, "record the handle of %s", sb->id);
        }
        if ((r = agent_client_hello(sock, 5000, NULL)) < 0) {
                ns_stop(d, sb, &ignored);
                return space_error_errno(err, r, "space-agent did not answer");
        }
        return 0;
}

static int ns_pause(const struct runtime_driver *d, const struct sandbox *sb, struct space_error *err)
{
        const struct ns_driver *ns = ns_driver_of(d);
        int r = ns->host.cgroups->ops->freeze(ns->host.cgroups, sb->id, true);
        return r < 0 ? space_error_errno(err, r, "freeze %s", sb->id) : 0;
}

static int ns_resume(const struct runtime_driver *d, const struct sandbox *sb, struct space_error *err)
{
        const struct ns_driver *ns = ns_driver_of(d);
        int r = ns->host.cgroups->ops->freeze(ns->host.cgroups, sb->id, false);
        return r < 0 ? space_error_errno(err, r, "thaw %s", sb->id) : 0;
}

static int ns_network_attach_op(const struct runtime_driver *d, const struct sandbox *sb, char *ret_addr, size_t size,
                                struct space_error *err)
{
        const struct ns_driver *ns = ns_driver_of(d);
        struct init_handle h;
        char dir[PATH_MAX], rootfs[PATH_MAX], netns[64];
        if (!ns->network)
                return space_error_set(err, SPACE_E_UNSUPPORTED, "this server has no egress gateway");
        init_handle_read(sb->runtime_state, &h);
        if (!init_handle_alive(&h))
                return space_error_set(err, SPACE_E_INVALID_STATE, "sandbox %s is not running", sb->id);
        int r = btrfs_pool_sandbox_path(ns->host.config.pool, sb->id, rootfs, sizeof(rootfs));
        if (r < 0)
                return space_error_errno(err, r, "sandbox path");
        sandbox_host_run_path(&ns->host, sb->id, NULL, dir, sizeof(dir));
        snprintf(netns, sizeof(netns), "/proc/%d/ns/net", (int)h.pid);
        return ns_network_attach(ns->network, sb->id, netns, dir, rootfs, ret_addr, size, err);
}

const struct runtime_driver_ops runtime_driver_namespaces = {
        .name = "namespaces",
        .version = "1",
        .init = ns_init,
        .free = ns_free,
        .create_rootfs = sandbox_host_rootfs_create,
        .destroy_rootfs = sandbox_host_rootfs_destroy,
        .snapshot_rootfs = sandbox_host_rootfs_snapshot,
        .restore_rootfs = sandbox_host_rootfs_restore,
        .start = ns_start,
        .stop = ns_stop,
        .pause = ns_pause,
        .resume = ns_resume,
        .exec = sandbox_host_exec,
        .probe = sandbox_host_probe,
        .agent_connect = sandbox_host_agent_connect,
        .stats = sandbox_host_stats,
        .path_exists = sandbox_host_rootfs_path_exists,
        .disk_limit = sandbox_host_rootfs_disk_limit,
        .changed_since = sandbox_host_rootfs_changed_since,
        .kill = sandbox_host_kill,
        .host_pid = sandbox_host_host_pid,
        .network_attach = ns_network_attach_op,
        .port_connect = ns_port_connect,
        .list_resources = sandbox_host_rootfs_list_resources,
};
