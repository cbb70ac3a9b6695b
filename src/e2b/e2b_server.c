/* e2b_server: libmicrohttpd plumbing for the E2B front door: bodies are read whole (up to
 * --max-body), except /files uploads, which stream into e2b_files_upload as they arrive,
 * and requests for a sandbox's port (e2b_ingress.h), which stream through its proxy;
 * answers are JSON, empty, or a stream whose read callback may block. */
#include "api/http_listener.h"
#include "api/http_response.h"
#include "api/request_trail.h"
#include "e2b/e2b_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "e2b/e2b_files_upload.h"
#include "e2b/e2b_ingress.h"
#include "e2b/e2b_metrics.h"
#include "e2b/e2b_watchers.h"
#include "e2b/e2b_router.h"
#include "spaced/log.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

struct e2b_server {
        struct e2b_front front;
        struct http_listener *listener;
};

struct body {
        struct http_body in;
        size_t limit;
        bool streamed;              /* a /files upload, or for a sandbox's port */
        struct e2b_upload *upload;  /* NULL once finished, or when it could not start */
        struct port_proxy *proxy;   /* its proxy; NULL once finished, or when it could not start */
        struct api_response early;  /* why it could not start (sent after the body) */
        struct request_trail trail; /* finished in on_completed */
};

static enum MHD_Result send_response(struct MHD_Connection *conn, struct body *b, struct api_response *resp)
{
        return http_response_send(conn, resp, false, 64 * 1024, &b->trail);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls)
{
        struct e2b_server *s = cls;
        struct body *b = *con_cls;
        if (!b) {
                b = calloc(1, sizeof(*b));
                if (!b)
                        return MHD_NO;
                request_trail_begin(&b->trail, conn, "e2b", method, url);
                b->limit = s->front.ctx->cfg.max_body_bytes;
                *con_cls = b;
                /* Authenticated as soon as the headers are in (http_listener.h). */
                if (e2b_ingress_begin(&s->front, conn, method, url, &b->trail, &b->proxy, &b->early)) {
                        b->streamed = true;
                } else if (e2b_router_streams_body(method, url)) {
                        b->streamed = true;
                        if (e2b_router_upload_begin(&s->front, conn, method, url, &b->trail, &b->upload, &b->early) == 0)
                                http_listener_authenticated(conn);
                } else if (e2b_router_authenticates(&s->front, conn, method, url, &b->trail)) {
                        http_listener_authenticated(conn);
                }
                return MHD_YES;
        }
        if (b->streamed) { /* an upload or a sandbox's port: the body goes on as it comes */
                if (*upload_data_size) {
                        if (b->proxy)
                                (void)port_proxy_write(b->proxy, upload_data, *upload_data_size); /* finish says */
                        else if (b->upload)
                                e2b_upload_write(b->upload, upload_data, *upload_data_size);
                        *upload_data_size = 0;
                        return MHD_YES;
                }
                struct api_response resp = b->early;
                memset(&b->early, 0, sizeof(b->early));
                if (b->proxy) {
                        port_proxy_finish(b->proxy, &resp);
                        b->proxy = NULL;
                } else if (b->upload) {
                        e2b_upload_finish(b->upload, &resp);
                        b->upload = NULL;
                }
                enum MHD_Result r = send_response(conn, b, &resp);
                json_decref(resp.body);
                json_decref(resp.headers);
                return r;
        }
        if (*upload_data_size) {
                size_t n = *upload_data_size;
                *upload_data_size = 0;
                return http_body_append(&b->in, upload_data, n, b->limit) < 0 ? MHD_NO : MHD_YES;
        }
        struct api_response resp = { 0 };
        if (b->in.too_large) {
                resp.status = 413;
                resp.body = json_pack("{s:i, s:s}", "code", 413, "message", "request body is too large (--max-body)");
        } else {
                e2b_router_handle(&s->front, conn, method, url, b->in.data ? b->in.data : "", b->in.len, &b->trail, &resp);
        }
        enum MHD_Result r = send_response(conn, b, &resp);
        json_decref(resp.body);
        json_decref(resp.headers);
        return r;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe)
{
        struct e2b_server *s = cls;
        struct body *b = *con_cls;
        if (b) {
                request_trail_finish(&b->trail, s->front.ctx, toe == MHD_REQUEST_TERMINATED_COMPLETED_OK);
                e2b_upload_abort(b->upload); /* the client went away mid-body */
                port_proxy_abort(b->proxy);
                json_decref(b->early.body);
                json_decref(b->early.headers);
                free(b->in.data);
                free(b);
                *con_cls = NULL;
        }
}

int e2b_server_start(struct spaced_context *ctx, int fd, struct e2b_server **ret, char *reason, size_t reason_size)
{
        struct e2b_server *s = calloc(1, sizeof(*s));
        if (!s) {
                close(fd);
                return -ENOMEM;
        }
        s->front.ctx = ctx;
        int r = e2b_keys_load_secret(ctx->cfg.state_dir, s->front.token_secret);
        if (r < 0) {
                snprintf(reason, reason_size, "cannot read or create %s/e2b-token.key: %s", ctx->cfg.state_dir, strerror(-r));
                close(fd);
                free(s);
                return r;
        }
        r = e2b_watchers_new(&s->front.watchers);
        if (r == 0)
                r = e2b_metrics_start(ctx, &s->front.metrics);
        if (r < 0) {
                snprintf(reason, reason_size, "cannot start the E2B metrics sampler: %s", strerror(-r));
                close(fd);
                e2b_server_free(s);
                return r;
        }
        /* Bound without SO_REUSEPORT (http_listener_bind): a port already taken, also by
         * spaced's own --listen, failed at the start rather than be shared at random. */
        struct http_listener_options o = {
                .listen_fd = fd, .tcp = true, .on_request = on_request, .on_completed = on_completed, .cls = s, .e2b_errors = true
        };
        char why[256];
        if (http_listener_start(&ctx->cfg, &o, &s->listener, why, sizeof(why)) < 0) {
                snprintf(reason, reason_size, "cannot listen on %s:%u for E2B: %s", ctx->cfg.e2b_listen_addr,
                         ctx->cfg.e2b_listen_port, why[0] ? why : "in use?");
                e2b_server_free(s);
                return -EADDRINUSE;
        }
        *ret = s;
        return 0;
}

void e2b_server_quiesce(struct e2b_server *s)
{
        if (s)
                http_listener_quiesce(s->listener);
}

unsigned e2b_server_connections(struct e2b_server *s)
{
        return s ? http_listener_connections(s->listener) : 0;
}

void e2b_server_free(struct e2b_server *s)
{
        if (!s)
                return;
        http_listener_free(s->listener);
        e2b_metrics_free(s->front.metrics);
        e2b_watchers_free(s->front.watchers);
        explicit_bzero(s->front.token_secret, sizeof(s->front.token_secret));
        free(s);
}
