#include "api/port_proxy.h"

#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "agent_protocol/agent_frame.h"
#include "api/http_response.h"
#include "api/request_trail.h"
#include "api/upstream_response.h"

#define REQUEST_HEAD_MAX (64u << 10)

/* The answer's Content-Security-Policy on a shared origin: the page is an origin of its own
 * (no cookies or storage of the front door's), its scripts still run. */
#define SHARED_ORIGIN_CSP "sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads"

struct port_proxy {
        struct sandbox_port_conn up;
        bool chunked;   /* the request body goes on chunked (it came without a length) */
        bool failed;    /* a write of the request failed */
        bool head_only; /* HEAD: the answer has no body */
        bool shared_origin;
        bool upgrade; /* the client asked to switch protocols */
        const atomic_bool *stop;
        int idle_ms;
        void (*render_error)(struct api_response *resp, const struct space_error *err);
        struct upstream_response resp;
};

/* Headers of one hop (RFC 9110 7.6.1), and those this proxy sets itself. */
static const char *const hop_headers[] = { "Connection",
                                           "Keep-Alive",
                                           "Proxy-Connection",
                                           "Proxy-Authenticate",
                                           "Proxy-Authorization",
                                           "TE",
                                           "Trailer",
                                           "Transfer-Encoding",
                                           "Upgrade",
                                           "Content-Length",
                                           "Expect",
                                           "Forwarded",
                                           "X-Forwarded-For",
                                           "X-Forwarded-Host",
                                           "X-Forwarded-Proto",
                                           NULL };

static bool listed(const char *const *names, const char *name)
{
        for (; names && *names; names++)
                if (strcasecmp(*names, name) == 0)
                        return true;
        return false;
}

/* name is one of the tokens of a Connection header value. */
static bool connection_token(const char *connection, const char *name)
{
        size_t n = strlen(name);
        for (const char *t = connection; t && *t;) {
                t += strspn(t, " \t,");
                size_t len = strcspn(t, ",");
                size_t trimmed = len;
                while (trimmed && (t[trimmed - 1] == ' ' || t[trimmed - 1] == '\t'))
                        trimmed--;
                if (trimmed == n && strncasecmp(t, name, n) == 0)
                        return true;
                t += len;
        }
        return false;
}

static bool hop_by_hop(const char *connection, const char *name)
{
        return listed(hop_headers, name) || (connection && connection_token(connection, name));
}

static void append(struct http_body *b, const char *text)
{
        http_body_append(b, text, strlen(text), REQUEST_HEAD_MAX);
}

struct head_build {
        struct http_body head;
        const char *connection;
        const struct port_proxy_request *r;
};

static enum MHD_Result add_request_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
        (void)kind;
        struct head_build *h = cls;
        if (!value || hop_by_hop(h->connection, key) || listed(h->r->drop_headers, key))
                return MHD_YES;
        append(&h->head, key);
        append(&h->head, ": ");
        append(&h->head, value);
        append(&h->head, "\r\n");
        return MHD_YES;
}


int port_proxy_target(const char *raw, int segments, char *buf, size_t size)
{
        const char *t = raw;
        if (*t != '/')
                return -1;
        for (int i = 0; i < segments; i++) {
                if (*t != '/')
                        return -1;
                t += strspn(t, "/");
                t += strcspn(t, "/?");
        }
        int n = snprintf(buf, size, "%s%s", *t == '/' ? "" : "/", t);
        return n < 0 || (size_t)n >= size ? -1 : 0;
}

int port_proxy_parse_port(const char *s, uint16_t *ret, struct space_error *err)
{
        unsigned long v = 0;
        size_t n = strlen(s);
        if (n < 1 || n > 5 || s[0] == '0' || strspn(s, "0123456789") != n || (v = strtoul(s, NULL, 10)) > 65535)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "port must be a number 1-65535, got %.16s", s);
        *ret = (uint16_t)v;
        return 0;
}

