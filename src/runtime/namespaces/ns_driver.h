/* ns_driver: the namespaces driver's instance (what its ops share) and the parts of it that
 * live in other files of this directory. Private to src/runtime/namespaces/. */
#pragma once

#include <linux/filter.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtime/runtime_driver.h"
#include "runtime/sandbox_host.h"

struct cgroup_manager;
struct ns_uid_ranges;
struct ns_network;

struct ns_driver {
        struct sandbox_host host; /* first: the shared ops read it through d->state */
        char instance[64];
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
