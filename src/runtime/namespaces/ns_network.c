#include "runtime/namespaces/ns_network.h"
#include "runtime/namespaces/ns_trust_store.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/openat2.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <net/if.h>
#include <nftables/libnftables.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "spaced/log.h"
#include "runtime/namespaces/ns_uid_range.h"

struct ns_network {
        char table[80];
        char prefix[8]; /* "sx" + 4 hex digits of the instance: this daemon's links */
        uint16_t tcp_port, dns_port;
        struct ns_uid_ranges *blocks;
        char run_dir[PATH_MAX];
        pthread_mutex_t nft_lock;
        struct nft_ctx *nft;
        char *ca_pem; /* the platform CA, for the sandboxes' trust store; NULL: none */
};

/* ---- nftables ---- */

static int nft_run(struct ns_network *n, const char *cmd, char *why, size_t why_size)
{
        pthread_mutex_lock(&n->nft_lock);
        int r = nft_run_cmd_from_buffer(n->nft, cmd);
        const char *e = nft_ctx_get_error_buffer(n->nft);
        if (r != 0 && why)
                snprintf(why, why_size, "%s", e && e[0] ? e : "nft failed");
        pthread_mutex_unlock(&n->nft_lock);
        return r == 0 ? 0 : -EIO;
}

static int table_replace(struct ns_network *n, char *why, size_t why_size)
{
        char cmd[2048];
        const char *t = n->table;
        snprintf(cmd, sizeof(cmd),
                 "add table inet %s\n"
                 "delete table inet %s\n"
                 "table inet %s {\n"
                 "  chain filter_prerouting { type filter hook prerouting priority raw; policy accept;\n"
                 "    iifname \"sx*\" fib saddr . iif oif missing drop\n"
                 "  }\n"
                 "  chain nat_prerouting { type nat hook prerouting priority dstnat; policy accept;\n"
                 "    iifname \"%s*\" meta nfproto ipv4 meta l4proto tcp dnat ip to 127.0.0.1:%u\n"
                 "    iifname \"%s*\" meta nfproto ipv4 udp dport 53 dnat ip to 127.0.0.1:%u\n"
                 "  }\n"
                 "  chain filter_input { type filter hook input priority filter; policy accept;\n"
                 "    iifname \"sx*\" meta nfproto ipv4 ip daddr 127.0.0.1 ct status dnat accept\n"
                 "    iifname \"sx*\" drop\n"
                 "  }\n"
                 "  chain filter_forward { type filter hook forward priority filter; policy accept;\n"
                 "    iifname \"sx*\" drop\n"
                 "    oifname \"sx*\" drop\n"
                 "  }\n"
                 "  chain filter_output { type filter hook output priority filter; policy accept;\n"
                 "    oifname \"sx*\" ct state established,related accept\n"
                 "    oifname \"sx*\" drop\n"
                 "  }\n"
                 "}\n",
                 t, t, t, n->prefix, n->tcp_port, n->prefix, n->dns_port);
        return nft_run(n, cmd, why, why_size);
}

/* ---- rtnetlink ---- */

struct nl_msg {
        struct nlmsghdr h;
        char buf[1024];
};

static struct rtattr *nl_attr(struct nl_msg *m, unsigned short type, const void *data, size_t len)
{
        struct rtattr *a = (struct rtattr *)((char *)m + NLMSG_ALIGN(m->h.nlmsg_len));
        a->rta_type = type;
        a->rta_len = (unsigned short)RTA_LENGTH(len);
        if (len)
                memcpy(RTA_DATA(a), data, len);
        m->h.nlmsg_len = NLMSG_ALIGN(m->h.nlmsg_len) + RTA_ALIGN(a->rta_len);
        return a;
}

static void nl_nest_end(struct nl_msg *m, struct rtattr *a)
{
        a->rta_len = (unsigned short)((char *)m + m->h.nlmsg_len - (char *)a);
}

static void nl_init(struct nl_msg *m, uint16_t type, uint16_t flags, const void *hdr, size_t hdr_len)
{
        memset(m, 0, sizeof(*m));
        m->h.nlmsg_type = type;
        m->h.nlmsg_flags = (uint16_t)(NLM_F_REQUEST | NLM_F_ACK | flags);
        m->h.nlmsg_len = (uint32_t)NLMSG_LENGTH(hdr_len);
        memcpy(NLMSG_DATA(&m->h), hdr, hdr_len);
}