int port_proxy_begin(struct MHD_Connection *conn, struct sandbox_port_conn *upstream, const struct port_proxy_request *r,
                     struct port_proxy **ret, struct space_error *err)
{
        struct port_proxy *p = calloc(1, sizeof(*p));
        if (!p) {
                sandbox_ports_close(upstream);
                return space_error_set(err, SPACE_E_INTERNAL, "out of memory");
        }
        p->up = *upstream;
        upstream->fd = -1;
        p->head_only = strcmp(r->method, "HEAD") == 0;
        p->shared_origin = r->shared_origin;
        p->render_error = r->render_error;
        p->stop = r->stop;
        p->idle_ms = r->idle_ms;
        const char *length = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        const char *te = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
        const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
        const char *upgrade = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_UPGRADE);
        struct head_build h = { .connection = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONNECTION),
                                .r = r };
        char client[64], line[256];
        request_trail_client_address(conn, client, sizeof(client));
        append(&h.head, r->method);
        append(&h.head, " ");
        append(&h.head, r->target);
        append(&h.head, " HTTP/1.1\r\n");
        MHD_get_connection_values(conn, MHD_HEADER_KIND, add_request_header, &h);
        if (!host)
                append(&h.head, "Host: localhost\r\n");
        if (r->extra_head)
                append(&h.head, r->extra_head);
        snprintf(line, sizeof(line), "X-Forwarded-For: %s\r\nX-Forwarded-Proto: %s\r\n", client, r->scheme);
        append(&h.head, line);
        if (host) {
                append(&h.head, "X-Forwarded-Host: ");
                append(&h.head, host);
                append(&h.head, "\r\n");
        }
        if (length) {
                append(&h.head, "Content-Length: ");
                append(&h.head, length);
                append(&h.head, "\r\n");
        } else if (te) {
                p->chunked = true;
                append(&h.head, "Transfer-Encoding: chunked\r\n");
        }
        p->upgrade = upgrade && h.connection && connection_token(h.connection, "upgrade") && !length && !te &&
                !strchr(upgrade, '\r') && !strchr(upgrade, '\n');
        if (p->upgrade) {
                append(&h.head, "Upgrade: ");
                append(&h.head, upgrade);
                append(&h.head, "\r\nConnection: Upgrade\r\n\r\n");
        } else {
                append(&h.head, "Connection: close\r\n\r\n");
        }
        int rc = 0;
        if (h.head.too_large || !h.head.data)
                rc = space_error_set(err, SPACE_E_INVALID_REQUEST, "the request's headers are larger than %u bytes",
                                     REQUEST_HEAD_MAX);
        else if (agent_frame_write_all(p->up.fd, h.head.data, h.head.len) < 0)
                rc = space_error_set(err, SPACE_E_BAD_GATEWAY, "the sandbox's server closed the connection");
        free(h.head.data);
        if (rc < 0) {
                port_proxy_abort(p);
                return -1;
        }
        *ret = p;
        return 0;
}

int port_proxy_write(struct port_proxy *p, const char *data, size_t len)
{
        if (p->failed)
                return -1;
        char size[32];
        int n = snprintf(size, sizeof(size), "%zx\r\n", len);
        if ((p->chunked && agent_frame_write_all(p->up.fd, size, (size_t)n) < 0) ||
            agent_frame_write_all(p->up.fd, data, len) < 0 || (p->chunked && agent_frame_write_all(p->up.fd, "\r\n", 2) < 0)) {
                p->failed = true;
                return -1;
        }
        return 0;
}

/* The answer's headers for the client: those of one hop and framing left out, several of
 * one name kept as an array. */
static json_t *answer_headers(const struct port_proxy *p)
{
        const struct upstream_response *u = &p->resp;
        const char *connection = upstream_response_header(u, "Connection");
        json_t *headers = json_object();
        for (unsigned i = 0; headers && i < u->nheaders; i++) {
                const char *name = u->headers[i].name, *value = u->headers[i].value;
                if (hop_by_hop(connection, name) || strcasecmp(name, "Content-Type") == 0 ||
                    strcasecmp(name, "X-Request-Id") == 0 || (p->shared_origin && strcasecmp(name, "Set-Cookie") == 0))
                        continue;
                json_t *had = json_object_get(headers, name);
                if (!had) {
                        json_object_set_new(headers, name, json_string(value));
                } else if (json_is_array(had)) {
                        json_array_append_new(had, json_string(value));
                } else {
                        json_t *both = json_pack("[O, s]", had, value);
                        json_object_set_new(headers, name, both);
                }
        }
        if (p->shared_origin && headers) {
                json_t *had = json_object_get(headers, "Content-Security-Policy");
                if (had && json_is_array(had))
                        json_array_append_new(had, json_string(SHARED_ORIGIN_CSP));
                else if (had)
                        json_object_set_new(headers, "Content-Security-Policy", json_pack("[O, s]", had, SHARED_ORIGIN_CSP));
                else
                        json_object_set_new(headers, "Content-Security-Policy", json_string(SHARED_ORIGIN_CSP));
        }
        return headers;
}

/* Bytes from one side to the other: 1 moved, 0 the reading side closed, -1 a failure. */
static int relay_once(int from, int to, char *buf, size_t size)
{
        ssize_t n = read(from, buf, size);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
                return 1;
        if (n <= 0)
                return n == 0 ? 0 : -1;
        return agent_frame_write_all(to, buf, (size_t)n) < 0 ? -1 : 1;
}

