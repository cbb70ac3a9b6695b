/* space-egress: the egress gateway of one spaced (docs/network.md). spaced binds the
 * sockets and starts it with them:
 *   space-egress --listen-fd N --dns-fd N --control-fd N --resolver A.B.C.D[:PORT] --refuse CIDR
 *                [--log-format text|json] [--ca-cert FILE --ca-key FILE] [--upstream-ca FILE]
 * --listen-fd: TCP on 127.0.0.1, where the host's nftables rules DNAT every TCP connection of
 * a sandbox; --dns-fd: UDP, where they DNAT its DNS; --control-fd: a stream on which spaced
 * sends the source address → policy map (egress_map.h), one JSON object a line; --refuse: the
 * sandboxes' own subnet, never dialled; --ca-cert, --ca-key: the platform CA
 * (runtime/platform_ca.h) the leaves of intercepted TLS are minted with (egress_leaf.h),
 * read before the gateway drops to nobody; --upstream-ca: the CA bundle intercepted
 * upstreams are verified against (default the host's, egress_tls.h). It exits when the control socket closes (spaced
 * went away: a new spaced starts a new gateway). One epoll loop, no threads. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "egress/egress_leaf.h"
#include "egress/egress_loop.h"
#include "egress/egress_tls.h"
#include "egress/egress_rule.h"
#include "spaced/log.h"

int64_t egress_now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* spaced's own log lines (spaced/log.h), in the format spaced was told (--log-format). */
void egress_log(const char *level, const char *event, const char *fmt, ...)
{
        enum log_level lv = LOG_INFO;
        (void)log_parse_level(level, &lv);
        va_list ap;
        va_start(ap, fmt);
        log_eventv(lv, event, fmt, ap);
        va_end(ap);
}

static void watch(struct egress_loop *l, int fd, struct egress_handle *h)
{
        struct epoll_event ev = { .events = EPOLLIN, .data.ptr = h };
        epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev);
}

int egress_resolve(struct egress_loop *l, const char *name, struct egress_pending **ret)
{
        struct egress_pending *p = NULL;
        for (size_t i = 0; i < EGRESS_PENDING_MAX && !p; i++)
                if (!l->pending[i].used)
                        p = &l->pending[i];
        if (!p)
                return -EBUSY;
        uint8_t msg[EGRESS_DNS_MAX];
        uint16_t id;
        if (getrandom(&id, sizeof(id), 0) != sizeof(id))
                return -EIO;
        size_t len = egress_dns_build_query(id, name, EGRESS_DNS_A, msg, sizeof(msg));
        if (!len)
                return -EINVAL;
        if (sendto(l->resolver_fd, msg, len, 0, (struct sockaddr *)&l->resolver, sizeof(l->resolver)) < 0)
                return -errno;
        memset(p, 0, sizeof(*p));
        p->used = true;
        p->id = id;
        p->deadline_ms = egress_now_ms() + EGRESS_RESOLVE_TIMEOUT_MS;
        snprintf(p->name, sizeof(p->name), "%s", name);
        *ret = p;
        return 0;
}

static void dns_reply(struct egress_loop *l, const struct sockaddr_in *to, const struct egress_dns_question *q, int rcode,
                      const uint32_t *addrs, size_t n, uint32_t ttl)
{
        uint8_t out[EGRESS_DNS_MAX];
        size_t len = egress_dns_build_reply(q, rcode, addrs, n, ttl, out, sizeof(out));
        if (len)
                sendto(l->dns_fd, out, len, 0, (const struct sockaddr *)to, sizeof(*to));
}

static void dns_log(uint32_t src, const char *sandbox, const char *name, unsigned qtype, const char *answer)
{
        char s[INET_ADDRSTRLEN];
        struct in_addr in = { .s_addr = htonl(src) };
        inet_ntop(AF_INET, &in, s, sizeof(s));
        egress_log("info", "egress.dns", "sandbox=%s src=%s name=\"%s\" qtype=%u answer=%s", sandbox, s, name, qtype, answer);
}

/* A sandbox's DNS query: only names its policy allows are resolved, and only the addresses
 * it would allow are answered; everything else is NXDOMAIN, so DNS is not a way out. */
