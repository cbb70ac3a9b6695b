#include "api/node_forward.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "api/api_auth.h"
#include "api/http_listener.h"
#include "api/port_proxy.h"
#include "auth/node_credential.h"
#include "service/node_service.h"
#include "spaced/log.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

#define PRINCIPAL_TEXT_MAX 512

/* What stays at the front door: the caller's credentials, and any node headers it sent. */
static const char *const dropped[] = { "Authorization",       "Cookie", API_CONSOLE_CSRF_HEADER, NODE_CREDENTIAL_HEADER,
                                       NODE_PRINCIPAL_HEADER, NULL };

bool node_forward_route(const struct api_request *req)
{
        const char *a = req->action;
        return a && req->nsegments >= 3 && strcmp(req->segments[0], "v1") == 0 && strcmp(req->segments[1], "sandboxes") == 0 &&
                (strcmp(a, "sandbox.exec") == 0 || strcmp(a, "sandbox.port") == 0 || strncmp(a, "command.", 8) == 0 ||
                 strncmp(a, "file.", 5) == 0);
}

/* The principal as one header line's value (compact JSON: no CR or LF). */
static int principal_text(const struct api_request *req, char *buf, size_t size)
{
        const struct principal *p = &req->principal;
        json_t *o = json_pack("{s:s, s:s, s:i, s:I, s:I, s:s}", "key_id", p->key_id, "project_id", p->project_id, "role",
                              (int)p->role, "permissions", (json_int_t)p->permissions, "expires_at_ms",
                              (json_int_t)p->expires_at_ms, "session_id", req->session_id);
        char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
        json_decref(o);
        int r = text && strlen(text) < size ? 0 : -1;
        if (r == 0)
                snprintf(buf, size, "%s", text);
        free(text);
        return r;
}

static int principal_parse(const char *text, struct api_request *req)
{
        json_error_t jerr;
        json_t *o = text && strlen(text) < PRINCIPAL_TEXT_MAX ? json_loads(text, JSON_REJECT_DUPLICATES, &jerr) : NULL;
        const char *key = NULL, *project = NULL, *session = NULL;
        int role = 0;
        json_int_t perms = 0, expires = 0;
        int r = o &&
                        json_unpack_ex(o, &jerr, JSON_STRICT, "{s:s, s:s, s:i, s:I, s:I, s:s}", "key_id", &key, "project_id",
                                       &project, "role", &role, "permissions", &perms, "expires_at_ms", &expires, "session_id",
                                       &session) == 0 &&
                        strlen(key) < sizeof(req->principal.key_id) && strlen(project) < sizeof(req->principal.project_id) &&
                        strlen(session) < sizeof(req->session_id) && role >= ROLE_NONE && role <= ROLE_ADMIN && perms >= 0 &&
                        perms <= PERM_ALL
                ? 0
                : -1;
        if (r == 0) {
                snprintf(req->principal.key_id, sizeof(req->principal.key_id), "%s", key);
                snprintf(req->principal.project_id, sizeof(req->principal.project_id), "%s", project);
                snprintf(req->session_id, sizeof(req->session_id), "%s", session);
                req->principal.role = (enum principal_role)role;
                req->principal.permissions = (uint32_t)perms;
                req->principal.expires_at_ms = expires;
        }
        json_decref(o);
        return r;
}

int node_forward_authenticate(struct api_request *req, const char *credential, struct space_error *err)
{
        struct spaced_context *ctx = req->ctx;
        const char *raw = http_listener_raw_uri(req->conn);
        const char *principal = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, NODE_PRINCIPAL_HEADER);
        char node[32];
        if (!ctx->fleet_secret_len)
                return space_error_set(err, SPACE_E_UNAUTHORIZED, "a node's credential, and this spaced has no --fleet-secret");
        if (!node_forward_route(req))
                return space_error_set(err, SPACE_E_UNAUTHORIZED, "a node's credential is taken on the data plane only");
        int r = raw ? node_credential_verify(ctx->fleet_secret, ctx->fleet_secret_len, credential, req->method, raw,
                                             principal ? principal : "", wallclock_now_ms(), node)
                    : -EINVAL;
        if (r < 0) {
                log_warn("node.credential_refused", "reason=%s path=\"%s\"",
                         r == -ETIME           ? "stale"
                                 : r == -EPERM ? "signature"
                                               : "malformed",
                         LOG_ESC(req->path));
                return space_error_set(err, SPACE_E_UNAUTHORIZED, "the node's credential is %s",
                                       r == -ETIME           ? "out of its time window"
                                               : r == -EPERM ? "not this fleet's"
                                                             : "malformed");
        }
        if (principal_parse(principal, req) < 0)
                return space_error_set(err, SPACE_E_UNAUTHORIZED, "the node's " NODE_PRINCIPAL_HEADER " is malformed");
        req->via_node = true;
        return 0;
}

/* host and port of an http://host:port address; -1 for anything else (https among them:
 * a hop over TLS is not made yet). */
