/* ns_child: the child side of launching a namespace sandbox. Runs in the clone()d child of
 * a multi-threaded spaced, so it only makes system calls (no malloc, no stdio, no locks):
 * everything it needs is prepared by the parent in struct ns_child_config. */
#pragma once

#include <stdbool.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/filter.h>

struct ns_child_config {
        int sync_fd;   /* child end of a socketpair: "go" + the rootfs mount fd arrive here */
        int listen_fd; /* the agent's listening socket, becomes fd 3 */
        int agent_fd;  /* the space-agent executable, opened O_RDONLY */
        char root_dir[PATH_MAX];
        char hostname[64];
        bool proc_views;       /* mount the sandbox's own /proc views */
        uint64_t memory_bytes; /* the limits the sandbox's /proc views show (0: none) */
        uint32_t cpus;
        bool sudo; /* the template's SUDO on: no no_new_privs, so setuid binaries work inside */
        struct sock_fprog seccomp;
};

/* Decimal text of v into buf (no stdio in the child). */
void ns_child_format_uint(char *buf, size_t size, uint64_t v);

/* clone() entry point; arg is a struct ns_child_config. Never returns on success (execs the
 * agent). On failure writes "step: errno" to sync_fd and exits 1. */
int ns_child_main(void *arg);