static void dns_query(struct egress_loop *l)
{
        uint8_t msg[EGRESS_DNS_MAX * 2];
        struct sockaddr_in from;
        socklen_t flen = sizeof(from);
        ssize_t n = recvfrom(l->dns_fd, msg, sizeof(msg), MSG_DONTWAIT, (struct sockaddr *)&from, &flen);
        struct egress_dns_question q;
        char name[256];
        if (n <= 0 || flen != sizeof(from) || egress_dns_parse_query(msg, (size_t)n, &q) < 0)
                return; /* not a query: no answer at all */
        uint32_t src = ntohl(from.sin_addr.s_addr);
        const struct egress_map_entry *e = egress_map_find(&l->map, src);
        if (!e || q.qclass != 1 || !egress_name_normalize(q.name, name, sizeof(name)) ||
            egress_policy_name_denied(&e->policy, name)) {
                bool valid = egress_name_normalize(q.name, name, sizeof(name));
                dns_log(src, e ? e->sandbox : "-", valid ? name : "(malformed)", q.qtype, e ? "nxdomain" : "refused");
                dns_reply(l, &from, &q, e ? EGRESS_DNS_NXDOMAIN : EGRESS_DNS_REFUSED, NULL, 0, 0);
                return;
        }
        if (q.qtype != EGRESS_DNS_A) { /* IPv4 only: an allowed name has no other records */
                dns_reply(l, &from, &q, EGRESS_DNS_NOERROR, NULL, 0, 0);
                return;
        }
        struct egress_pending *p;
        if (egress_resolve(l, name, &p) < 0) {
                dns_reply(l, &from, &q, EGRESS_DNS_SERVFAIL, NULL, 0, 0);
                return;
        }
        p->for_client = true;
        p->client = from;
        p->query = q;
        p->src = src;
}

static void pending_done(struct egress_loop *l, struct egress_pending *p, const uint32_t *addrs, size_t n, int rcode,
                         uint32_t ttl, bool ok)
{
        p->used = false;
        if (!p->for_client) {
                if (p->conn)
                        egress_conn_resolved(l, p->conn, addrs, n, ok && rcode == EGRESS_DNS_NOERROR);
                return;
        }
        const struct egress_map_entry *e = egress_map_find(&l->map, p->src);
        uint32_t allowed[EGRESS_ADDRS_MAX];
        size_t k = 0;
        for (size_t i = 0; e && ok && i < n; i++)
                if ((addrs[i] & l->refuse_mask) != l->refuse_net &&
                    egress_policy_decide(&e->policy, p->name, addrs[i], 0) == EGRESS_ALLOW)
                        allowed[k++] = addrs[i];
        if (!ok) {
                dns_reply(l, &p->client, &p->query, EGRESS_DNS_SERVFAIL, NULL, 0, 0);
                return;
        }
        dns_log(p->src, e ? e->sandbox : "-", p->name, p->query.qtype, k ? "allowed" : "nxdomain");
        dns_reply(l, &p->client, &p->query, k ? EGRESS_DNS_NOERROR : EGRESS_DNS_NXDOMAIN, allowed, k,
                  ttl < 5            ? 5
                          : ttl > 60 ? 60
                                     : ttl);
}

static void resolver_answer(struct egress_loop *l)
{
        uint8_t msg[4096];
        struct sockaddr_in from;
        socklen_t flen = sizeof(from);
        ssize_t n = recvfrom(l->resolver_fd, msg, sizeof(msg), MSG_DONTWAIT, (struct sockaddr *)&from, &flen);
        if (n < 12 || from.sin_addr.s_addr != l->resolver.sin_addr.s_addr || from.sin_port != l->resolver.sin_port)
                return;
        uint16_t id = (uint16_t)(msg[0] << 8 | msg[1]);
        for (size_t i = 0; i < EGRESS_PENDING_MAX; i++) {
                struct egress_pending *p = &l->pending[i];
                uint32_t addrs[EGRESS_ADDRS_MAX], ttl;
                size_t count;
                int rcode;
                if (!p->used || p->id != id)
                        continue;
                if (egress_dns_parse_answer(msg, (size_t)n, id, addrs, EGRESS_ADDRS_MAX, &count, &rcode, &ttl) < 0)
                        return;
                pending_done(l, p, addrs, count, rcode, ttl, true);
                return;
        }
}

