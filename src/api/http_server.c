#include "api/http_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "api/api_auth.h"
#include "api/api_request.h"
#include "api/api_routes.h"
#include "api/console_static.h"
#include "api/http_listener.h"
#include "api/http_response.h"
#include "api/node_forward.h"
#include "api/request_trail.h"
#include "spaced/log.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

/* Each connection has a thread (event streams stay open for hours): give it a stack that
 * fits the deepest handler with room to spare, not glibc's 8 MiB. */
#define CONNECTION_STACK_BYTES (512u << 10)

struct http_server {
        struct spaced_context *ctx;
        struct http_listener *tcp;
        struct http_listener *local;
        int local_fd;
};

/* One request. It is routed and authenticated as soon as its headers are in, before any
 * body byte is read: an unauthenticated client gets no more than the listener's header
 * timeout, and its body is drained only to answer it. */
struct upload {
        struct http_body body;
        /* a buffered body: the route found, or why there is none (its query checked too) */
        api_handler handler;
        struct space_error err;
        /* a streamed body: the sink, its state, and the request it was begun with */
        const struct api_upload_sink *sink;
        void *sink_state;
        bool sink_failed;
        struct space_error sink_err;
        char path_copy[1024];
        struct api_request req;
        struct request_trail trail; /* finished in on_completed, the request's one end */
};

static enum MHD_Result send_response(struct MHD_Connection *conn, struct upload *up, struct api_response *resp)
{
        return http_response_send(conn, resp, true, 256 * 1024, &up->trail);
}

/* What the trail learns once the route is known and once the caller is authenticated. */
static void trail_route(struct upload *up)
{
        const struct api_request *req = &up->req;
        bool reads = strcmp(req->method, "GET") == 0 || strcmp(req->method, "HEAD") == 0;
        request_trail_route(&up->trail, req->action, !reads, req->target);
}

static int split_path(struct api_request *req, char *copy)
{
        req->nsegments = 0;
        req->more_segments = false;
        for (char *save = NULL, *seg = strtok_r(copy, "/", &save); seg; seg = strtok_r(NULL, "/", &save)) {
                if (req->nsegments == API_REQUEST_SEGMENTS) {
                        req->more_segments = true;
                        break;
                }
                req->segments[req->nsegments++] = seg;
        }
        return 0;
}

/* A data-plane request of a sandbox on another node goes there (api/node_forward.h): its
 * body is streamed on as a sink's is. true when it does (or failed to: then the error is in
 * sink_err, answered once the body has been drained). */
static bool forward_elsewhere(struct upload *up)
{
        void *state = NULL;
        int r = node_forward_open(&up->req, &state, &up->sink_err);
        if (r == 0)
                return false;
        up->handler = NULL;
        up->sink = &node_forward_sink;
        up->sink_state = state;
        return true;
}

/* Routes and authenticates a request whose body is buffered; a refusal is kept in up->err
 * and answered once the body is in. */
static void begin_request(struct spaced_context *ctx, struct MHD_Connection *conn, const char *url, const char *method,
                          struct upload *up)
{
        struct api_request *req = &up->req;
        *req = (struct api_request){ .ctx = ctx, .conn = conn, .method = method, .path = url, .request_id = up->trail.id };
        if (strlen(url) >= sizeof(up->path_copy) ||
            (snprintf(up->path_copy, sizeof(up->path_copy), "%s", url), split_path(req, up->path_copy) < 0)) {
                space_error_set(&up->err, SPACE_E_NOT_FOUND, "no route for %s", method);
                return;
        }
        enum api_auth_kind auth_kind = API_AUTH_CONTROL;
        if (console_static_path(url)) { /* the console's files: no key, no route table (not an API route) */
                up->handler = route_console_static;
                req->action = "console.file";
                req->body_rule = API_BODY_NONE;
                trail_route(up);
                return;
        }
        up->handler = api_router_match(req, &auth_kind, &up->err);
        if (!up->handler)
                return;
        trail_route(up);
        if (api_request_check_announced_body(req, &up->err) < 0) {
                up->handler = NULL;
                return;
        }
        int authorized = api_auth_request(req, auth_kind, &up->err);
        /* Whoever was authenticated is recorded, also when the route then refused them (403,
         * or 404 for another project's object). */
        request_trail_principal(&up->trail, req);
        if (authorized < 0) {
                up->handler = NULL;
                return;
        }
        if (auth_kind != API_AUTH_NONE)
                http_listener_authenticated(conn);
        if (api_request_check_query(req, &up->err) < 0)
                up->handler = NULL;
        else
                forward_elsewhere(up);
}

