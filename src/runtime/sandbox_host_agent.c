/* The ops of host-process sandboxes (namespaces, gvisor) that go through the agent's unix
 * socket in the run directory or through the sandbox's cgroup. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <unistd.h>

#include "agent_protocol/agent_client.h"
#include "agent_protocol/agent_frame.h"
#include "cleanup.h"
#include "runtime/cgroup/cgroup_manager.h"
#include "runtime/sandbox_host.h"
#include "storage/btrfs_pool.h"

void sandbox_host_run_path(const struct sandbox_host *h, const char *id, const char *leaf, char *buf, size_t size)
{
        snprintf(buf, size, "%s/%s%s%s", h->config.run_dir, id, leaf ? "/" : "", leaf ? leaf : "");
}

void sandbox_host_socket_path(const struct sandbox_host *h, const char *id, char *buf, size_t size)
{
        sandbox_host_run_path(h, id, h->socket_leaf, buf, size);
}

int sandbox_host_agent_connect(const struct runtime_driver *d, const struct sandbox *sb, int timeout_ms)
{
        char sock[PATH_MAX];
        sandbox_host_socket_path(sandbox_host_of(d), sb->id, sock, sizeof(sock));
        return agent_client_connect(sock, timeout_ms);
}

int sandbox_host_port_connect(const struct runtime_driver *d, const struct sandbox *sb, uint16_t port, int timeout_ms,
                              int io_timeout_ms)
{
        _cleanup_close_ int fd = sandbox_host_agent_connect(d, sb, timeout_ms);
        if (fd < 0)
                return fd == -ECONNREFUSED || fd == -ENOENT ? -ESRCH : fd; /* no agent: not "nothing listens" */
        struct agent_frame_writer w;
        struct agent_frame f;
        uint8_t *buf = NULL;
        agent_frame_writer_begin(&w, AGENT_MSG_PORT_CONNECT);
        agent_frame_writer_put_u32(&w, AGENT_F_PORT, port);
        int r = agent_client_roundtrip(fd, &w, AGENT_MSG_OK, AGENT_CLIENT_REPLY_MAX, &f, &buf, NULL, 0);
        free(buf);
        if (r < 0)
                return r == -EAGAIN ? -ETIMEDOUT : r;
        struct timeval tv = { .tv_sec = io_timeout_ms / 1000, .tv_usec = (io_timeout_ms % 1000) * 1000 };
        if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
                return -errno;
        return TAKE_FD(fd);
}

int sandbox_host_stats(const struct runtime_driver *d, const struct sandbox *sb, struct runtime_stats *ret)
{
        const struct sandbox_host *h = sandbox_host_of(d);
        struct cgroup_events ev;
        struct statvfs vfs;
        char root[PATH_MAX];
        memset(ret, 0, sizeof(*ret));
        int r = h->cgroups->ops->read_events(h->cgroups, sb->id, &ev);
        if (r < 0)
                return r;
        *ret = (struct runtime_stats){
                .oom_kills = ev.oom_kills,
                .pids_max_hits = ev.pids_max_hits,
                .cpu_usage_us = ev.cpu_usage_us,
                .memory_bytes = ev.memory_bytes,
                .memory_cache_bytes = ev.memory_cache_bytes,
                .memory_limit_bytes = ev.memory_limit_bytes,
        };
        if (btrfs_pool_sandbox_path(h->config.pool, sb->id, root, sizeof(root)) == 0 && statvfs(root, &vfs) == 0) {
                ret->disk_total_bytes = (uint64_t)vfs.f_blocks * vfs.f_frsize;
                ret->disk_free_bytes = (uint64_t)vfs.f_bfree * vfs.f_frsize;
        }
        return 0;
}

/* The counters exec_result_set_limits compares, without the rest of the stats. */
static int limit_hits(const struct sandbox_host *h, const struct sandbox *sb, struct runtime_stats *ret)
{
        struct cgroup_events ev;
        memset(ret, 0, sizeof(*ret));
        int r = h->cgroups->ops->read_limit_hits(h->cgroups, sb->id, &ev);
        if (r == 0) {
                ret->oom_kills = ev.oom_kills;
                ret->pids_max_hits = ev.pids_max_hits;
        }
        return r;
}

int sandbox_host_exec(const struct runtime_driver *d, const struct sandbox *sb, const struct exec_request *req,
                      struct exec_result *ret, struct space_error *err)
{
        const struct sandbox_host *h = sandbox_host_of(d);
        char sock[PATH_MAX], msg[256] = "";
        struct runtime_stats before, after;
        sandbox_host_socket_path(h, sb->id, sock, sizeof(sock));
        int before_r = limit_hits(h, sb, &before);
        int r = agent_client_exec(sock, req, ret, msg, sizeof(msg));
        if (r < 0) {
                if (msg[0])
                        return space_error_set(err,
                                               r == -EINVAL || r == -ENOENT ? SPACE_E_INVALID_REQUEST
                                                       : r == -EAGAIN       ? SPACE_E_UNAVAILABLE
                                                                            : SPACE_E_INTERNAL,
                                               "%s", msg);
                if (r == -ECONNREFUSED || r == -ENOENT || r == -ECONNRESET || r == -EPIPE)
                        return space_error_set(err, SPACE_E_UNAVAILABLE, "the sandbox's agent is not running (%s)", strerror(-r));
                return space_error_errno(err, r, "exec in %s", sb->id);
        }
        int after_r = limit_hits(h, sb, &after);
        exec_result_set_limits(ret, before_r, &before, after_r, &after);
        return 0;
}

int sandbox_host_probe(const struct runtime_driver *d, const struct sandbox *sb, bool deep)
{
        char sock[PATH_MAX];
        struct init_handle ih;
        init_handle_read(sb->runtime_state, &ih);
        if (!init_handle_alive(&ih))
                return 0;
        if (!deep || sb->state == SANDBOX_PAUSED)
                return 1; /* a frozen agent cannot answer until thawed */
        sandbox_host_socket_path(sandbox_host_of(d), sb->id, sock, sizeof(sock));
        return agent_client_hello(sock, 2000, NULL) == 0 ? 1 : 0;
}

int sandbox_host_kill(const struct runtime_driver *d, const struct sandbox *sb)
{
        const struct sandbox_host *h = sandbox_host_of(d);
        return h->cgroups->ops->kill_all(h->cgroups, sb->id);
}

int sandbox_host_host_pid(const struct runtime_driver *d, const struct sandbox *sb)
{
        struct init_handle ih;
        init_handle_read(sb->runtime_state, &ih);
        return init_handle_alive(&ih) ? ih.pid : -ESRCH;
}
