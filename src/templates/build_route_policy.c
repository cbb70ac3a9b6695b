#include "templates/build_route_policy.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "spaced/host_command.h"

/* From IANA's IPv4 special-purpose registry: the blocks where an operator's own services
 * live (private, shared, link-local with cloud metadata, benchmarking), "this network",
 * multicast and reserved. Not refused: the loopback block (the sandbox's own lo, looked up
 * in the local table first), slirp's own 10.0.2.0/24 (more specific than 10.0.0.0/8), and
 * the documentation blocks, which the internet does not route and which some sites (these
 * machines among them) use for their package mirror. */
const char *const build_route_policy_refused[] = {
        "0.0.0.0/8",      "10.0.0.0/8",     "100.64.0.0/10", "169.254.0.0/16", "172.16.0.0/12", "192.0.0.0/24",
        "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/4",    "240.0.0.0/4",   NULL,
};

static int write_all(int fd, const char *s, size_t len)
{
        while (len > 0) {
                ssize_t n = write(fd, s, len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return n < 0 ? -errno : -EIO;
                s += n;
                len -= (size_t)n;
        }
        return 0;
}

int build_route_policy_apply(pid_t pid, const char *log_path)
{
        char netns[64];
        snprintf(netns, sizeof(netns), "--net=/proc/%d/ns/net", (int)pid);
        char *argv[] = { "nsenter", netns, "--", "ip", "-batch", "-", NULL };
        int fd;
        pid_t child;
        int r = host_command_spawn_piped(argv, false, log_path, &fd, &child);
        if (r < 0)
                return r;
        for (size_t i = 0; build_route_policy_refused[i] && r == 0; i++) {
                char line[64];
                int n = snprintf(line, sizeof(line), "route add prohibit %s\n", build_route_policy_refused[i]);
                r = write_all(fd, line, (size_t)n);
        }
        close(fd);
        int status = host_command_wait(child, r < 0);
        return r < 0 ? r : status;
}
