/* One sandbox connection through the gateway: accepted (DNAT'd here by the host's nftables
 * rules), its first bytes read for a name, decided, dialled from the host's network, then
 * copied both ways until both sides are done — through the HTTP rewriter where it has
 * credentials or a read-only sandbox, and through two TLS sessions (egress_tls.h) when such a
 * connection is HTTPS. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/netfilter_ipv4.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "egress/egress_http_inject.h"
#include "egress/egress_loop.h"
#include "egress/egress_peek.h"
#include "egress/egress_rule.h"
#include "egress/egress_tls.h"

#define BUF_SIZE (64 * 1024)

enum conn_state { PEEKING, RESOLVING, CONNECTING, HANDSHAKING, SPLICING };

struct pipe_buf {
        uint8_t data[BUF_SIZE];
        size_t start, end;
        bool eof;  /* the reading side ended */
        bool shut; /* and the writing side was told */
        uint64_t total;
};

struct egress_conn {
        struct egress_conn *next, *prev;
        enum conn_state state;
        int client, server;
        struct egress_handle h_client, h_server;
        uint32_t src, orig;
        uint16_t orig_port;
        char sandbox[32];
        char name[256];
        int64_t started_ms, deadline_ms;
        struct egress_pending *pending;
        struct pipe_buf up, down; /* up: client → server (holds the peeked bytes first) */
        uint32_t dialled;
        bool dead; /* freed at the end of the loop's batch (egress_conn_reap): events may still name it */
        bool tls;  /* its first bytes were a TLS ClientHello */
        /* plain HTTP to a destination with credentials: its requests are rewritten (NULL: spliced) */
        struct egress_inject *inject;
        /* HTTPS to such a destination: intercepted (egress_tls.h), its plaintext rewritten */
        bool intercept;
        struct egress_tls *tls_pair;
        struct egress_loop *loop;
        char used[8][32]; /* the bindings put on its requests, each recorded once */
        size_t n_used;
};

static void ip_text(uint32_t a, char *buf)
{
        struct in_addr in = { .s_addr = htonl(a) };
        inet_ntop(AF_INET, &in, buf, INET_ADDRSTRLEN);
}

/* The decided connections (denied, or allowed and now over) go back to spaced as records
 * for its audit log: one JSON line each on the control socket, buffered, never waited for
 * (a spaced too slow to take them costs records, counted, not the traffic). */
static void conn_record(struct egress_loop *l, const struct egress_conn *c, const char *decision, const char *reason,
                        const char *src, const char *dst, const char *via)
{
        json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:i, s:s, s:s, s:s, s:s, s:I, s:I, s:I}", "op", "connection", "sandbox",
                              c->sandbox, "src", src, "dst", dst, "port", (int)c->orig_port, "name", c->name, "decision",
                              decision, "reason", reason, "dialled", via, "bytes_out", (json_int_t)c->up.total, "bytes_in",
                              (json_int_t)c->down.total, "duration_ms", (json_int_t)(egress_now_ms() - c->started_ms));
        char *line = j ? json_dumps(j, JSON_COMPACT) : NULL;
        json_decref(j);
        egress_record_line(l, line);
        free(line);
}

void egress_record_line(struct egress_loop *l, const char *line)
{
        size_t len = line ? strlen(line) : 0;
        if (!line || l->record_len + len + 1 > sizeof(l->record_buf)) {
                l->records_dropped++;
        } else {
                memcpy(l->record_buf + l->record_len, line, len);
                l->record_buf[l->record_len + len] = '\n';
                l->record_len += len + 1;
        }
        egress_record_flush(l);
}

void egress_record_flush(struct egress_loop *l)
{
        size_t done = 0;
        while (done < l->record_len) {
                ssize_t n = send(l->control_fd, l->record_buf + done, l->record_len - done, MSG_DONTWAIT | MSG_NOSIGNAL);
                if (n <= 0)
                        break;
                done += (size_t)n;
        }
        memmove(l->record_buf, l->record_buf + done, l->record_len - done);
        l->record_len -= done;
        if (l->records_dropped && l->record_len == 0) {
                egress_log("warn", "egress.records_dropped", "count=%llu effect=\"connections missing from the audit log\"",
                           (unsigned long long)l->records_dropped);
                l->records_dropped = 0;
        }
}