static void handle(struct spaced_context *ctx, const char *method, struct upload *up, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct api_request *req = &up->req;
        if (up->body.too_large) {
                space_error_set(&err, SPACE_E_PAYLOAD_TOO_LARGE, "request body is larger than %llu bytes",
                                (unsigned long long)ctx->cfg.max_body_bytes);
                return api_response_error(resp, &err);
        }
        if (!up->handler)
                return api_response_error(resp, &up->err);
        req->body = up->body.data;
        req->body_len = up->body.len;
        req->content_type = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
        if (api_request_check_body(req, &err) < 0)
                return api_response_error(resp, &err);
        if (atomic_load(&ctx->shutting_down) && strcmp(method, "GET") != 0) {
                space_error_set(&err, SPACE_E_UNAVAILABLE, "spaced is shutting down");
                return api_response_error(resp, &err);
        }
        up->handler(req, resp);
        if (req->principal.key_id[0]) /* also a caller the handler authenticated (the console's sign-in) */
                request_trail_principal(&up->trail, req);
        if (!resp->status) {
                space_error_set(&err, SPACE_E_INTERNAL, "handler gave no answer");
                api_response_error(resp, &err);
        }
}

/* A route whose body is streamed is authenticated and begun on the first call, before any
 * body byte arrives; its failure is answered once the body has been drained. */
static bool begin_sink(struct spaced_context *ctx, struct MHD_Connection *conn, const char *url, const char *method,
                       struct upload *up)
{
        struct api_request *req = &up->req;
        *req = (struct api_request){ .ctx = ctx, .conn = conn, .method = method, .path = url, .request_id = up->trail.id };
        if (strlen(url) >= sizeof(up->path_copy))
                return false;
        snprintf(up->path_copy, sizeof(up->path_copy), "%s", url);
        enum api_auth_kind auth_kind = API_AUTH_CONTROL;
        if (split_path(req, up->path_copy) < 0 || !(up->sink = api_router_upload_sink(req, &auth_kind)))
                return false;
        trail_route(up);
        if (atomic_load(&ctx->shutting_down)) {
                space_error_set(&up->sink_err, SPACE_E_UNAVAILABLE, "spaced is shutting down");
                return true;
        }
        int authorized = api_auth_request(req, auth_kind, &up->sink_err);
        request_trail_principal(&up->trail, req); /* also when refused after authentication */
        if (authorized == 0) {
                if (auth_kind != API_AUTH_NONE)
                        http_listener_authenticated(conn);
                if (api_request_check_query(req, &up->sink_err) == 0 && !forward_elsewhere(up))
                        up->sink->begin(req, &up->sink_state, &up->sink_err);
        }
        return true;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls)
{
        struct http_server *s = cls;
        struct upload *up = *con_cls;
        if (!up) {
                up = calloc(1, sizeof(*up));
                if (!up)
                        return MHD_NO;
                request_trail_begin(&up->trail, conn, "v1", method, url);
                *con_cls = up;
                if (!begin_sink(s->ctx, conn, url, method, up))
                        begin_request(s->ctx, conn, url, method, up);
                return MHD_YES;
        }
        if (up->sink) {
                size_t n = *upload_data_size;
                *upload_data_size = 0;
                if (n) {
                        if (up->sink_state && !up->sink_failed && up->sink->write(up->sink_state, upload_data, n) < 0)
                                up->sink_failed = true;
                        return MHD_YES;
                }
                struct api_response resp = { 0 };
                if (up->sink_state) {
                        up->sink->finish(up->sink_state, &up->req, &resp);
                        up->sink_state = NULL;
                } else {
                        api_response_error(&resp, &up->sink_err);
                }
                enum MHD_Result r = send_response(conn, up, &resp);
                json_decref(resp.body);
                json_decref(resp.headers);
                return r;
        }
        if (*upload_data_size) {
                size_t n = *upload_data_size;
                *upload_data_size = 0;
                return http_body_append(&up->body, upload_data, n, s->ctx->cfg.max_body_bytes) < 0 ? MHD_NO : MHD_YES;
        }
        struct api_response resp = { 0 };
        handle(s->ctx, method, up, &resp);
        enum MHD_Result r = send_response(conn, up, &resp);
        json_decref(resp.body);
        json_decref(resp.headers);
        return r;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe)
{
        struct http_server *s = cls;
        struct upload *up = *con_cls;
        if (up) {
                request_trail_finish(&up->trail, s->ctx, toe == MHD_REQUEST_TERMINATED_COMPLETED_OK);
                if (up->sink && up->sink_state)
                        up->sink->abort(up->sink_state);
                /* a body may carry a secret's value (POST /v1/secrets): erased, not only freed */
                if (up->body.data)
                        explicit_bzero(up->body.data, up->body.len);
                free(up->body.data);
                free(up);
                *con_cls = NULL;
        }
}

