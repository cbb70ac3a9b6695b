#include "api/metrics_http.h"

#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/http_listener.h"
#include "api/http_response.h"
#include "api/request_trail.h"
#include "service/metrics_service.h"
#include "spaced/spaced_context.h"

struct text_body {
        char *text;
        size_t len, off;
};

static ssize_t text_read(void *cls, char *buf, size_t max)
{
        struct text_body *t = cls;
        size_t n = t->len - t->off < max ? t->len - t->off : max;
        memcpy(buf, t->text + t->off, n);
        t->off += n;
        return (ssize_t)n;
}

static void text_free(void *cls)
{
        struct text_body *t = cls;
        free(t->text);
        free(t);
}

/* The scrape as a sized stream over the rendered text. */
static void respond(struct spaced_context *ctx, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct text_body *t = calloc(1, sizeof(*t));
        if (!t) {
                space_error_set(&err, SPACE_E_INTERNAL, "out of memory");
                return api_response_error(resp, &err);
        }
        if (metrics_service_text(ctx, &t->text, &t->len, &err) < 0) {
                free(t);
                return api_response_error(resp, &err);
        }
        resp->status = 200;
        resp->content_type = METRICS_CONTENT_TYPE;
        resp->stream = (struct api_stream){ .read = text_read, .free = text_free, .cls = t, .sized = true, .size = t->len };
}

void route_metrics(struct api_request *req, struct api_response *resp)
{
        respond(req->ctx, resp);
}

struct metrics_listener {
        struct spaced_context *ctx;
        struct http_listener *listener;
};

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls)
{
        (void)version;
        struct metrics_listener *l = cls;
        struct request_trail *trail = *con_cls;
        if (!trail) {
                trail = calloc(1, sizeof(*trail));
                if (!trail)
                        return MHD_NO;
                request_trail_begin(trail, conn, "metrics", method, url);
                *con_cls = trail;
                return MHD_YES;
        }
        if (*upload_data_size) {
                *upload_data_size = 0; /* no route here takes a body: dropped, answered below */
                return MHD_YES;
        }
        (void)upload_data;
        struct api_response resp = { 0 };
        struct space_error err = { 0 };
        bool is_metrics = strcmp(trail->path, "/metrics") == 0;
        request_trail_route(trail, is_metrics ? "metrics.get" : NULL, false, NULL);
        if (!is_metrics) {
                space_error_set(&err, SPACE_E_NOT_FOUND, "this listener serves GET /metrics only");
                api_response_error(&resp, &err);
        } else if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
                space_error_set(&err, SPACE_E_METHOD_NOT_ALLOWED, "/metrics takes GET");
                api_response_error(&resp, &err);
        } else {
                /* A scraper keeps its connection between scrapes: give it the idle timeout. */
                http_listener_authenticated(conn);
                respond(l->ctx, &resp);
        }
        enum MHD_Result r = http_response_send(conn, &resp, true, 64 * 1024, trail);
        json_decref(resp.body);
        json_decref(resp.headers);
        return r;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe)
{
        (void)conn;
        struct metrics_listener *l = cls;
        struct request_trail *trail = *con_cls;
        if (trail) {
                request_trail_finish(trail, l->ctx, toe == MHD_REQUEST_TERMINATED_COMPLETED_OK);
                free(trail);
                *con_cls = NULL;
        }
}

int metrics_listener_start(struct spaced_context *ctx, int fd, struct metrics_listener **ret, char *reason, size_t reason_size)
{
        struct metrics_listener *l = calloc(1, sizeof(*l));
        if (!l) {
                close(fd);
                return -ENOMEM;
        }
        l->ctx = ctx;
        struct http_listener_options o = {
                .listen_fd = fd, .tcp = true, .on_request = on_request, .on_completed = on_completed, .cls = l
        };
        char why[256];
        int r = http_listener_start(&ctx->cfg, &o, &l->listener, why, sizeof(why));
        if (r < 0) {
                snprintf(reason, reason_size, "cannot listen on %s:%u for metrics: %s", ctx->cfg.metrics_listen_addr,
                         ctx->cfg.metrics_listen_port, why[0] ? why : "in use?");
                free(l);
                return r;
        }
        *ret = l;
        return 0;
}

void metrics_listener_quiesce(struct metrics_listener *l)
{
        if (l)
                http_listener_quiesce(l->listener);
}

unsigned metrics_listener_connections(const struct metrics_listener *l)
{
        return l ? http_listener_connections(l->listener) : 0;
}

void metrics_listener_free(struct metrics_listener *l)
{
        if (!l)
                return;
        http_listener_free(l->listener);
        free(l);
}
