/* PATCH /v1/sandboxes/{id} and the rolling snapshot policy shared with create. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "api/api_json.h"
#include "api/api_render.h"
#include "api/api_routes.h"
#include "operations/idle_policy.h"
#include "service/sandbox_service.h"
#include "spaced/spaced_context.h"

#define WEEK_S 604800

int api_rolling_policy_parse(struct spaced_context *ctx, const json_t *v, json_t **ret, struct space_error *err)
{
        static const char *const fields[] = { "interval_s", "retain_s", "max_count", "memory", NULL };
        long long interval = 0, retain = WEEK_S, max_count = 168;
        bool memory = false;
        if (!v || json_is_null(v)) {
                *ret = NULL;
                return 0;
        }
        if (!json_is_object(v))
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "rolling_snapshots must be an object or null");
        if (api_json_only(v, fields, "rolling_snapshots", err) < 0 ||
            api_json_int(v, "interval_s", 60, WEEK_S, &interval, err) < 0 ||
            api_json_int(v, "retain_s", 60, WEEK_S, &retain, err) < 0 ||
            api_json_int(v, "max_count", 1, 10000, &max_count, err) < 0 || api_json_bool(v, "memory", &memory, err) < 0)
                return -1;
        json_t *given = json_object_get(v, "interval_s");
        if (!given || json_is_null(given)) /* null is not "0": the schema's minimum is 60 */
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "rolling_snapshots.interval_s is required (60 to %d)",
                                       WEEK_S);
        /* memory: whether the sandbox's runtime can is the service's to say (sandbox_memory_rolling_check) */
        *ret = json_pack("{s:I, s:I, s:I, s:b}", "interval_s", (json_int_t)interval, "retain_s", (json_int_t)retain, "max_count",
                         (json_int_t)max_count, "memory", memory);
        return 0;
}

json_t *api_rolling_policy_default(const struct spaced_context *ctx)
{
        if (ctx->cfg.rolling_interval_s <= 0)
                return NULL;
        return json_pack("{s:I, s:I, s:I, s:b}", "interval_s", (json_int_t)ctx->cfg.rolling_interval_s, "retain_s",
                         (json_int_t)ctx->cfg.rolling_retain_s, "max_count", (json_int_t)ctx->cfg.rolling_max_count, "memory", 0);
}

void route_sandbox_patch(struct api_request *req, struct api_response *resp)
{
        static const char *const fields[] = { "metadata", "timeout_s", "on_timeout", "rolling_snapshots", "idle", NULL };
        struct space_error err = { 0 };
        json_t *body = NULL, *metadata = NULL, *rolling = NULL, *idle = NULL;
        const char *on_timeout = NULL;
        long long timeout_s = -1;
        struct sandbox sb;
        if (api_request_json(req, &body, &err) < 0 || api_json_only(body, fields, "", &err) < 0 ||
            api_json_string_map(body, "metadata", api_json_metadata_key_ok, 64, 256, &metadata, &err) < 0 ||
            api_json_int(body, "timeout_s", 0, 30LL * 24 * 3600, &timeout_s, &err) < 0 ||
            api_json_string(body, "on_timeout", 16, &on_timeout, &err) < 0 ||
            api_rolling_policy_parse(req->ctx, json_object_get(body, "rolling_snapshots"), &rolling, &err) < 0 ||
            idle_policy_parse(json_object_get(body, "idle"), "idle", &idle, &err) < 0)
                goto fail;
        if (on_timeout && strcmp(on_timeout, "pause") && strcmp(on_timeout, "stop") && strcmp(on_timeout, "destroy")) {
                space_error_set(&err, SPACE_E_INVALID_REQUEST, "on_timeout must be pause, stop or destroy");
                goto fail;
        }
        struct sandbox_change c = { .metadata = metadata,
                                    .on_timeout = on_timeout,
                                    .set_rolling = json_object_get(body, "rolling_snapshots") != NULL,
                                    .rolling = rolling,
                                    .set_idle = json_object_get(body, "idle") != NULL,
                                    .idle = idle,
                                    .timeout_s = timeout_s };
        if (sandbox_service_change(req->ctx, &req->principal, req->segments[2], &c, &sb, &err) < 0)
                goto fail;
        api_response_json(resp, 200, api_sandbox_json(req->ctx, &sb));
        sandbox_release(&sb);
        json_decref(rolling);
        json_decref(idle);
        json_decref(body);
        return;
fail:
        api_response_error(resp, &err);
        json_decref(rolling);
        json_decref(idle);
        json_decref(body);
}