static int start_listener(struct http_server *s, int listen_fd, bool tcp, struct http_listener **ret, char *why, size_t why_size)
{
        struct http_listener_options o = { .listen_fd = listen_fd,
                                           .tcp = tcp,
                                           .stack_size = CONNECTION_STACK_BYTES,
                                           .on_request = on_request,
                                           .on_completed = on_completed,
                                           .cls = s };
        return http_listener_start(&s->ctx->cfg, &o, ret, why, why_size);
}

static int listen_unix(const char *path)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, path);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        unlink(path);
        if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(path, 0600) < 0 || listen(fd, 512) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        return fd;
}

int http_server_start(struct spaced_context *ctx, int tcp_fd, struct http_server **ret, char *reason, size_t reason_size)
{
        struct http_server *s = calloc(1, sizeof(*s));
        if (!s) {
                close(tcp_fd);
                return -ENOMEM;
        }
        s->ctx = ctx;
        s->local_fd = -1;
        char why[256];
        if (start_listener(s, tcp_fd, true, &s->tcp, why, sizeof(why)) < 0) {
                snprintf(reason, reason_size, "cannot listen on %s:%u: %s", ctx->cfg.listen_addr, ctx->cfg.listen_port,
                         why[0] ? why : "in use?");
                free(s);
                return -EADDRINUSE;
        }
        if (ctx->cfg.unix_socket[0]) {
                s->local_fd = listen_unix(ctx->cfg.unix_socket);
                if (s->local_fd < 0 || start_listener(s, s->local_fd, false, &s->local, why, sizeof(why)) < 0) {
                        snprintf(reason, reason_size, "cannot listen on unix socket %s", ctx->cfg.unix_socket);
                        http_server_free(s);
                        return -EADDRINUSE;
                }
        }
        *ret = s;
        return 0;
}

void http_server_quiesce(struct http_server *s)
{
        http_listener_quiesce(s->tcp);
        http_listener_quiesce(s->local);
}

unsigned http_server_connections(struct http_server *s)
{
        return http_listener_connections(s->tcp) + http_listener_connections(s->local);
}

void http_server_free(struct http_server *s)
{
        if (!s)
                return;
        http_listener_free(s->tcp);
        http_listener_free(s->local);
        if (s->local_fd >= 0)
                close(s->local_fd);
        if (s->ctx->cfg.unix_socket[0])
                unlink(s->ctx->cfg.unix_socket);
        free(s);
}