static int control_read(struct egress_loop *l)
{
        ssize_t n = read(l->control_fd, l->control_buf + l->control_len, sizeof(l->control_buf) - 1 - l->control_len);
        if (n < 0)
                return errno == EAGAIN || errno == EINTR ? 0 : -errno;
        if (n == 0)
                return -EPIPE;
        l->control_len += (size_t)n;
        l->control_buf[l->control_len] = '\0';
        char *line = l->control_buf, *nl;
        bool changed = false;
        while ((nl = strchr(line, '\n'))) {
                *nl = '\0';
                char why[256] = "";
                if (egress_map_apply(&l->map, line, why, sizeof(why)) < 0)
                        egress_log("warn", "egress.control_refused", "reason=\"%s\"", why);
                else
                        changed = true;
                line = nl + 1;
        }
        /* Open connections follow the new map at once: the ones it denies are closed. */
        if (changed)
                egress_conn_recheck(l);
        size_t rest = l->control_len - (size_t)(line - l->control_buf);
        if (rest == sizeof(l->control_buf) - 1)
                return -EMSGSIZE;
        memmove(l->control_buf, line, rest);
        /* the lines read held credentials' values: nothing of them stays behind */
        explicit_bzero(l->control_buf + rest, l->control_len - rest);
        l->control_len = rest;
        return 0;
}

static void tick(struct egress_loop *l)
{
        int64_t now = egress_now_ms();
        for (size_t i = 0; i < EGRESS_PENDING_MAX; i++)
                if (l->pending[i].used && now >= l->pending[i].deadline_ms)
                        pending_done(l, &l->pending[i], NULL, 0, EGRESS_DNS_SERVFAIL, 0, false);
        egress_conn_tick(l, now);
}

static int parse_addr_port(const char *text, uint16_t default_port, struct sockaddr_in *ret)
{
        char buf[64];
        snprintf(buf, sizeof(buf), "%s", text);
        char *colon = strchr(buf, ':');
        unsigned long port = default_port;
        if (colon) {
                *colon = '\0';
                port = strtoul(colon + 1, NULL, 10);
        }
        memset(ret, 0, sizeof(*ret));
        ret->sin_family = AF_INET;
        ret->sin_port = htons((uint16_t)port);
        return port > 0 && port < 65536 && inet_pton(AF_INET, buf, &ret->sin_addr) == 1 ? 0 : -EINVAL;
}

/* Nothing of the gateway needs root once it has its sockets. */
static int drop_privileges(void)
{
        if (getuid() != 0)
                return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
                return -errno;
        return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ? -errno : 0;
}