/* Sends m and reads its acknowledgement: 0 or the kernel's -errno. */
static int nl_call(int fd, struct nl_msg *m)
{
        static _Atomic uint32_t seq;
        m->h.nlmsg_seq = ++seq;
        if (send(fd, &m->h, m->h.nlmsg_len, 0) < 0)
                return -errno;
        char buf[4096];
        for (;;) {
                ssize_t len = recv(fd, buf, sizeof(buf), 0);
                if (len < 0)
                        return -errno;
                for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)len); h = NLMSG_NEXT(h, len))
                        if (h->nlmsg_seq == m->h.nlmsg_seq && h->nlmsg_type == NLMSG_ERROR)
                                return ((struct nlmsgerr *)NLMSG_DATA(h))->error;
        }
}

static int nl_socket(void)
{
        int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
        return fd < 0 ? -errno : fd;
}

static int link_up(int fd, int index)
{
        struct nl_msg m;
        struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC, .ifi_index = index, .ifi_flags = IFF_UP, .ifi_change = IFF_UP };
        nl_init(&m, RTM_NEWLINK, 0, &ifi, sizeof(ifi));
        return nl_call(fd, &m);
}

static int addr_add(int fd, int index, uint32_t addr, int bits)
{
        struct nl_msg m;
        struct ifaddrmsg ifa = { .ifa_family = AF_INET, .ifa_prefixlen = (unsigned char)bits, .ifa_index = (unsigned)index };
        uint32_t be = htonl(addr);
        nl_init(&m, RTM_NEWADDR, NLM_F_CREATE | NLM_F_REPLACE, &ifa, sizeof(ifa));
        nl_attr(&m, IFA_LOCAL, &be, 4);
        nl_attr(&m, IFA_ADDRESS, &be, 4);
        return nl_call(fd, &m);
}

static int default_route(int fd, int index, uint32_t gateway)
{
        struct nl_msg m;
        struct rtmsg rt = { .rtm_family = AF_INET,
                            .rtm_table = RT_TABLE_MAIN,
                            .rtm_protocol = RTPROT_BOOT,
                            .rtm_scope = RT_SCOPE_UNIVERSE,
                            .rtm_type = RTN_UNICAST };
        uint32_t be = htonl(gateway), oif = (uint32_t)index;
        nl_init(&m, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_REPLACE, &rt, sizeof(rt));
        nl_attr(&m, RTA_GATEWAY, &be, 4);
        nl_attr(&m, RTA_OIF, &oif, 4);
        return nl_call(fd, &m);
}

static int veth_create(int fd, const char *host, int netns_fd)
{
        struct nl_msg m;
        struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC };
        nl_init(&m, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, &ifi, sizeof(ifi));
        nl_attr(&m, IFLA_IFNAME, host, strlen(host) + 1);
        struct rtattr *info = nl_attr(&m, IFLA_LINKINFO, NULL, 0);
        nl_attr(&m, IFLA_INFO_KIND, "veth", 4);
        struct rtattr *data = nl_attr(&m, IFLA_INFO_DATA, NULL, 0);
        struct rtattr *peer = nl_attr(&m, VETH_INFO_PEER, &ifi, sizeof(ifi));
        nl_attr(&m, IFLA_IFNAME, "eth0", 5);
        uint32_t nsfd = (uint32_t)netns_fd;
        nl_attr(&m, IFLA_NET_NS_FD, &nsfd, 4);
        nl_nest_end(&m, peer);
        nl_nest_end(&m, data);
        nl_nest_end(&m, info);
        return nl_call(fd, &m);
}

static int link_delete(int fd, const char *name)
{
        struct nl_msg m;
        struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC };
        nl_init(&m, RTM_DELLINK, 0, &ifi, sizeof(ifi));
        nl_attr(&m, IFLA_IFNAME, name, strlen(name) + 1);
        return nl_call(fd, &m);
}

static int write_sysctl(const char *path, const char *value)
{
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        return write(fd, value, strlen(value)) < 0 ? -errno : 0;
}

/* ---- the link ---- */

