/* /v1/health and /v1/ready: health_service's report as JSON, without a key (an
 * orchestrator's probes), 503 when it says failed (or, for readiness, stopping). */
#include <stdio.h>

#include "api/api_render.h"
#include "api/api_routes.h"
#include "service/health_service.h"
#include "spaced/spaced_context.h"

static json_t *render_pool(const struct spaced_context *ctx, const struct pool_health *h)
{
        json_t *pool = json_pack("{s:s, s:I, s:I, s:I, s:s*}", "condition", pool_condition_name(h->condition), "bytes",
                                 (json_int_t)h->pool_bytes, "free_bytes", (json_int_t)h->pool_free_bytes, "device_errors",
                                 (json_int_t)h->device_errors, "reason", h->reason[0] ? h->reason : NULL);
        if (pool && ctx->pool.image[0])
                json_object_set_new(pool, "image",
                                    json_pack("{s:I, s:I, s:I}", "bytes", (json_int_t)h->image_bytes, "allocated_bytes",
                                              (json_int_t)h->image_allocated_bytes, "host_free_bytes",
                                              (json_int_t)h->host_free_bytes));
        if (pool)
                json_object_set_new(pool, "checked_at", api_render_time(h->checked_at_ms));
        return pool;
}

static json_t *render_checks(const struct spaced_context *ctx, const struct health_report *r)
{
        const struct daemon_health_view *d = &r->daemon;
        return json_pack("{s:o, s:{s:s, s:s*, s:o}, s:{s:s, s:I}, s:{s:s, s:i, s:i, s:I, s:I}}", "pool",
                         render_pool(ctx, &r->pool), "store", "condition", health_status_name(r->store_status), "reason",
                         d->store_reason[0] ? d->store_reason : NULL, "checked_at", api_render_time(d->store_checked_at_ms),
                         "controller", "condition", health_status_name(r->controller_status), "idle_s",
                         (json_int_t)(d->controller_idle_us / 1000000), "workers", "condition",
                         health_status_name(r->workers_status), "total", r->workers.workers, "busy", r->workers.busy, "queued",
                         (json_int_t)r->workers.queued, "longest_busy_s", (json_int_t)(r->workers.longest_busy_us / 1000000));
}

/* ok, degraded or failed, each check's figures, and why when it is not ok; 503 when failed,
 * so that an orchestrator's liveness probe notices. */
void route_health(struct api_request *req, struct api_response *resp)
{
        struct health_report r;
        health_service_report(req->ctx, &r);
        json_t *body = json_pack("{s:s, s:o}", "status", health_status_name(r.status), "checks", render_checks(req->ctx, &r));
        if (body && r.reason[0])
                json_object_set_new(body, "reason", json_string(r.reason));
        api_response_json(resp, r.status == HEALTH_FAILED ? 503 : 200, body);
}

/* Ready for work: not failed and not stopping (a degraded spaced still takes work, and
 * refuses what it cannot do with a clear 503 of its own). */
void route_ready(struct api_request *req, struct api_response *resp)
{
        struct health_report r;
        health_service_report(req->ctx, &r);
        bool ready = r.status != HEALTH_FAILED && !r.stopping;
        const char *reason = r.stopping ? "spaced is stopping" : r.status == HEALTH_FAILED ? r.reason : NULL;
        api_response_json(
                resp, ready ? 200 : 503,
                json_pack("{s:b, s:s, s:s*}", "ready", ready, "status", health_status_name(r.status), "reason", reason));
}