int main(int argc, char **argv)
{
        static struct egress_loop loop;
        struct egress_loop *l = &loop;
        const char *resolver = NULL, *refuse = NULL, *ca_cert = NULL, *ca_key = NULL, *upstream_ca = EGRESS_TLS_HOST_CA;
        json_erase_on_free(); /* policy lines carry credentials' values (cleanup.h) */
        l->listen_fd = l->dns_fd = l->control_fd = -1;
        for (int i = 1; i + 1 < argc; i += 2) {
                if (strcmp(argv[i], "--listen-fd") == 0)
                        l->listen_fd = atoi(argv[i + 1]);
                else if (strcmp(argv[i], "--dns-fd") == 0)
                        l->dns_fd = atoi(argv[i + 1]);
                else if (strcmp(argv[i], "--control-fd") == 0)
                        l->control_fd = atoi(argv[i + 1]);
                else if (strcmp(argv[i], "--resolver") == 0)
                        resolver = argv[i + 1];
                else if (strcmp(argv[i], "--refuse") == 0)
                        refuse = argv[i + 1];
                else if (strcmp(argv[i], "--ca-cert") == 0)
                        ca_cert = argv[i + 1];
                else if (strcmp(argv[i], "--ca-key") == 0)
                        ca_key = argv[i + 1];
                else if (strcmp(argv[i], "--upstream-ca") == 0)
                        upstream_ca = argv[i + 1];
                else if (strcmp(argv[i], "--log-format") == 0) {
                        enum log_format fmt = LOG_FORMAT_TEXT;
                        (void)log_parse_format(argv[i + 1], &fmt);
                        log_set_format(fmt);
                }
        }
        struct egress_rule refused;
        char why[600];
        if (l->listen_fd < 3 || l->dns_fd < 3 || l->control_fd < 3 || !resolver ||
            parse_addr_port(resolver, 53, &l->resolver) < 0 || !refuse ||
            egress_rule_parse(refuse, EGRESS_DENY, &refused, why, sizeof(why)) < 0 || refused.kind != EGRESS_RULE_CIDR) {
                fprintf(stderr,
                        "usage: space-egress --listen-fd N --dns-fd N --control-fd N --resolver ADDR[:PORT] "
                        "--refuse CIDR (started by spaced)\n");
                return 2;
        }
        l->refuse_net = refused.net;
        /* spaced's sockets come blocking: the loop must never wait in accept or recv */
        fcntl(l->listen_fd, F_SETFL, fcntl(l->listen_fd, F_GETFL) | O_NONBLOCK);
        fcntl(l->dns_fd, F_SETFL, fcntl(l->dns_fd, F_GETFL) | O_NONBLOCK);
        fcntl(l->control_fd, F_SETFL, fcntl(l->control_fd, F_GETFL) | O_NONBLOCK);
        l->refuse_mask = refused.mask;
        signal(SIGPIPE, SIG_IGN);
        l->resolver_fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        l->epfd = epoll_create1(EPOLL_CLOEXEC);
        if (l->resolver_fd < 0 || l->epfd < 0) {
                egress_log("error", "egress.start_failed", "error=\"%s\"", strerror(errno));
                return 1;
        }
        /* Without its CA the gateway intercepts nothing: what would be intercepted is denied. */
        if (ca_cert && ca_key && egress_leaf_minter_open(ca_cert, ca_key, &l->leaves, why, sizeof(why)) < 0)
                egress_log("error", "egress.ca_unusable", "error=\"%s\"", why);
        if (l->leaves && !(l->upstream_trust = egress_tls_upstream_trust(upstream_ca, why, sizeof(why))))
                egress_log("error", "egress.upstream_ca_unusable", "error=\"%s\"", why);
        int r = drop_privileges();
        if (r < 0) {
                egress_log("error", "egress.start_failed", "error=\"drop privileges: %s\"", strerror(-r));
                return 1;
        }
        l->h_listen = (struct egress_handle){ EGRESS_TAG_LISTEN, NULL };
        l->h_dns = (struct egress_handle){ EGRESS_TAG_DNS, NULL };
        l->h_control = (struct egress_handle){ EGRESS_TAG_CONTROL, NULL };
        l->h_resolver = (struct egress_handle){ EGRESS_TAG_RESOLVER, NULL };
        watch(l, l->listen_fd, &l->h_listen);
        watch(l, l->dns_fd, &l->h_dns);
        watch(l, l->control_fd, &l->h_control);
        watch(l, l->resolver_fd, &l->h_resolver);
        egress_log("info", "egress.started", "pid=%d resolver=%s refuse=%s", (int)getpid(), resolver, refuse);
        for (;;) {
                struct epoll_event events[64];
                int n = epoll_wait(l->epfd, events, 64, 250);
                if (n < 0 && errno != EINTR)
                        return 1;
                for (int i = 0; i < n; i++) {
                        struct egress_handle *h = events[i].data.ptr;
                        switch (h->tag) {
                        case EGRESS_TAG_LISTEN:
                                egress_conn_accept(l);
                                break;
                        case EGRESS_TAG_DNS:
                                dns_query(l);
                                break;
                        case EGRESS_TAG_RESOLVER:
                                resolver_answer(l);
                                break;
                        case EGRESS_TAG_CONTROL:
                                if ((r = control_read(l)) < 0) {
                                        egress_log("info", "egress.stopped", "reason=\"control socket: %s\"", strerror(-r));
                                        return 0;
                                }
                                break;
                        case EGRESS_TAG_CLIENT:
                        case EGRESS_TAG_SERVER:
                                egress_conn_event(l, h->owner, h->tag == EGRESS_TAG_SERVER, events[i].events);
                                break;
                        }
                }
                tick(l);
                egress_record_flush(l);
                egress_conn_reap(l);
        }
}