/* The upgraded connection: the server's bytes that came with its 101 and the client's that
 * came with its request first, then both ways until either side closes, spaced stops, or
 * idle_ms pass without a byte. */
static void relay_run(void *cls, int sock, const char *extra, size_t extra_len)
{
        struct port_proxy *p = cls;
        static const size_t block = 64u << 10;
        char *buf = malloc(block);
        size_t pending_len;
        const char *pending = upstream_response_pending(&p->resp, &pending_len);
        int flags = fcntl(sock, F_GETFL);
        struct timeval tv = { .tv_sec = p->idle_ms / 1000, .tv_usec = (p->idle_ms % 1000) * 1000 };
        if (!buf || flags < 0 || fcntl(sock, F_SETFL, flags & ~O_NONBLOCK) < 0 ||
            setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0 ||
            agent_frame_write_all(sock, pending, pending_len) < 0 || agent_frame_write_all(p->up.fd, extra, extra_len) < 0) {
                free(buf);
                return;
        }
        int idle = 0;
        while (!(p->stop && atomic_load(p->stop)) && idle < p->idle_ms) {
                struct pollfd fds[2] = { { .fd = sock, .events = POLLIN }, { .fd = p->up.fd, .events = POLLIN } };
                int n = poll(fds, 2, 1000);
                if (n < 0 && errno != EINTR)
                        break;
                if (n <= 0) {
                        idle += 1000;
                        continue;
                }
                idle = 0;
                if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) && relay_once(sock, p->up.fd, buf, block) <= 0)
                        break;
                if ((fds[1].revents & (POLLIN | POLLHUP | POLLERR)) && relay_once(p->up.fd, sock, buf, block) <= 0)
                        break;
        }
        free(buf);
}

static void relay_free(void *cls)
{
        port_proxy_abort(cls);
}

static ssize_t stream_read(void *cls, char *buf, size_t max)
{
        struct port_proxy *p = cls;
        return upstream_response_read_body(&p->resp, buf, max);
}

static void stream_free(void *cls)
{
        port_proxy_abort(cls);
}

void port_proxy_finish(struct port_proxy *p, struct api_response *resp)
{
        struct space_error err = { 0 };
        if (p->failed) {
                space_error_set(&err, SPACE_E_BAD_GATEWAY, "the sandbox's server stopped taking the request");
                goto fail;
        }
        if (p->chunked && agent_frame_write_all(p->up.fd, "0\r\n\r\n", 5) < 0) {
                space_error_set(&err, SPACE_E_BAD_GATEWAY, "the sandbox's server stopped taking the request");
                goto fail;
        }
        if (upstream_response_read_head(&p->resp, p->up.fd, !p->head_only, &err) < 0)
                goto fail;
        if (p->resp.status == 101 && !p->upgrade) {
                space_error_set(&err, SPACE_E_BAD_GATEWAY, "the sandbox's server switched protocols unasked");
                goto fail;
        }
        resp->status = p->resp.status;
        resp->headers = answer_headers(p);
        if (p->resp.status == 101) {
                const char *to = upstream_response_header(&p->resp, "Upgrade");
                if (!to) {
                        space_error_set(&err, SPACE_E_BAD_GATEWAY,
                                        "the sandbox's server switched protocols without saying to which");
                        json_decref(resp->headers);
                        resp->headers = NULL;
                        goto fail;
                }
                json_object_set_new(resp->headers, "Upgrade", json_string(to));
                resp->upgrade = (struct api_upgrade){ .run = relay_run, .free = relay_free, .cls = p };
                return;
        }
        resp->content_type = upstream_response_header(&p->resp, "Content-Type");
        resp->stream = (struct api_stream){ .read = stream_read, .free = stream_free, .cls = p };
        if (p->resp.body_done || p->resp.has_length) {
                resp->stream.sized = true;
                resp->stream.size = p->resp.body_done ? 0 : p->resp.length;
        }
        return;
fail:
        p->render_error(resp, &err);
        port_proxy_abort(p);
}

void port_proxy_abort(struct port_proxy *p)
{
        if (!p)
                return;
        sandbox_ports_close(&p->up);
        free(p);
}

int port_proxy_sink_write(void *state, const char *data, size_t len)
{
        return port_proxy_write(state, data, len);
}

void port_proxy_sink_finish(void *state, struct api_request *req, struct api_response *resp)
{
        (void)req;
        port_proxy_finish(state, resp);
}

void port_proxy_sink_abort(void *state)
{
        port_proxy_abort(state);
}
