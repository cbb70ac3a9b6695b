/* build_route_policy: which destinations a template build's network may reach. Until the
 * egress gateway exists, a build sandbox on slirp4netns reaches the internet through the
 * host, so everything that is not a public unicast address is refused by `prohibit` routes
 * in the build's own network namespace: private ranges (where the operator's internal
 * services live), link-local (cloud metadata at 169.254.169.254), shared address space,
 * multicast and reserved blocks. slirp's own /24 (its DNS forwarder at 10.0.2.3) stays
 * reachable through its more specific link route; its host alias 10.0.2.2 is already cut
 * off by --disable-host-loopback. A build step holds no CAP_NET_ADMIN, so it cannot take
 * the routes away. */
#pragma once

#include <sys/types.h>

/* The prefixes refused, as "a.b.c.d/len" strings, NULL-terminated. */
extern const char *const build_route_policy_refused[];

/* Installs the prohibit routes in the network namespace of pid (runs `ip -batch -` under
 * nsenter; stderr appended to log_path). 0 or -errno; > 0 is ip's exit status. */
int build_route_policy_apply(pid_t pid, const char *log_path);