static int split_address(const char *url, char *host, size_t host_size, char *port, size_t port_size)
{
        if (strncmp(url, "http://", 7) != 0)
                return -1;
        const char *h = url + 7, *end;
        size_t n;
        if (*h == '[') {
                end = strchr(h, ']');
                if (!end || end[1] != ':')
                        return -1;
                n = (size_t)(end - h - 1);
                h++;
                end++;
        } else {
                end = strrchr(h, ':');
                if (!end)
                        return -1;
                n = (size_t)(end - h);
        }
        if (n == 0 || n >= host_size || strlen(end + 1) >= port_size || !end[1] ||
            strspn(end + 1, "0123456789") != strlen(end + 1))
                return -1;
        memcpy(host, h, n);
        host[n] = '\0';
        snprintf(port, port_size, "%s", end + 1);
        return 0;
}

/* A blocking connection to the node within timeout_s, then with io_timeout_s on every
 * wait; -errno. */
static int connect_node(const char *host, const char *port, unsigned timeout_s, unsigned io_timeout_s)
{
        struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai = NULL;
        if (getaddrinfo(host, port, &hints, &ai) != 0 || !ai)
                return -EHOSTUNREACH;
        int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        int r = fd < 0 ? -errno : 0;
        if (r == 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
                r = errno == EINPROGRESS ? 0 : -errno;
                struct pollfd p = { .fd = fd, .events = POLLOUT };
                int soerr = 0;
                socklen_t len = sizeof(soerr);
                if (r == 0) {
                        int n = poll(&p, 1, (int)timeout_s * 1000);
                        r = n == 0 ? -ETIMEDOUT : n < 0 ? -errno : 0;
                }
                if (r == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
                        r = -errno;
                if (r == 0 && soerr)
                        r = -soerr;
        }
        freeaddrinfo(ai);
        struct timeval tv = { .tv_sec = io_timeout_s };
        int flags = r == 0 ? fcntl(fd, F_GETFL) : -1;
        if (r == 0 &&
            (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0 ||
             setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
             setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0))
                r = -errno;
        if (r < 0 && fd >= 0)
                close(fd);
        return r < 0 ? r : fd;
}

int node_forward_open(struct api_request *req, void **ret_state, struct space_error *err)
{
        struct spaced_context *ctx = req->ctx;
        *ret_state = NULL;
        if (!ctx->cfg.database[0] || req->via_node || !node_forward_route(req))
                return 0;
        struct node_record node;
        int r = node_service_locate(ctx, req->segments[2], &node, err);
        if (r <= 0)
                return r;
        if (!ctx->fleet_secret_len)
                return space_error_set(err, SPACE_E_NODE_UNAVAILABLE,
                                       "sandbox %s is on node %s (%s); this spaced has no --fleet-secret to pass the request on",
                                       req->segments[2], node.id, node.address);
        char host[128], port[8], principal[PRINCIPAL_TEXT_MAX], credential[NODE_CREDENTIAL_SIZE];
        const char *raw = http_listener_raw_uri(req->conn);
        if (split_address(node.address, host, sizeof(host), port, sizeof(port)) < 0)
                return space_error_set(err, SPACE_E_NODE_UNAVAILABLE,
                                       "sandbox %s is on node %s at %s, which is not an http:// address", req->segments[2],
                                       node.id, node.address);
        if (!raw || principal_text(req, principal, sizeof(principal)) < 0 ||
            node_credential_sign(ctx->fleet_secret, ctx->fleet_secret_len, ctx->node_id, wallclock_now_ms(), req->method, raw,
                                 principal, credential, sizeof(credential)) < 0)
                return space_error_set(err, SPACE_E_INTERNAL, "cannot sign the request for node %s", node.id);
        int fd = connect_node(host, port, ctx->cfg.ingress_timeout_s, ctx->cfg.http_idle_timeout_s);
        if (fd < 0) {
                log_warn("node.forward_failed", "node=%s address=%s error=\"%s\"", node.id, node.address, strerror(-fd));
                return space_error_set(err, SPACE_E_NODE_UNAVAILABLE, "sandbox %s is on node %s, which cannot be reached: %s",
                                       req->segments[2], node.id, strerror(-fd));
        }
        size_t extra_size = sizeof(credential) + sizeof(principal) + 64;
        char *extra = malloc(extra_size);
        if (!extra) {
                close(fd);
                return space_error_set(err, SPACE_E_INTERNAL, "out of memory");
        }
        snprintf(extra, extra_size, NODE_CREDENTIAL_HEADER ": %s\r\n" NODE_PRINCIPAL_HEADER ": %s\r\n", credential, principal);
        struct sandbox_port_conn up = { .fd = fd }; /* no sandbox's ingress place is held */
        struct port_proxy_request pr = { .method = req->method,
                                         .target = raw,
                                         .drop_headers = dropped,
                                         .scheme = http_listener_scheme(&ctx->cfg),
                                         .extra_head = extra,
                                         .stop = &ctx->shutting_down,
                                         .idle_ms = (int)ctx->cfg.http_idle_timeout_s * 1000,
                                         .render_error = api_response_error };
        struct port_proxy *p = NULL;
        r = port_proxy_begin(req->conn, &up, &pr, &p, err);
        free(extra);
        if (r < 0)
                return -1;
        *ret_state = p;
        return 1;
}

static int sink_begin(struct api_request *req, void **ret_state, struct space_error *err)
{
        return node_forward_open(req, ret_state, err) < 0 ? -1 : 0;
}

const struct api_upload_sink node_forward_sink = { sink_begin, port_proxy_sink_write, port_proxy_sink_finish,
                                                   port_proxy_sink_abort };
