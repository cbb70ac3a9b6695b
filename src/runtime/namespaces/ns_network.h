/* ns_network: a namespace sandbox's egress link (docs/network.md). A veth pair: eth0 in the
 * sandbox's network namespace, sx<4 hex of the instance><9 hex of the id> on the host, a
 * /30 of the egress subnet between them
 * (allocated host-wide through ns_uid_range's slot records, so two daemons never collide),
 * a default route and resolv.conf toward the host end. One nftables table per daemon
 * instance (inet space_<instance>) sends the sandboxes' TCP and DNS to space-egress on
 * 127.0.0.1 and drops everything else they send (other sandboxes, the host's addresses and
 * services, ICMP, other UDP, IPv6), and any packet whose source address does not route
 * back through the link it came in on (a sandbox that takes another's address: the gateway
 * knows sandboxes by source address). Its DNAT rules match this instance's links by name
 * (sx<instance>*), so a link needs no rule of its own; its drop rules match every sx* link,
 * so a link whose daemon's table is not (yet) there is dropped whole. Used by the
 * namespaces and gvisor drivers (each opens its own; they share the table and blocks). */
#pragma once

#include <stddef.h>
#include <sys/types.h>

#include "runtime/runtime_driver.h"

struct ns_driver;
struct ns_network;

#define NS_NETWORK_BLOCK_DIR "/run/space/egress-blocks"

/* Replaces this instance's table (atomically: no moment without its drop rules) and sweeps
 * address blocks no sandbox recorded. 0, or -1 with err. */
int ns_network_open(const struct runtime_config *cfg, struct ns_network **ret, struct space_error *err);
/* Removes the table when no sandbox of this instance holds a link (they outlive spaced). */
void ns_network_free(struct ns_network *n);
/* The link of sandbox id into the network namespace at netns_path (/proc/PID/ns/net of a
 * running namespaces sandbox, or the file of ns_network_netns_make), its records under the
 * run dir run_dir, resolv.conf and trust store written in rootfs. */
int ns_network_attach(struct ns_network *n, const char *id, const char *netns_path, const char *run_dir, const char *rootfs,
                      char *ret_addr, size_t size, struct space_error *err);
/* The sandbox's address of the block recorded under run_dir: 0, -ENOENT (none). */
int ns_network_address(struct ns_network *n, const char *run_dir, char *ret_addr, size_t size);
/* A new network namespace (lo up) kept alive by a bind mount on path, for a runtime that
 * joins a namespace by path (gvisor's OCI bundle); whatever was at path first is removed.
 * 0 or -errno. */
int ns_network_netns_make(const char *path);
/* Unmounts and removes it; nothing there is fine. */
void ns_network_netns_remove(const char *path);
/* Takes the link, its set element and its block away; 0 when there was none. -errno. */
int ns_network_detach(struct ns_network *n, const char *id, const char *run_dir);
