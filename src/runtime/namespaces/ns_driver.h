/* ns_driver: the namespaces driver's instance (what its ops share) and the parts of it that
 * live in other files of this directory. Private to src/runtime/namespaces/. */
#pragma once

#include <linux/filter.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtime/runtime_driver.h"

struct cgroup_manager;
struct ns_uid_ranges;
struct ns_network;

struct ns_driver {
        struct runtime_config config;
        char instance[64];
        struct cgroup_manager *cgroups;
        struct ns_uid_ranges *uids;
        struct ns_network *network; /* NULL when the daemon has no egress gateway */
        struct sock_fprog seccomp_program;
        int agent_fd;     /* the space-agent image every sandbox execs */
        int reaper_epoll; /* pidfds of the inits this process launched */
        int reaper_stop;  /* eventfd in reaper_epoll: the reaper thread ends when it is written */
        pthread_t reaper;
        bool reaper_running;
};

static inline struct ns_driver *ns_driver_of(const struct runtime_driver *d)
{
        return d->state;
}

/* <run_dir>/<id>[/<leaf>] */
void ns_driver_run_path(const struct ns_driver *ns, const char *id, const char *leaf, char *buf, size_t size);

/* A sandbox's handle, kept in sb->runtime_state as {"pid":…,"pid_start":…,"uid_base":…}. */
struct ns_handle {
        int32_t pid;
        uint64_t pid_start; /* /proc/PID/stat starttime, to reject a recycled pid */
        uint32_t uid_base;  /* host uid that is root inside; 0 when none is held */
};
/* Zeroes *ret for empty, unparsable or foreign text (such a sandbox simply has no live init). */
void ns_handle_read(const char *runtime_state, struct ns_handle *ret);
/* -ENOSPC if it does not fit in size. */
int ns_handle_write(const struct ns_handle *h, char *buf, size_t size);

/* Rootfs ops (ns_rootfs.c). */
int ns_rootfs_create(const struct runtime_driver *d, const struct sandbox *sb, const char *template_path,
                     struct space_error *err);
int ns_rootfs_destroy(const struct runtime_driver *d, const struct sandbox *sb, struct space_error *err);
int ns_rootfs_snapshot(const struct runtime_driver *d, const struct sandbox *sb, const char *dst, int64_t *ret_pause_us,
                       struct space_error *err);
int ns_rootfs_restore(const struct runtime_driver *d, const struct sandbox *sb, const char *src, struct space_error *err);
int ns_rootfs_disk_limit(const struct runtime_driver *d, const struct sandbox *sb, uint64_t limit_bytes);
int ns_rootfs_path_exists(const struct runtime_driver *d, const struct sandbox *sb, const char *path);
int ns_rootfs_changed_since(const struct runtime_driver *d, const struct sandbox *sb, const char *snapshot_path);
int ns_rootfs_list_resources(const struct runtime_driver *d, char ***ret_ids, size_t *ret_n);
