/* ns_launch: the parent side of starting a namespace sandbox — clone the child, write its
 * uid/gid maps, put it in its cgroups, hand it an idmapped rootfs, wait for it to exec the
 * agent. The flat list of steps mirrors ns_child.c. */
#pragma once

#include <stdbool.h>
#include <linux/filter.h>
#include <stdint.h>
#include <sys/types.h>

#include "spaced/space_error.h"

struct cgroup_manager;

struct ns_launch_params {
        const char *id;
        const char *rootfs;      /* the sandbox's subvolume */
        const char *run_dir;     /* <state>/run/<id>, created by the caller */
        const char *socket_path; /* <run_dir>/agent.sock */
        uint32_t uid_base;       /* host uid/gid that is root inside; 65536 ids are mapped */
        bool proc_views;         /* mount the sandbox's own /proc views */
        uint64_t memory_bytes;   /* what the sandbox's /proc views show: its limits */
        uint32_t cpus;
        bool sudo; /* SUDO on: a rootfs without nosuid and no no_new_privs (docs/isolation.md) */
        int agent_fd;
        const struct sock_fprog *seccomp;
        const struct cgroup_manager *cgroups;
};

/* Launches the sandbox; returns its host pid (>0) and a pidfd for it in *ret_pidfd, or -1
 * with err filled. Whoever holds the pidfd reaps the child with waitid(P_PIDFD), so no
 * waitpid(-1) is needed anywhere in spaced. */
pid_t ns_launch(const struct ns_launch_params *p, int *ret_pidfd, struct space_error *err);
