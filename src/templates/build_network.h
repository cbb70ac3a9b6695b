/* build_network: outbound network for build sandboxes, an operator choice (--build-network):
 *   none         the sandbox's own network namespace with only lo (like every sandbox);
 *   slirp4netns  a user-mode network stack (slirp4netns --disable-host-loopback) gives the
 *                namespace outbound TCP/UDP through the host, without reaching the host's
 *                loopback services; DNS at 10.0.2.3.
 * While a RUN step runs with a network, the layer's /etc/hosts and /etc/resolv.conf are the
 * host's (so names resolve as on the host, e.g. a Debian mirror pinned in /etc/hosts); the
 * layer's own files are put back afterwards, so they never end up in the template. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "spaced/space_error.h"

struct build_network_file {
        bool saved;
        char kind; /* 0 absent, 'f' file, 'l' symlink */
        char *content;
        size_t len;
        mode_t mode;
        uid_t uid;
        gid_t gid;
};

struct build_network {
        bool enabled;
        pid_t helper_pid;
        int helper_fd;
        struct build_network_file files[2];
};

/* The default when the operator chose none: slirp4netns if it is installed. */
const char *build_network_default(void);
/* Puts the host's name resolution into the layer (rootfd) for the step. */
int build_network_prepare(struct build_network *n, const char *mode, int rootfd, struct space_error *err);
/* After the sandbox started: connects its network namespace (init pid). */
int build_network_attach(struct build_network *n, pid_t sandbox_pid, const char *log_path, struct space_error *err);
/* Stops the helper and puts the layer's own files back. Safe to call whatever happened. */
void build_network_finish(struct build_network *n, int rootfd);
