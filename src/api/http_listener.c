#include "api/http_listener.h"

#include <errno.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "api/http_error_page.h"
#include "api/tls_credentials.h"
#include "spaced/log.h"
#include "spaced/spaced_context.h"

/* One per connection (MHD's socket context), from MHD_CONNECTION_NOTIFY_STARTED to
 * MHD_CONNECTION_NOTIFY_CLOSED. MHD calls CLOSED before it closes the socket, and the peer
 * leaves the pending list under the lock there: so while a peer is on the list its fd is
 * the connection's, and shutdown() on it cannot hit a reused descriptor. */
struct http_peer {
        struct http_peer *prev, *next; /* on the pending list while pending */
        struct http_listener *listener;
        int fd;
        bool pending;  /* no request authenticated yet, and not cut */
        char *raw_uri; /* the request target of its current request as it came (percent-encoded, with the query) */
        /* an upgrade answer queued and not taken yet: freed if the connection closes first */
        void (*upgrade_free)(void *cls);
        void *upgrade_cls;
};

struct http_listener {
        struct MHD_Daemon *daemon;
        pthread_mutex_t lock;
        struct http_peer *head, *tail; /* pending connections, oldest first */
        unsigned npending, max_pending;
        unsigned idle_timeout_s;
        bool e2b_errors;
        atomic_ulong evicted;
        /* Where libmicrohttpd's words go: the starter's reason while MHD_start_daemon runs,
         * the log after (a TLS handshake a client gave up, say); under lock. */
        struct start_log {
                char *buf;
                size_t size;
        } start_log;
};

static void pending_unlink(struct http_listener *l, struct http_peer *p)
{
        if (p->prev)
                p->prev->next = p->next;
        else
                l->head = p->next;
        if (p->next)
                p->next->prev = p->prev;
        else
                l->tail = p->prev;
        p->prev = p->next = NULL;
        p->pending = false;
        l->npending--;
}

static void pending_append(struct http_listener *l, struct http_peer *p)
{
        p->prev = l->tail;
        p->next = NULL;
        if (l->tail)
                l->tail->next = p;
        else
                l->head = p;
        l->tail = p;
        p->pending = true;
        l->npending++;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context, enum MHD_ConnectionNotificationCode code)
{
        struct http_listener *l = cls;
        struct http_peer *p = *socket_context;
        if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
                if (!p)
                        return;
                pthread_mutex_lock(&l->lock);
                if (p->pending)
                        pending_unlink(l, p);
                pthread_mutex_unlock(&l->lock);
                if (p->upgrade_free) /* the 101 never went out: what would have run it goes */
                        p->upgrade_free(p->upgrade_cls);
                free(p->raw_uri);
                free(p);
                *socket_context = NULL;
                return;
        }
        const union MHD_ConnectionInfo *info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!info)
                return;
        /* Streams send small events that must not wait for Nagle (fails harmlessly on unix
         * sockets). */
        int one = 1;
        (void)setsockopt(info->connect_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        p = calloc(1, sizeof(*p));
        if (!p)
                return; /* untracked: it still has the header timeout */
        p->listener = l;
        p->fd = info->connect_fd;
        *socket_context = p;
        unsigned cut = 0;
        pthread_mutex_lock(&l->lock);
        pending_append(l, p);
        while (l->npending > l->max_pending) {
                struct http_peer *oldest = l->head;
                pending_unlink(l, oldest);
                (void)shutdown(oldest->fd, SHUT_RDWR); /* its thread sees the end and closes it */
                cut++;
        }
        pthread_mutex_unlock(&l->lock);
        if (cut) {
                atomic_fetch_add(&l->evicted, cut);
                log_debug("http.evicted", "connections=%u reason=\"too many unauthenticated connections\"", cut);
        }
}

