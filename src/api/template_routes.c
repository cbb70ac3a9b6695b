/* GET /v1/templates/builds/{op}/log (?follow=true streams it until the build ends),
 * POST /v1/operations/{id}/cancel (template builds), POST /v1/templates/layers/prune. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api/api_json.h"
#include "api/api_render.h"
#include "api/api_routes.h"
#include "service/operation_access.h"
#include "service/operation_service.h"
#include "spaced/spaced_context.h"
#include "templates/build_log.h"
#include "templates/template_build.h"

struct log_stream {
        struct spaced_context *ctx;
        struct principal caller; /* who opened the stream */
        char op_id[32];
        char path[4096];
        int fd;
        bool follow, ended;
};

static bool op_over(struct log_stream *ls)
{
        struct operation op;
        return operation_service_over(ls->ctx, &ls->caller, ls->op_id, &op);
}

static ssize_t log_read(void *cls, char *buf, size_t max)
{
        struct log_stream *ls = cls;
        for (;;) {
                if (ls->fd < 0)
                        ls->fd = open(ls->path, O_RDONLY | O_CLOEXEC);
                ssize_t n = ls->fd >= 0 ? read(ls->fd, buf, max) : 0;
                if (n > 0)
                        return n;
                if (n < 0 && errno != EINTR)
                        return -1;
                if (!ls->follow || ls->ended || atomic_load(&ls->ctx->shutting_down))
                        return 0;
                /* At the end of what is written: once the build is over, one more read drains it. */
                if (op_over(ls))
                        ls->ended = true;
                else
                        nanosleep(&(struct timespec){ .tv_nsec = 100 * 1000 * 1000 }, NULL);
        }
}

static void log_free(void *cls)
{
        struct log_stream *ls = cls;
        if (ls->fd >= 0)
                close(ls->fd);
        free(ls);
}

void route_template_build_log(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct operation op;
        const char *id = req->segments[3];
        bool follow = false;
        if (api_request_query_bool(req, "follow", &follow, &err) < 0)
                return api_response_error(resp, &err);
        if (!api_json_name_ok(id)) {
                space_error_set(&err, SPACE_E_NOT_FOUND, "build %.64s not found", id);
                return api_response_error(resp, &err);
        }
        if (operation_service_get_build(req->ctx, &req->principal, id, &op, &err) < 0)
                return api_response_error(resp, &err);
        struct log_stream *ls = calloc(1, sizeof(*ls));
        if (!ls) {
                space_error_set(&err, SPACE_E_INTERNAL, "out of memory");
                return api_response_error(resp, &err);
        }
        ls->ctx = req->ctx;
        ls->caller = req->principal;
        ls->fd = -1;
        ls->follow = follow;
        snprintf(ls->op_id, sizeof(ls->op_id), "%s", id);
        build_log_path(req->ctx->cfg.state_dir, id, ls->path, sizeof(ls->path));
        resp->status = 200;
        resp->stream = (struct api_stream){ .read = log_read, .free = log_free, .cls = ls };
        resp->content_type = "text/plain; charset=utf-8";
        resp->headers = json_pack("{s:s, s:s}", "X-Space-Operation-Id", id, "Cache-Control", "no-store");
}

void route_operation_cancel(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct operation op;
        const char *id = req->segments[2];
        if (!api_json_name_ok(id)) {
                space_error_set(&err, SPACE_E_NOT_FOUND, "operation %.64s not found", id);
                return api_response_error(resp, &err);
        }
        if (template_build_cancel(req->ctx, id, &err) < 0)
                return api_response_error(resp, &err);
        if (operation_access_load(req->ctx, &req->principal, id, &op, &err) < 0)
                return api_response_error(resp, &err);
        api_response_json(resp, 202, json_pack("{s:o}", "operation", api_render_operation(&op)));
}

void route_template_layers_prune(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        unsigned removed = 0;
        if (template_build_prune_layers(req->ctx, &removed, &err) < 0)
                return api_response_error(resp, &err);
        api_response_json(resp, 200, json_pack("{s:i}", "removed", (int)removed));
}
