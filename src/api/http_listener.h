/* http_listener: one libmicrohttpd listener (a thread per connection), set up the same way
 * for every front door: spaced's API and data plane (TCP and the unix socket) and the E2B
 * front door. It holds the limits that keep clients who have not authenticated from taking
 * a listener away (slowloris):
 *  - header timeout: a connection none of whose requests has been authenticated is closed
 *    after header_timeout_s without a byte from the client (MHD's timeout counts
 *    inactivity); once a request is authenticated the connection gets idle_timeout_s, so
 *    event streams, downloads and uploads that keep moving are never cut;
 *  - a per-client-address connection limit (TCP);
 *  - a global connection limit, of which at most max_unauthenticated are connections with
 *    no authenticated request: past that the oldest such connection is cut to make room,
 *    so a flood of half-open connections cannot keep an authenticated client out.
 * The front door says when a request has been authenticated (http_listener_authenticated). */
#pragma once

#include <microhttpd.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct spaced_config;
struct http_listener;

struct http_listener_options {
        int listen_fd;     /* a bound socket (http_listener_bind, or unix) */
        bool tcp;          /* TCP: the per-address limit applies */
        size_t stack_size; /* of each connection thread; 0: the default */
        MHD_AccessHandlerCallback on_request;
        MHD_RequestCompletedCallback on_completed;
        void *cls;
        bool e2b_errors; /* the library's own error answers in E2B's shape (api/http_error_page.h) */
};

/* Binds a TCP socket to addr:port (an IPv4 or IPv6 address), without listening yet, so that a port in use
 * fails at the very start of spaced, before it touches anything. SO_REUSEADDR only: a
 * restart binds at once beside the last run's TIME_WAIT connections, but a port another
 * process listens on is refused (never SO_REUSEPORT, with which the kernel would split
 * connections between two daemons). Returns the socket, or -errno with reason set. */
int http_listener_bind(const char *addr, uint16_t port, char *reason, size_t reason_size);
/* Starts listening with the limits of cfg, over TLS when cfg has a certificate and o->tcp
 * (with the pair of api/tls_credentials.h, which must be set first);
 * it owns o->listen_fd from here, on failure too. Returns 0, -ENOMEM, or -EADDRINUSE when
 * libmicrohttpd could not start (port taken, bad socket, a certificate or key GnuTLS
 * refused), with libmicrohttpd's own words in reason. */
int http_listener_start(const struct spaced_config *cfg, const struct http_listener_options *o, struct http_listener **ret,
                        char *reason, size_t reason_size);
/* Whether the listeners of cfg speak TLS: "https" or "http". */
const char *http_listener_scheme(const struct spaced_config *cfg);
/* scheme://addr:port (an IPv6 address in brackets) for a listener of cfg; buf of at least
 * HTTP_LISTENER_URL_MAX. */
#define HTTP_LISTENER_URL_MAX 96
const char *http_listener_url(const struct spaced_config *cfg, const char *addr, uint16_t port, char *buf, size_t size);
/* Called by the access handler once a request on conn has been authenticated: the
 * connection stops counting as unauthenticated and gets the idle timeout. */
void http_listener_authenticated(struct MHD_Connection *conn);
/* The target of conn's current request as the client sent it (percent-encoding and query
 * intact), or NULL when it could not be kept. */
const char *http_listener_raw_uri(struct MHD_Connection *conn);
/* An upgrade answer (101) queued on conn: free_fn(cls) runs if the connection closes before
 * it is taken (its handler ran: http_listener_upgrade_taken). Both are called from the
 * connection's own thread. false when conn is not one of a listener's (then nothing frees it). */
bool http_listener_upgrade_pending(struct MHD_Connection *conn, void (*free_fn)(void *cls), void *cls);
void http_listener_upgrade_taken(struct MHD_Connection *conn);
/* Stops accepting new connections. */
void http_listener_quiesce(struct http_listener *l);
/* Connections still open. */
unsigned http_listener_connections(const struct http_listener *l);
/* Unauthenticated connections cut to make room since the start. */
unsigned long http_listener_evicted(const struct http_listener *l);
void http_listener_free(struct http_listener *l);