static void conn_log(struct egress_loop *l, const struct egress_conn *c, const char *decision, const char *reason)
{
        char src[INET_ADDRSTRLEN], dst[INET_ADDRSTRLEN], via[INET_ADDRSTRLEN] = "-";
        ip_text(c->src, src);
        ip_text(c->orig, dst);
        if (c->dialled)
                ip_text(c->dialled, via);
        egress_log("info", "egress.connection",
                   "sandbox=%s src=%s dst=%s port=%u name=\"%s\" decision=%s reason=\"%s\" dialled=%s bytes_out=%llu "
                   "bytes_in=%llu duration_ms=%lld",
                   c->sandbox[0] ? c->sandbox : "-", src, dst, c->orig_port, c->name, decision, reason, via,
                   (unsigned long long)c->up.total, (unsigned long long)c->down.total,
                   (long long)(egress_now_ms() - c->started_ms));
        if (c->sandbox[0] && (strcmp(decision, "deny") == 0 || strcmp(decision, "end") == 0))
                conn_record(l, c, strcmp(decision, "deny") == 0 ? "deny" : "allow", reason, src, dst, via);
}

/* A credential put on a request of c: one record for spaced's audit log (secret.used) per
 * binding and connection; never the value. */
static void credential_used(void *arg, const struct egress_credential *cr, const char *method)
{
        struct egress_conn *c = arg;
        for (size_t i = 0; i < c->n_used; i++)
                if (strcmp(c->used[i], cr->binding) == 0)
                        return;
        if (c->n_used < sizeof(c->used) / sizeof(c->used[0]))
                snprintf(c->used[c->n_used++], sizeof(c->used[0]), "%s", cr->binding);
        egress_log("info", "egress.secret_used", "sandbox=%s binding=%s secret=%s name=\"%s\" port=%u method=%s", c->sandbox,
                   cr->binding, cr->secret, c->name, c->orig_port, method);
        json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:s}", "op", "secret_used", "sandbox", c->sandbox, "binding",
                              cr->binding, "secret", cr->secret, "name", c->name, "port", (int)c->orig_port, "method", method);
        char *line = j ? json_dumps(j, JSON_COMPACT) : NULL;
        json_decref(j);
        egress_record_line(c->loop, line);
        free(line);
}

static void conn_free(struct egress_loop *l, struct egress_conn *c)
{
        if (c->inject) {
                explicit_bzero(c->inject, sizeof(*c->inject));
                explicit_bzero(c->up.data, sizeof(c->up.data)); /* rewritten heads held values */
                free(c->inject);
                c->inject = NULL;
        }
        egress_tls_free(c->tls_pair);
        c->tls_pair = NULL;
        if (c->pending)
                c->pending->used = false;
        c->pending = NULL;
        if (c->client >= 0)
                close(c->client);
        if (c->server >= 0)
                close(c->server);
        c->client = c->server = -1;
        if (c->prev)
                c->prev->next = c->next;
        else
                l->conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
        c->dead = true;
        c->next = l->graveyard;
        l->graveyard = c;
}

void egress_conn_reap(struct egress_loop *l)
{
        while (l->graveyard) {
                struct egress_conn *c = l->graveyard;
                l->graveyard = c->next;
                free(c);
        }
}

