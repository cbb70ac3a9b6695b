/* sandbox_host: what the drivers whose sandboxes are host processes in a cgroup of their
 * own, on a btrfs subvolume of the pool, with space-agent listening on a unix socket in the
 * sandbox's run directory (namespaces, gvisor) share. Such a driver's state begins with a
 * struct sandbox_host, so that these functions can go straight into its ops table. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtime/runtime_driver.h"

struct cgroup_manager;

struct sandbox_host {
        struct runtime_config config;
        struct cgroup_manager *cgroups;
        const char *socket_leaf; /* the agent's socket, relative to <run_dir>/<id> */
};

static inline const struct sandbox_host *sandbox_host_of(const struct runtime_driver *d)
{
        return d->state;
}

/* <run_dir>/<id>[/<leaf>] */
void sandbox_host_run_path(const struct sandbox_host *h, const char *id, const char *leaf, char *buf, size_t size);
/* <run_dir>/<id>/<socket_leaf> */
void sandbox_host_socket_path(const struct sandbox_host *h, const char *id, char *buf, size_t size);

/* A sandbox's init as recorded in sb->runtime_state: {"pid":…,"pid_start":…,"uid_base":…}. */
struct init_handle {
        int32_t pid;
        uint64_t pid_start; /* /proc/PID/stat starttime, to reject a recycled pid */
        uint32_t uid_base;  /* namespaces: host uid that is root inside; 0 when none is held */
};
/* Zeroes *ret for empty, unparsable or foreign text (such a sandbox simply has no live init). */
void init_handle_read(const char *runtime_state, struct init_handle *ret);
/* -ENOSPC if it does not fit in size. */
int init_handle_write(const struct init_handle *h, char *buf, size_t size);
/* /proc/PID/stat field 22 (start time in clock ticks), 0 if the process is gone or a zombie. */
uint64_t init_handle_start_time(pid_t pid);
/* The recorded init is still the process it was (not gone, not a recycled pid). */
bool init_handle_alive(const struct init_handle *h);

/* Rootfs ops (sandbox_host_rootfs.c). */
int sandbox_host_rootfs_create(const struct runtime_driver *d, const struct sandbox *sb, const char *template_path,
                               struct space_error *err);
int sandbox_host_rootfs_destroy(const struct runtime_driver *d, const struct sandbox *sb, struct space_error *err);
int sandbox_host_rootfs_snapshot(const struct runtime_driver *d, const struct sandbox *sb, const char *dst, int64_t *ret_pause_us,
                                 struct space_error *err);
int sandbox_host_rootfs_restore(const struct runtime_driver *d, const struct sandbox *sb, const char *src,
                                struct space_error *err);
int sandbox_host_rootfs_disk_limit(const struct runtime_driver *d, const struct sandbox *sb, uint64_t limit_bytes);
int sandbox_host_rootfs_path_exists(const struct runtime_driver *d, const struct sandbox *sb, const char *path);
int sandbox_host_rootfs_changed_since(const struct runtime_driver *d, const struct sandbox *sb, const char *snapshot_path);
int sandbox_host_rootfs_list_resources(const struct runtime_driver *d, char ***ret_ids, size_t *ret_n);

/* Agent and cgroup ops (sandbox_host_agent.c). */
int sandbox_host_exec(const struct runtime_driver *d, const struct sandbox *sb, const struct exec_request *req,
                      struct exec_result *ret, struct space_error *err);
int sandbox_host_agent_connect(const struct runtime_driver *d, const struct sandbox *sb, int timeout_ms);
/* port_connect through the agent (PORT_CONNECT): for a runtime whose network spaced cannot
 * join. The stream is the agent's connection, carrying the TCP bytes after its OK. */
int sandbox_host_port_connect(const struct runtime_driver *d, const struct sandbox *sb, uint16_t port, int timeout_ms,
                              int io_timeout_ms);
int sandbox_host_stats(const struct runtime_driver *d, const struct sandbox *sb, struct runtime_stats *ret);
int sandbox_host_kill(const struct runtime_driver *d, const struct sandbox *sb);
int sandbox_host_host_pid(const struct runtime_driver *d, const struct sandbox *sb);
/* 1 if the recorded init is alive and (when deep and not paused) its agent answers, 0 if not. */
int sandbox_host_probe(const struct runtime_driver *d, const struct sandbox *sb, bool deep);