static int64_t now_us(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* <prefix><9 hex digits of the id>: the instance's wildcard in the DNAT rules matches it,
 * so a link needs no rule of its own (an nft transaction costs 15-40 ms on a busy host). */
static void host_name(const struct ns_network *n, const char *id, char *buf, size_t size)
{
        const char *hex = strncmp(id, "sb-", 3) == 0 ? id + 3 : id;
        snprintf(buf, size, "%s%.9s", n->prefix, hex);
}

static void block_record_path(const struct ns_network *n, const char *run_dir, char *buf, size_t size)
{
        snprintf(buf, size, "%s/egress_block", run_dir);
        (void)n;
}

/* The run directory of sandbox id under the driver's run dir; the block records live there. */
static int keep_recorded(uint32_t base, const char *sandbox_id, void *arg)
{
        const struct ns_network *n = arg;
        char path[PATH_MAX + 80];
        snprintf(path, sizeof(path), "%s/%s/egress_block", n->run_dir, sandbox_id);
        return ns_uid_ranges_recorded(path) == base;
}

static int count_held(uint32_t base, const char *sandbox_id, void *arg)
{
        (*(int *)arg)++;
        return 1;
}

int ns_network_open(const struct runtime_config *cfg, struct ns_network **ret, struct space_error *err)
{
        struct ns_network *n = calloc(1, sizeof(*n));
        char why[512] = "";
        int r;
        if (!n)
                return space_error_errno(err, ENOMEM, "egress network");
        pthread_mutex_init(&n->nft_lock, NULL);
        snprintf(n->table, sizeof(n->table), "space_%s", cfg->instance);
        snprintf(n->prefix, sizeof(n->prefix), "sx%.4s", cfg->instance[0] == 'i' ? cfg->instance + 1 : cfg->instance);
        snprintf(n->run_dir, sizeof(n->run_dir), "%s", cfg->run_dir);
        n->tcp_port = cfg->egress_tcp_port;
        n->dns_port = cfg->egress_dns_port;
        n->ca_pem = cfg->egress_ca_pem ? strdup(cfg->egress_ca_pem) : NULL;
        n->nft = nft_ctx_new(NFT_CTX_DEFAULT);
        if (!n->nft || nft_ctx_buffer_error(n->nft) != 0 || nft_ctx_buffer_output(n->nft) != 0) {
                space_error_set(err, SPACE_E_INTERNAL, "libnftables: no context");
                goto fail;
        }
        uint32_t blocks = cfg->egress_subnet_bits >= 30 ? 1u : 1u << (30 - cfg->egress_subnet_bits);
        const char *dir = cfg->egress_block_dir[0] ? cfg->egress_block_dir : NS_NETWORK_BLOCK_DIR;
        if ((r = ns_uid_ranges_open_slots(dir, cfg->instance, cfg->state_dir, cfg->egress_subnet, 4, blocks, &n->blocks)) < 0) {
                space_error_errno(err, r, "open the host's egress address blocks (%s)", dir);
                goto fail;
        }
        if ((r = ns_uid_ranges_sweep(n->blocks, keep_recorded, n)) < 0) {
                space_error_errno(err, r, "sweep the host's egress address blocks");
                goto fail;
        }
        if (table_replace(n, why, sizeof(why)) < 0) {
                space_error_set(err, SPACE_E_INTERNAL, "nftables table inet %s: %s", n->table, why);
                goto fail;
        }
        *ret = n;
        return 0;
fail:
        ns_network_free(n);
        return -1;
}

void ns_network_free(struct ns_network *n)
{
        if (!n)
                return;
        int held = 0;
        if (n->nft && n->blocks && ns_uid_ranges_sweep(n->blocks, count_held, &held) == 0 && held == 0) {
                char cmd[128];
                snprintf(cmd, sizeof(cmd), "delete table inet %s\n", n->table);
                nft_run(n, cmd, NULL, 0);
        }
        if (n->nft)
                nft_ctx_free(n->nft);
        ns_uid_ranges_free(n->blocks);
        pthread_mutex_destroy(&n->nft_lock);
        free(n->ca_pem);
        free(n);
}

/* Inside the sandbox's network namespace (this thread only, and back): lo and eth0 up, the
 * address, the default route, no IPv6. */
static int configure_inside(const char *netns_path, uint32_t addr, uint32_t gateway)
{
        _cleanup_close_ int target = open(netns_path, O_RDONLY | O_CLOEXEC);
        _cleanup_close_ int home = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
        if (target < 0 || home < 0)
                return -errno;
        if (setns(target, CLONE_NEWNET) < 0)
                return -errno;
        int r = 0;
        _cleanup_close_ int fd = nl_socket();
        int eth = (int)if_nametoindex("eth0"), lo = (int)if_nametoindex("lo");
        write_sysctl("/proc/sys/net/ipv6/conf/eth0/disable_ipv6", "1");
        if (fd < 0)
                r = fd;
        else if (!eth || !lo)
                r = -ENODEV;
        else if ((r = link_up(fd, lo)) == 0 && (r = addr_add(fd, eth, addr, 30)) == 0 && (r = link_up(fd, eth)) == 0)
                r = default_route(fd, eth, gateway);
        /* A thread left in the sandbox's namespace would do the daemon's network work there. */
        if (setns(home, CLONE_NEWNET) < 0)
                abort();
        return r;
}

/* /etc/resolv.conf of the sandbox names the gateway, written beside and renamed over
 * whatever is there (a symlink included), resolved inside the rootfs. */
static int write_resolv_conf(const char *rootfs, uint32_t gateway)
{
        _cleanup_close_ int root = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root < 0)
                return -errno;
        struct open_how how = { .flags = O_PATH | O_DIRECTORY | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
        _cleanup_close_ int etc = (int)syscall(SYS_openat2, root, "etc", &how, sizeof(how));
        if (etc < 0)
                return errno == ENOENT ? 0 : -errno;
        char text[64], gw[INET_ADDRSTRLEN];
        struct in_addr in = { .s_addr = htonl(gateway) };
        inet_ntop(AF_INET, &in, gw, sizeof(gw));
        int len = snprintf(text, sizeof(text), "nameserver %s\n", gw);
        unlinkat(etc, ".resolv.conf.space", 0);
        _cleanup_close_ int fd = openat(etc, ".resolv.conf.space", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        if (write(fd, text, (size_t)len) != len || renameat(etc, ".resolv.conf.space", etc, "resolv.conf") < 0) {
                int e = errno ? -errno : -EIO;
                unlinkat(etc, ".resolv.conf.space", 0);
                return e;
        }
        return 0;
}

static int take_block(struct ns_network *n, const char *id, const char *run_dir, uint32_t *ret, struct space_error *err)
{
        char path[PATH_MAX + 32];
        block_record_path(n, run_dir, path, sizeof(path));
        uint32_t base = ns_uid_ranges_recorded(path);
        if (base) {
                *ret = base;
                return 0;
        }
        int r = ns_uid_ranges_take(n->blocks, id, &base);
        if (r == -ENOSPC)
                return space_error_set(err, SPACE_E_UNAVAILABLE, "no free egress address block on this host (--egress-subnet)");
        if (r < 0)
                return space_error_errno(err, r, "take an egress address block");
        if ((r = ns_uid_ranges_record(path, base)) < 0) {
                ns_uid_ranges_give(n->blocks, base, id);
                return space_error_errno(err, -r, "record the egress address block of %s", id);
        }
        *ret = base;
        return 0;
}

int ns_network_attach(struct ns_network *n, const char *id, const char *netns_path, const char *run_dir, const char *rootfs,
                      char *ret_addr, size_t size, struct space_error *err)
{
        char host[IFNAMSIZ], path[128];
        uint32_t base = 0;
        int r;
        int64_t t0 = now_us();
        host_name(n, id, host, sizeof(host));
        if (take_block(n, id, run_dir, &base, err) < 0)
                return -1;
        int64_t t_block = now_us();
        uint32_t gateway = base + 1, addr = base + 2;
        _cleanup_close_ int fd = nl_socket();
        if (fd < 0)
                return space_error_errno(err, -fd, "netlink");
        if (!if_nametoindex(host)) {
                _cleanup_close_ int netns = open(netns_path, O_RDONLY | O_CLOEXEC);
                if (netns < 0)
                        return space_error_errno(err, errno, "open the network namespace of %s", id);
                if ((r = veth_create(fd, host, netns)) < 0 && r != -EEXIST)
                        return space_error_errno(err, -r, "create the link %s of %s", host, id);
        }
        int64_t t_veth = now_us();
        int index = (int)if_nametoindex(host);
        if (!index)
                return space_error_errno(err, ENODEV, "link %s of %s", host, id);
        snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/disable_ipv6", host);
        write_sysctl(path, "1");
        snprintf(path, sizeof(path), "/proc/sys/net/ipv4/conf/%s/route_localnet", host);
        if ((r = write_sysctl(path, "1")) < 0 || (r = addr_add(fd, index, gateway, 30)) < 0 || (r = link_up(fd, index)) < 0)
                return space_error_errno(err, -r, "set up the host end %s", host);
        int64_t t_host = now_us();
        if ((r = configure_inside(netns_path, addr, gateway)) < 0)
                return space_error_errno(err, -r, "set up eth0 in %s", id);
        int64_t t_inside = now_us();
        if ((r = write_resolv_conf(rootfs, gateway)) < 0)
                return space_error_errno(err, -r, "write /etc/resolv.conf of %s", id);
        /* The sandbox's own files: one it made unreadable only costs it the CA. */
        if ((r = ns_trust_store_add(rootfs, n->ca_pem)) < 0)
                log_warn("network.trust_store", "sandbox=%s error=\"%s\" effect=\"its trust store lacks the platform CA\"", id,
                         strerror(-r));
        int64_t t_resolv = now_us();
        struct in_addr in = { .s_addr = htonl(addr) };
        inet_ntop(AF_INET, &in, ret_addr, (socklen_t)size);
        int64_t t_end = now_us();
        log_debug("network.attach_timing",
                  "sandbox=%s block_us=%lld veth_us=%lld host_us=%lld inside_us=%lld resolv_us=%lld "
                  "total_us=%lld",
                  id, (long long)(t_block - t0), (long long)(t_veth - t_block), (long long)(t_host - t_veth),
                  (long long)(t_inside - t_host), (long long)(t_resolv - t_inside), (long long)(t_end - t0));
        return 0;
}

int ns_network_detach(struct ns_network *n, const char *id, const char *run_dir)
{
        char host[IFNAMSIZ], path[PATH_MAX + 32];
        host_name(n, id, host, sizeof(host));
        block_record_path(n, run_dir, path, sizeof(path));
        uint32_t base = ns_uid_ranges_recorded(path);
        if (!base && !if_nametoindex(host))
                return 0;
        _cleanup_close_ int fd = nl_socket();
        if (fd >= 0 && if_nametoindex(host)) {
                int r = link_delete(fd, host);
                if (r < 0 && r != -ENODEV)
                        return r;
        }
        if (base) {
                int r = ns_uid_ranges_give(n->blocks, base, id);
                if (r < 0)
                        return r;
        }
        unlink(path);
        return 0;
}

int ns_network_address(struct ns_network *n, const char *run_dir, char *ret_addr, size_t size)
{
        char path[PATH_MAX + 32];
        block_record_path(n, run_dir, path, sizeof(path));
        uint32_t base = ns_uid_ranges_recorded(path);
        if (!base)
                return -ENOENT;
        struct in_addr in = { .s_addr = htonl(base + 2) };
        return inet_ntop(AF_INET, &in, ret_addr, (socklen_t)size) ? 0 : -ENOSPC;
}

int ns_network_netns_make(const char *path)
{
        _cleanup_close_ int home = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
        if (home < 0)
                return -errno;
        ns_network_netns_remove(path); /* what an interrupted earlier attempt left */
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        /* This thread only, and back: the bind mount keeps the new namespace alive. */
        if (unshare(CLONE_NEWNET) < 0)
                return -errno;
        int r = mount("/proc/thread-self/ns/net", path, NULL, MS_BIND, NULL) < 0 ? -errno : 0;
        if (setns(home, CLONE_NEWNET) < 0)
                abort(); /* a thread left in the sandbox's namespace would do the daemon's network work there */
        if (r == 0) {
                /* lo up inside, as a fresh namespace has it down */
                _cleanup_close_ int target = open(path, O_RDONLY | O_CLOEXEC);
                if (target < 0 || setns(target, CLONE_NEWNET) < 0)
                        r = -errno;
                else {
                        _cleanup_close_ int nl = nl_socket();
                        int lo = (int)if_nametoindex("lo");
                        r = nl < 0 ? nl : lo ? link_up(nl, lo) : -ENODEV;
                        if (setns(home, CLONE_NEWNET) < 0)
                                abort();
                }
        }
        if (r < 0)
                ns_network_netns_remove(path);
        return r;
}

void ns_network_netns_remove(const char *path)
{
        while (umount2(path, MNT_DETACH) == 0)
                ;
        unlink(path);
}