static void refuse(struct egress_loop *l, struct egress_conn *c, const char *reason)
{
        conn_log(l, c, "deny", reason);
        /* A reset, so the client sees a refusal rather than a clean end. */
        struct linger lg = { .l_onoff = 1, .l_linger = 0 };
        setsockopt(c->client, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
        conn_free(l, c);
}

static void watch(struct egress_loop *l, int fd, struct egress_handle *h, uint32_t events, bool add)
{
        struct epoll_event ev = { .events = events, .data.ptr = h };
        epoll_ctl(l->epfd, add ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &ev);
}

void egress_conn_accept(struct egress_loop *l)
{
        for (;;) {
                struct sockaddr_in peer;
                socklen_t plen = sizeof(peer);
                int fd = accept4(l->listen_fd, (struct sockaddr *)&peer, &plen, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (fd < 0)
                        return;
                struct egress_conn *c = calloc(1, sizeof(*c));
                if (!c) {
                        close(fd);
                        return;
                }
                c->client = fd;
                c->server = -1;
                c->loop = l;
                c->src = ntohl(peer.sin_addr.s_addr);
                c->started_ms = egress_now_ms();
                c->deadline_ms = c->started_ms + EGRESS_PEEK_TIMEOUT_MS;
                c->h_client = (struct egress_handle){ EGRESS_TAG_CLIENT, c };
                c->h_server = (struct egress_handle){ EGRESS_TAG_SERVER, c };
                c->next = l->conns;
                if (l->conns)
                        l->conns->prev = c;
                l->conns = c;
                struct sockaddr_in orig;
                socklen_t olen = sizeof(orig);
                if (getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, &orig, &olen) < 0) {
                        refuse(l, c, "no original destination");
                        continue;
                }
                c->orig = ntohl(orig.sin_addr.s_addr);
                c->orig_port = ntohs(orig.sin_port);
                const struct egress_map_entry *e = egress_map_find(&l->map, c->src);
                if (!e) {
                        refuse(l, c, "no policy for this source");
                        continue;
                }
                snprintf(c->sandbox, sizeof(c->sandbox), "%s", e->sandbox);
                watch(l, fd, &c->h_client, EPOLLIN, true);
        }
}

static bool refused_net(const struct egress_loop *l, uint32_t a)
{
        return (a & l->refuse_mask) == l->refuse_net;
}

/* Plain HTTP to a destination the sandbox has credentials for, or of a read-only sandbox:
 * its requests go through the rewriter (egress_http_inject.h), the bytes peeked so far first. */
static int inject_setup(struct egress_loop *l, struct egress_conn *c)
{
        const struct egress_map_entry *e = egress_map_find(&l->map, c->src);
        if ((c->tls && !c->intercept) || !c->name[0] || !e ||
            (!e->policy.read_only && !egress_credentials_any_for(&e->credentials, c->name, c->orig_port)))
                return 0;
        c->inject = calloc(1, sizeof(*c->inject));
        if (!c->inject)
                return -ENOMEM;
        size_t n = c->up.end - c->up.start;
        memcpy(c->inject->in, c->up.data + c->up.start, n); /* at most EGRESS_PEEK_MAX */
        c->inject->in_len = n;
        explicit_bzero(c->up.data, c->up.end);
        c->up.start = c->up.end = 0;
        return 0;
}

static void dial(struct egress_loop *l, struct egress_conn *c, uint32_t addr)
{
        c->dialled = addr;
        c->server = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (c->server < 0) {
                refuse(l, c, "socket");
                return;
        }
        if (c->intercept) {
                c->tls_pair = egress_tls_new(l->leaves, l->upstream_trust, c->name, c->client, c->server,
                                             c->up.data + c->up.start, c->up.end - c->up.start, (int64_t)time(NULL));
                if (!c->tls_pair) {
                        refuse(l, c, "intercept: no certificate for this name");
                        return;
                }
                c->up.start = c->up.end = 0;
        }
        if (inject_setup(l, c) < 0) {
                refuse(l, c, "out of memory");
                return;
        }
        int one = 1;
        setsockopt(c->server, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(c->orig_port), .sin_addr.s_addr = htonl(addr) };
        if (connect(c->server, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS) {
                refuse(l, c, "upstream refused");
                return;
        }
        c->state = CONNECTING;
        c->deadline_ms = egress_now_ms() + 10000;
        watch(l, c->client, &c->h_client, 0, false);
        watch(l, c->server, &c->h_server, EPOLLOUT, true);
}

/* The decision once the name (or its absence) is known and, for a name, its addresses. */
static void decide(struct egress_loop *l, struct egress_conn *c, const uint32_t *addrs, size_t n)
{
        const struct egress_map_entry *e = egress_map_find(&l->map, c->src);
        const char *name = c->name[0] ? c->name : NULL;
        if (!e) {
                refuse(l, c, "no policy for this source");
                return;
        }
        if (refused_net(l, c->orig) || egress_policy_decide(&e->policy, name, c->orig, c->orig_port) != EGRESS_ALLOW) {
                refuse(l, c, name ? "destination address denied for this name" : "destination denied");
                return;
        }
        /* TLS is intercepted where there is something to do to its requests: credentials for
         * its name, or a read-only sandbox; everything else stays end to end. */
        c->intercept = c->tls && name && l->leaves && l->upstream_trust &&
                (e->policy.read_only || egress_credentials_any_for(&e->credentials, name, c->orig_port));
        if (e->policy.read_only && ((c->tls && !c->intercept) || !name)) { /* what cannot be read cannot be held to reads */
                refuse(l, c, c->tls ? "read-only: TLS cannot be intercepted here" : "read-only: not an HTTP request");
                return;
        }
        if (!name) {
                dial(l, c, c->orig);
                return;
        }
        /* The name's own address: the one the sandbox dialled if it is one of them. */
        uint32_t pick = 0;
        for (size_t i = 0; i < n && !pick; i++)
                if (addrs[i] == c->orig)
                        pick = c->orig;
        for (size_t i = 0; i < n && !pick; i++)
                if (!refused_net(l, addrs[i]) && egress_policy_decide(&e->policy, name, addrs[i], c->orig_port) == EGRESS_ALLOW)
                        pick = addrs[i];
        if (!pick || refused_net(l, pick) || egress_policy_decide(&e->policy, name, pick, c->orig_port) != EGRESS_ALLOW) {
                refuse(l, c, n ? "no allowed address for this name" : "name does not resolve");
                return;
        }
        dial(l, c, pick);
}

void egress_conn_resolved(struct egress_loop *l, struct egress_conn *c, const uint32_t *addrs, size_t n, bool ok)
{
        c->pending = NULL;
        if (c->dead)
                return;
        if (!ok) {
                refuse(l, c, "name did not resolve");
                return;
        }
        decide(l, c, addrs, n);
}

static void named(struct egress_loop *l, struct egress_conn *c, const char *raw)
{
        const struct egress_map_entry *e = egress_map_find(&l->map, c->src);
        struct in_addr literal;
        if (inet_pton(AF_INET, raw, &literal) == 1) { /* an address as the name: decided as one */
                decide(l, c, NULL, 0);
                return;
        }
        if (!egress_name_normalize(raw, c->name, sizeof(c->name))) {
                refuse(l, c, "malformed name");
                return;
        }
        if (!e || egress_policy_name_denied(&e->policy, c->name)) {
                refuse(l, c, "name denied");
                return;
        }
        struct egress_pending *p;
        if (egress_resolve(l, c->name, &p) < 0) {
                refuse(l, c, "resolver unavailable");
                return;
        }
        p->conn = c;
        p->src = c->src;
        c->pending = p;
        c->state = RESOLVING;
        watch(l, c->client, &c->h_client, 0, false);
}

static void peek(struct egress_loop *l, struct egress_conn *c, bool timed_out)
{
        if (!timed_out) {
                size_t room = EGRESS_PEEK_MAX - c->up.end;
                ssize_t n = room ? recv(c->client, c->up.data + c->up.end, room, 0) : 0;
                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        return;
                if (n <= 0 && room) {
                        conn_log(l, c, "closed", "client left before naming a destination");
                        conn_free(l, c);
                        return;
                }
                c->up.end += (size_t)n;
                c->up.total += (uint64_t)n;
        }
        char raw[256];
        enum egress_peek_result r = egress_peek_name(c->up.data, c->up.end, raw, sizeof(raw));
        if (r == EGRESS_PEEK_MORE && !timed_out && c->up.end < EGRESS_PEEK_MAX)
                return;
        if (r == EGRESS_PEEK_MALFORMED) {
                refuse(l, c, "malformed TLS or HTTP");
                return;
        }
        if (r == EGRESS_PEEK_MORE && c->up.end > 0) {
                /* A ClientHello or request begun and not finished in time: never dialled
                 * without the name it was about to give. */
                refuse(l, c, "incomplete TLS or HTTP");
                return;
        }
        c->tls = c->up.end > 0 && c->up.data[0] == 0x16; /* a TLS handshake record */
        if (r == EGRESS_PEEK_NAME)
                named(l, c, raw);
        else
                decide(l, c, NULL, 0); /* no name, or nothing sent (a server speaks first): by address alone */
}

static void update_interest(struct egress_loop *l, struct egress_conn *c)
{
        uint32_t ce = 0, se = 0;
        if (!c->up.eof && (c->inject ? c->inject->in_len < sizeof(c->inject->in) : c->up.end < BUF_SIZE))
                ce |= EPOLLIN;
        if (c->down.end > c->down.start)
                ce |= EPOLLOUT;
        if (!c->down.eof && c->down.end < BUF_SIZE)
                se |= EPOLLIN;
        if (c->up.end > c->up.start)
                se |= EPOLLOUT;
        watch(l, c->client, &c->h_client, ce, false);
        watch(l, c->server, &c->h_server, se, false);
}

/* One side's bytes: its socket's, or the plaintext of its TLS session when intercepted. */
static ssize_t side_recv(struct egress_conn *c, bool server_side, void *buf, size_t n)
{
        return c->tls_pair ? egress_tls_recv(c->tls_pair, server_side, buf, n)
                           : recv(server_side ? c->server : c->client, buf, n, 0);
}

static ssize_t side_send(struct egress_conn *c, bool server_side, const void *buf, size_t n)
{
        return c->tls_pair ? egress_tls_send(c->tls_pair, server_side, buf, n)
                           : send(server_side ? c->server : c->client, buf, n, MSG_NOSIGNAL);
}

static int flush(struct egress_conn *c, bool to_server, struct pipe_buf *b, bool *ret_error);

/* Moves what can be moved from one side to the other; -1 when the connection is over. */
static int pump(struct egress_conn *c, bool from_server, struct pipe_buf *b, bool *ret_error)
{
        if (!b->eof && b->end < BUF_SIZE) {
                ssize_t n = side_recv(c, from_server, b->data + b->end, BUF_SIZE - b->end);
                if (n > 0) {
                        b->end += (size_t)n;
                        b->total += (uint64_t)n;
                } else if (n == 0) {
                        b->eof = true;
                } else if (errno != EAGAIN && errno != EINTR) {
                        *ret_error = true;
                        return -1;
                }
        }
        return flush(c, !from_server, b, ret_error);
}

/* pump() for the client side of an injected connection: what the client sent goes through
 * the rewriter (on the credentials its sandbox has now) before it is sent on. */
static int pump_inject(struct egress_loop *l, struct egress_conn *c, bool *ret_error)
{
        struct pipe_buf *b = &c->up;
        struct egress_inject *ij = c->inject;
        if (!b->eof && ij->in_len < sizeof(ij->in)) {
                ssize_t n = side_recv(c, false, ij->in + ij->in_len, sizeof(ij->in) - ij->in_len);
                if (n > 0) {
                        ij->in_len += (size_t)n;
                        b->total += (uint64_t)n;
                } else if (n == 0) {
                        b->eof = true;
                } else if (errno != EAGAIN && errno != EINTR) {
                        *ret_error = true;
                        return -1;
                }
        }
        const struct egress_map_entry *e = egress_map_find(&l->map, c->src);
        if (!e) {
                *ret_error = true;
                return -1;
        }
        size_t w = 0;
        int r = ij->in_len ? egress_inject_run(ij, &e->credentials, c->name, c->orig_port, e->policy.read_only, b->data + b->end,
                                               BUF_SIZE - b->end, &w, credential_used, c)
                           : 0;
        if (r < 0) {
                conn_log(l, c, "deny",
                         r == -EACCES ? "read-only: only GET, HEAD and OPTIONS pass"
                                      : "request the gateway cannot follow for its credentials or read-only rule");
                *ret_error = true;
                return -1;
        }
        b->end += w;
        if (b->eof && w == 0 && ij->in_len && b->end == b->start) { /* a request the client never finished */
                explicit_bzero(ij->in, ij->in_len);
                ij->in_len = 0;
        }
        return flush(c, true, b, ret_error);
}

/* Sends what b holds; at its end and the reader's, the write side is shut. */
static int flush(struct egress_conn *c, bool to_server, struct pipe_buf *b, bool *ret_error)
{
        while (b->end > b->start) {
                ssize_t n = side_send(c, to_server, b->data + b->start, b->end - b->start);
                if (n < 0) {
                        if (errno == EAGAIN || errno == EINTR)
                                break;
                        *ret_error = true;
                        return -1;
                }
                b->start += (size_t)n;
        }
        if (b->start == b->end)
                b->start = b->end = 0;
        if (b->eof && b->end == 0 && !b->shut) {
                if (c->tls_pair)
                        egress_tls_shut(c->tls_pair, to_server);
                else
                        shutdown(to_server ? c->server : c->client, SHUT_WR);
                b->shut = true;
        }
        return 0;
}

void egress_conn_event(struct egress_loop *l, struct egress_conn *c, bool server_side, uint32_t events)
{
        if (c->dead)
                return;
        if (c->state == PEEKING) {
                peek(l, c, false);
                return;
        }
        if (!server_side && (c->state == RESOLVING || c->state == CONNECTING) && (events & (EPOLLHUP | EPOLLERR))) {
                /* the client went away while its name resolved or its upstream answered (epoll
                 * reports that even with no interest: it would be reported again and again) */
                conn_log(l, c, "closed", "client left before the upstream answered");
                conn_free(l, c);
                return;
        }
        if (c->state == CONNECTING && server_side) {
                int soerr = 0;
                socklen_t len = sizeof(soerr);
                if (getsockopt(c->server, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0 || soerr) {
                        refuse(l, c, "upstream unreachable");
                        return;
                }
                conn_log(l, c, "allow", c->tls_pair ? "connected, intercepted" : "connected");
                c->state = c->tls_pair ? HANDSHAKING : SPLICING;
        }
        if (c->state == HANDSHAKING) {
                uint32_t ce, se;
                char why[512];
                int r = egress_tls_handshake(c->tls_pair, &ce, &se, why, sizeof(why));
                if (r < 0) {
                        refuse(l, c, why);
                        return;
                }
                watch(l, c->client, &c->h_client, ce, false);
                watch(l, c->server, &c->h_server, se, false);
                if (r > 0)
                        return;
                c->state = SPLICING;
        }
        if (c->state != SPLICING)
                return;
        /* A TLS session may hold decrypted bytes epoll does not know of: pumped until none
         * is left that there is room for. */
        for (int round = 0; round < 64; round++) {
                bool error = false;
                if ((c->inject ? pump_inject(l, c, &error) : pump(c, false, &c->up, &error)) < 0 ||
                    pump(c, true, &c->down, &error) < 0 || (c->up.shut && c->down.shut)) {
                        conn_log(l, c, "end", error ? "reset" : "done");
                        conn_free(l, c);
                        return;
                }
                if (!c->tls_pair)
                        break;
                bool up_room = !c->up.eof && (c->inject ? c->inject->in_len < sizeof(c->inject->in) : c->up.end < BUF_SIZE);
                bool down_room = !c->down.eof && c->down.end < BUF_SIZE;
                if (!(up_room && egress_tls_pending(c->tls_pair, false)) && !(down_room && egress_tls_pending(c->tls_pair, true)))
                        break;
        }
        update_interest(l, c);
}

void egress_conn_recheck(struct egress_loop *l)
{
        struct egress_conn *c = l->conns, *next;
        for (; c; c = next) {
                next = c->next;
                /* Peeking or resolving: decided later, on the map as it is then. */
                if (c->state != CONNECTING && c->state != HANDSHAKING && c->state != SPLICING)
                        continue;
                const struct egress_map_entry *e = egress_map_find(&l->map, c->src);
                const char *name = c->name[0] ? c->name : NULL;
                if (e && egress_policy_decide(&e->policy, name, c->orig, c->orig_port) == EGRESS_ALLOW &&
                    egress_policy_decide(&e->policy, name, c->dialled, c->orig_port) == EGRESS_ALLOW &&
                    (!e->policy.read_only || c->inject))
                        continue;
                /* Reset both ways: neither side takes it for a clean end. */
                struct linger lg = { .l_onoff = 1, .l_linger = 0 };
                setsockopt(c->server, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
                refuse(l, c,
                       !e                                          ? "sandbox left the map"
                               : e->policy.read_only && !c->inject ? "read-only by a new policy"
                                                                   : "denied by a new policy");
        }
}

void egress_conn_tick(struct egress_loop *l, int64_t now_ms)
{
        struct egress_conn *c = l->conns, *next;
        for (; c; c = next) {
                next = c->next;
                if (c->state == PEEKING && now_ms >= c->deadline_ms)
                        peek(l, c, true);
                else if (c->state == CONNECTING && now_ms >= c->deadline_ms)
                        refuse(l, c, "upstream did not answer");
                else if (c->state == HANDSHAKING && now_ms >= c->deadline_ms)
                        refuse(l, c, "TLS handshake not finished in time");
        }
}