/* Called by libmicrohttpd with each request's target before it decodes it: kept for the
 * requests that pass it on (the port proxy). Returns no request context of its own. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
        (void)cls;
        const union MHD_ConnectionInfo *info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        struct http_peer *p = info ? info->socket_context : NULL;
        if (p) {
                free(p->raw_uri);
                p->raw_uri = strdup(uri);
        }
        return NULL;
}

static struct http_peer *peer_of(struct MHD_Connection *conn)
{
        const union MHD_ConnectionInfo *info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        return info ? info->socket_context : NULL;
}

bool http_listener_upgrade_pending(struct MHD_Connection *conn, void (*free_fn)(void *cls), void *cls)
{
        struct http_peer *p = peer_of(conn);
        if (!p)
                return false;
        p->upgrade_free = free_fn;
        p->upgrade_cls = cls;
        return true;
}

void http_listener_upgrade_taken(struct MHD_Connection *conn)
{
        struct http_peer *p = peer_of(conn);
        if (p) {
                p->upgrade_free = NULL;
                p->upgrade_cls = NULL;
        }
}

const char *http_listener_raw_uri(struct MHD_Connection *conn)
{
        const union MHD_ConnectionInfo *info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        const struct http_peer *p = info ? info->socket_context : NULL;
        return p ? p->raw_uri : NULL;
}

void http_listener_authenticated(struct MHD_Connection *conn)
{
        const union MHD_ConnectionInfo *info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        struct http_peer *p = info ? info->socket_context : NULL;
        if (!p)
                return;
        struct http_listener *l = p->listener;
        pthread_mutex_lock(&l->lock);
        bool was_pending = p->pending;
        if (was_pending)
                pending_unlink(l, p);
        pthread_mutex_unlock(&l->lock);
        /* A connection cut meanwhile keeps its short timeout: it is closing anyway. */
        if (was_pending)
                MHD_set_connection_option(conn, MHD_CONNECTION_OPTION_TIMEOUT, l->idle_timeout_s);
}

bool http_listener_e2b_errors(struct MHD_Connection *conn)
{
        const union MHD_ConnectionInfo *info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        const struct http_peer *p = info ? info->socket_context : NULL;
        return p && p->listener->e2b_errors;
}

int http_listener_bind(const char *addr, uint16_t port, char *reason, size_t reason_size)
{
        struct sockaddr_in sa4 = { .sin_family = AF_INET, .sin_port = htons(port) };
        struct sockaddr_in6 sa6 = { .sin6_family = AF_INET6, .sin6_port = htons(port) };
        bool v6 = false;
        if (inet_pton(AF_INET, addr, &sa4.sin_addr) != 1) {
                if (inet_pton(AF_INET6, addr, &sa6.sin6_addr) != 1) {
                        snprintf(reason, reason_size, "invalid listen address %s (want an IPv4 or IPv6 address)", addr);
                        return -EINVAL;
                }
                v6 = true;
        }
        int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
                int r = -errno;
                snprintf(reason, reason_size, "cannot listen on %s:%u: %s", addr, port, strerror(-r));
                return r;
        }
        int one = 1;
        const struct sockaddr *sa = v6 ? (const struct sockaddr *)&sa6 : (const struct sockaddr *)&sa4;
        socklen_t salen = v6 ? sizeof(sa6) : sizeof(sa4);
        /* [::] is IPv6 only: an IPv4 client goes to an IPv4 address of its own. */
        if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
            (v6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0) || bind(fd, sa, salen) < 0) {
                int r = -errno;
                close(fd);
                if (r == -EADDRINUSE)
                        snprintf(reason, reason_size, "cannot listen on %s:%u: the port is already in use (another spaced?)",
                                 addr, port);
                else
                        snprintf(reason, reason_size, "cannot listen on %s:%u: %s", addr, port, strerror(-r));
                return r;
        }
        return fd;
}

static void format_mhd_line(char *buf, size_t size, const char *fmt, va_list ap)
{
        vsnprintf(buf, size, fmt, ap);
        size_t n = strlen(buf);
        while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
                buf[--n] = '\0';
}

/* libmicrohttpd's own words: its reason for refusing to start (the last line it gave),
 * or, once started, a debug line. */
static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
        struct http_listener *l = cls;
        char line[256];
        pthread_mutex_lock(&l->lock);
        if (l->start_log.buf && l->start_log.size) {
                format_mhd_line(l->start_log.buf, l->start_log.size, fmt, ap);
                pthread_mutex_unlock(&l->lock);
                return;
        }
        pthread_mutex_unlock(&l->lock);
        format_mhd_line(line, sizeof(line), fmt, ap);
        log_debug("http.server_said", "message=\"%s\"", LOG_ESC(line));
}

const char *http_listener_scheme(const struct spaced_config *cfg)
{
        return cfg->tls_cert_pem ? "https" : "http";
}

const char *http_listener_url(const struct spaced_config *cfg, const char *addr, uint16_t port, char *buf, size_t size)
{
        bool v6 = strchr(addr, ':') != NULL;
        snprintf(buf, size, "%s://%s%s%s:%u", http_listener_scheme(cfg), v6 ? "[" : "", addr, v6 ? "]" : "", port);
        return buf;
}

int http_listener_start(const struct spaced_config *cfg, const struct http_listener_options *o, struct http_listener **ret,
                        char *reason, size_t reason_size)
{
        if (reason && reason_size)
                reason[0] = '\0';
        struct http_listener *l = calloc(1, sizeof(*l));
        if (!l) {
                close(o->listen_fd);
                return -ENOMEM;
        }
        pthread_mutex_init(&l->lock, NULL);
        l->start_log = (struct start_log){ reason, reason ? reason_size : 0 };
        l->max_pending = cfg->http_max_unauthenticated;
        l->idle_timeout_s = cfg->http_idle_timeout_s;
        l->e2b_errors = o->e2b_errors;
        static atomic_bool pages_checked;
        char why[160];
        if (!atomic_exchange(&pages_checked, true) && !http_error_page_ready(why, sizeof(why)))
                log_warn("http.error_pages_html", "reason=\"%s\" effect=\"malformed requests get libmicrohttpd's HTML pages\"",
                         LOG_ESC(why));
        /* Suspend/resume brings the inter-thread channel that quiesce needs. */
        unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL |
                MHD_ALLOW_SUSPEND_RESUME | MHD_ALLOW_UPGRADE | MHD_USE_ERROR_LOG;
        bool tls = o->tcp && cfg->tls_cert_pem && tls_credentials_ready();
        if (tls)
                flags |= MHD_USE_TLS;
        struct MHD_OptionItem opts[] = {
                { MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)on_mhd_log, l },
                { MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)o->on_completed, o->cls },
                { MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, l },
                { MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)on_uri, NULL },
                { MHD_OPTION_CONNECTION_TIMEOUT, cfg->http_header_timeout_s, NULL },
                { MHD_OPTION_CONNECTION_LIMIT, cfg->http_max_connections, NULL },
                { MHD_OPTION_PER_IP_CONNECTION_LIMIT, o->tcp ? cfg->http_max_per_ip : 0, NULL },
                { MHD_OPTION_THREAD_STACK_SIZE, (intptr_t)o->stack_size, NULL },
                { MHD_OPTION_LISTEN_SOCKET, o->listen_fd, NULL },
                /* Last, so that plain HTTP ends the list here; the pair is asked for at each
                 * handshake, so that a reload reaches new connections (api/tls_credentials.h). */
                { tls ? MHD_OPTION_HTTPS_CERT_CALLBACK : MHD_OPTION_END, 0, tls ? tls_credentials_callback() : NULL },
                { MHD_OPTION_END, 0, NULL },
        };
        if (listen(o->listen_fd, 512) == 0)
                l->daemon = MHD_start_daemon(flags, 0, NULL, NULL, o->on_request, o->cls, MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
        pthread_mutex_lock(&l->lock);
        l->start_log = (struct start_log){ NULL, 0 }; /* the starter's buffer goes with its frame */
        pthread_mutex_unlock(&l->lock);
        if (!l->daemon) {
                close(o->listen_fd);
                pthread_mutex_destroy(&l->lock);
                free(l);
                return -EADDRINUSE;
        }
        *ret = l;
        return 0;
}

void http_listener_quiesce(struct http_listener *l)
{
        if (l)
                MHD_quiesce_daemon(l->daemon);
}

unsigned http_listener_connections(const struct http_listener *l)
{
        const union MHD_DaemonInfo *info = l ? MHD_get_daemon_info(l->daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS) : NULL;
        return info ? info->num_connections : 0;
}

unsigned long http_listener_evicted(const struct http_listener *l)
{
        return l ? atomic_load(&l->evicted) : 0;
}

void http_listener_free(struct http_listener *l)
{
        if (!l)
                return;
        MHD_stop_daemon(l->daemon);
        pthread_mutex_destroy(&l->lock);
        free(l);
}
