/* /v1/sandboxes: create, list, get, lifecycle actions, delete. */
#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <string.h>

#include "api/api_cursor.h"
#include "api/api_json.h"
#include "api/api_render.h"
#include "api/api_routes.h"
#include "operations/idle_policy.h"
#include "operations/operation_queue.h"
#include "service/sandbox_create_request.h"
#include "service/sandbox_service.h"
#include "service/template_service.h"
#include "operations/sandbox_lifecycle.h"
#include "operations/sandbox_memory.h"
#include "service/sandbox_access.h"
#include "service/snapshot_access.h"
#include "service/template_access.h"
#include "runtime/runtime_driver.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

int api_wait_parse(const struct api_request *req, struct api_wait *ret, struct space_error *err)
{
        struct api_wait w = { .wait = false, .timeout_s = 60 };
        if (api_request_query_bool(req, "wait", &w.wait, err) < 0 ||
            api_request_query_int(req, "timeout_s", 1, 600, &w.timeout_s, err) < 0)
                return -1;
        *ret = w;
        return 0;
}

json_t *api_sandbox_json(struct spaced_context *ctx, const struct sandbox *sb)
{
        struct pool_health pool;
        pool_monitor_get(&ctx->pool_health, &pool);
        return api_render_sandbox(sb, &pool);
}

/* The operation's target as it is now, as the caller sees it. */
static json_t *render_target(struct api_request *req, const struct operation *op, const char *key)
{
        struct spaced_context *ctx = req->ctx;
        const struct principal *p = &req->principal;
        struct space_error ignored;
        json_t *j = NULL;
        if (strcmp(key, "sandbox") == 0) {
                struct sandbox sb;
                if (sandbox_access_load(ctx, p, op->target, &sb, &ignored) == 0) {
                        j = api_sandbox_json(ctx, &sb);
                        sandbox_release(&sb);
                }
        } else if (strcmp(key, "snapshot") == 0 || strcmp(key, "sandboxes") == 0) {
                /* Named in the operation's parameters: the snapshot it takes, the forks it makes. */
                json_t *params = json_loads(op->params, 0, NULL);
                if (strcmp(key, "snapshot") == 0) {
                        struct snapshot snap;
                        const char *sid = json_string_value(json_object_get(params, "snapshot_id"));
                        if (sid && snapshot_access_load(ctx, p, sid, &snap, &ignored) == 0)
                                j = api_render_snapshot(&snap);
                } else {
                        size_t i;
                        json_t *v;
                        j = json_array();
                        json_array_foreach(json_object_get(params, "children"), i, v)
                        {
                                struct sandbox sb;
                                if (json_is_string(v) && sandbox_access_load(ctx, p, json_string_value(v), &sb, &ignored) == 0) {
                                        json_array_append_new(j, api_sandbox_json(ctx, &sb));
                                        sandbox_release(&sb);
                                }
                        }
                }
                json_decref(params);
        } else if (strcmp(key, "template") == 0) {
                struct template_record t;
                if (template_service_get(ctx, p, op->target, &t, &ignored) == 0) {
                        j = api_render_template(&t);
                        template_record_release(&t);
                }
        }
        return j ? j : json_null();
}

void api_respond_operation(struct api_request *req, struct api_response *resp, const struct operation *op,
                           const struct api_wait *w, const char *key)
{
        struct operation latest = *op;
        unsigned status = 202;
        if (w->wait && operation_queue_wait(req->ctx->queue, op->id, (int)w->timeout_s * 1000, &latest) == 0)
                status = 200;
        json_t *body = json_pack("{s:o, s:o}", "operation", api_render_operation(&latest), key, render_target(req, &latest, key));
        if (status == 200 && latest.state == OPERATION_FAILED) {
                struct space_error failed = { .code = space_error_code_from_name(latest.error_code) };
                snprintf(failed.message, sizeof(failed.message), "%s", latest.error_message);
                api_response_error(resp, &failed);
                json_object_update(resp->body, body);
                json_decref(body);
                return;
        }
        api_response_json(resp, status, body);
}

static const char *const create_fields[] = { "template",          "snapshot_id", "resources", "env",     "metadata", "timeout_s",
                                             "rolling_snapshots", "on_timeout",  "network",   "runtime", "idle",     NULL };
static const char *const resource_fields[] = { "cpus", "memory_mb", "pids", "disk_mb", NULL };

/* The v1 body as a create request: only parsing here; sandbox_create_request_submit
 * validates what both front doors ask for. */
static int parse_create(struct spaced_context *ctx, const json_t *body, struct sandbox_create_request *cr,
                        struct space_error *err)
{
        const char *on_timeout = "stop";
        json_t *res = json_object_get(body, "resources"), *tmpl = json_object_get(body, "template"), *env = NULL,
               *metadata = NULL;
        if (api_json_only(body, create_fields, "", err) < 0 ||
            api_json_string(body, "template", 160, &cr->template_ref, err) < 0 ||
            api_json_string(body, "snapshot_id", 31, &cr->snapshot_id, err) < 0 ||
            api_json_string(body, "on_timeout", 16, &on_timeout, err) < 0 ||
            api_json_string(body, "runtime", 32, &cr->runtime, err) < 0 ||
            api_json_int(body, "timeout_s", 0, 30LL * 24 * 3600, &cr->timeout_s, err) < 0 ||
            api_json_string_map(body, "env", api_json_env_name_ok, 256, 32768, &env, err) < 0 ||
            api_json_string_map(body, "metadata", api_json_metadata_key_ok, 64, 256, &metadata, err) < 0)
                return -1;
        /* the maps are borrowed from body: the request holds its own references */
        cr->env = json_incref(env);
        cr->metadata = json_incref(metadata);
        cr->network = json_incref(json_object_get(body, "network")); /* checked by sandbox_create_request_submit */
        snprintf(cr->on_timeout, sizeof(cr->on_timeout), "%s", on_timeout);
        if (res && !json_is_null(res)) {
                long long memory = cr->resources.memory_mb, pids = cr->resources.pids, disk = cr->resources.disk_mb;
                if (!json_is_object(res))
                        return space_error_set(err, SPACE_E_INVALID_REQUEST, "field resources must be an object");
                if (api_json_only(res, resource_fields, "resources", err) < 0 ||
                    api_json_number(res, "cpus", 0.01, 64, &cr->resources.cpus, err) < 0 ||
                    api_json_int(res, "memory_mb", 16, 65536, &memory, err) < 0 ||
                    api_json_int(res, "pids", 16, 65536, &pids, err) < 0 ||
                    api_json_int(res, "disk_mb", 16, ctx->cfg.sandbox_disk_max_mb, &disk, err) < 0)
                        return -1;
                cr->resources.memory_mb = memory;
                cr->resources.pids = pids;
                cr->resources.disk_mb = disk;
                const json_t *d = json_object_get(res, "disk_mb");
                cr->disk_given = d && !json_is_null(d);
        }
        if (json_object_get(body, "rolling_snapshots")) {
                if (api_rolling_policy_parse(ctx, json_object_get(body, "rolling_snapshots"), &cr->rolling, err) < 0)
                        return -1;
        } else {
                cr->rolling = api_rolling_policy_default(ctx);
        }
        if (idle_policy_parse(json_object_get(body, "idle"), "idle", &cr->idle, err) < 0)
                return -1;
        if (cr->snapshot_id) {
                if (tmpl && !json_is_null(tmpl))
                        return space_error_set(err, SPACE_E_INVALID_REQUEST, "give template or snapshot_id, not both");
                if (!api_json_name_ok(cr->snapshot_id))
                        return space_error_set(err, SPACE_E_NOT_FOUND, "snapshot %.64s not found", cr->snapshot_id);
                cr->template_ref = NULL;
        }
        return 0;
}

void route_sandbox_create(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        json_t *body = NULL;
        struct sandbox_create_request cr;
        struct sandbox sb = { 0 };
        struct operation op;
        struct api_wait w;
        sandbox_create_request_init(req->ctx, &cr);
        cr.caller = &req->principal;
        if (api_wait_parse(req, &w, &err) < 0 || api_request_json(req, &body, &err) < 0 ||
            parse_create(req->ctx, body, &cr, &err) < 0 || sandbox_create_request_submit(req->ctx, &cr, &sb, &op, &err) < 0)
                api_response_error(resp, &err);
        else {
                snprintf(resp->created, sizeof(resp->created), "%s", sb.id);
                api_respond_operation(req, resp, &op, &w, "sandbox");
        }
        sandbox_create_request_release(&cr);
        json_decref(body);
        sandbox_release(&sb);
}

struct metadata_filter {
        const struct sandbox *sb;
        bool ok;
};

static enum MHD_Result check_metadata(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
        struct metadata_filter *f = cls;
        if (strncmp(key, "metadata.", 9) != 0)
                return MHD_YES;
        json_t *v = json_object_get(f->sb->metadata, key + 9);
        if (!v || !json_is_string(v) || strcmp(json_string_value(v), value ? value : "") != 0)
                f->ok = false;
        return MHD_YES;
}

static bool metadata_matches(struct api_request *req, const struct sandbox *sb)
{
        struct metadata_filter f = { .sb = sb, .ok = true };
        MHD_get_connection_values(req->conn, MHD_GET_ARGUMENT_KIND, check_metadata, &f);
        return f.ok;
}

void route_sandbox_list(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        const char *state = api_request_query(req, "state");
        enum sandbox_state filter;
        if (state && sandbox_state_from_name(state, &filter) < 0) {
                space_error_set(&err, SPACE_E_INVALID_REQUEST, "unknown state \"%.32s\"", state);
                api_response_error(resp, &err);
                return;
        }
        struct api_page page;
        if (api_cursor_parse(req, "sandboxes", &page, &err) < 0) {
                api_response_error(resp, &err);
                return;
        }
        struct sandbox *all = NULL;
        size_t n = 0;
        if (sandbox_service_list(req->ctx, &req->principal, api_request_query(req, "project"), state ? (int)filter : -1,
                                 &page.store, &all, &n, &err) < 0)
                return api_response_error(resp, &err);
        /* The page is a window of the rows in the state asked for; metadata filters apply
         * to it, so a page may show fewer than limit and still have a next_cursor. */
        size_t shown = api_page_rows(&page, n);
        json_t *arr = json_array();
        for (size_t i = 0; i < shown; i++)
                if (metadata_matches(req, &all[i]))
                        json_array_append_new(arr, api_sandbox_json(req->ctx, &all[i]));
        json_t *next =
                shown ? api_cursor_next(&page, "sandboxes", n, all[shown - 1].created_at_ms, all[shown - 1].id) : json_null();
        sandbox_array_free(all, n);
        api_response_json(resp, 200, json_pack("{s:o, s:o}", "sandboxes", arr, "next_cursor", next));
}

int api_load_sandbox(struct api_request *req, struct sandbox *ret, struct space_error *err)
{
        return sandbox_access_load(req->ctx, &req->principal, req->segments[2], ret, err);
}

void route_sandbox_get(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct sandbox sb;
        if (api_load_sandbox(req, &sb, &err) < 0) {
                api_response_error(resp, &err);
                return;
        }
        api_response_json(resp, 200, api_sandbox_json(req->ctx, &sb));
        sandbox_release(&sb);
}

/* GET /v1/sandboxes/{id}/stats: what it uses now, as its runtime measures it. */
void route_sandbox_stats(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct sandbox sb;
        struct runtime_stats st;
        if (api_load_sandbox(req, &sb, &err) < 0) {
                api_response_error(resp, &err);
                return;
        }
        int r = sandbox_service_usage(req->ctx, &sb, &st);
        if (r == -ESRCH)
                space_error_set(&err, SPACE_E_INVALID_STATE, "sandbox %s is %s: only a running or paused one has figures", sb.id,
                                sandbox_state_name(sb.state));
        else if (r < 0)
                space_error_errno(&err, r, "read the figures of %s", sb.id);
        if (r < 0) {
                api_response_error(resp, &err);
                sandbox_release(&sb);
                return;
        }
        uint64_t limit = st.memory_limit_bytes ? st.memory_limit_bytes : (uint64_t)sb.resources.memory_mb << 20;
        json_t *j = json_pack(
                "{s:s, s:s, s:o, s:{s:I, s:f}, s:{s:I, s:I, s:I}, s:{s:I, s:I}, s:{s:I, s:I}}", "sandbox_id", sb.id, "state",
                sandbox_state_name(sb.state), "timestamp", api_render_time(wallclock_now_ms()), "cpu", "usage_us",
                (json_int_t)st.cpu_usage_us, "limit", sb.resources.cpus, "memory", "used_bytes", (json_int_t)st.memory_bytes,
                "cache_bytes", (json_int_t)st.memory_cache_bytes, "limit_bytes", (json_int_t)limit, "disk", "used_bytes",
                (json_int_t)(st.disk_total_bytes > st.disk_free_bytes ? st.disk_total_bytes - st.disk_free_bytes : 0),
                "total_bytes", (json_int_t)st.disk_total_bytes, "limit_hits", "oom_kills", (json_int_t)st.oom_kills, "pids",
                (json_int_t)st.pids_max_hits);
        sandbox_release(&sb);
        api_response_json(resp, 200, j);
}

static void submit_action(struct api_request *req, struct api_response *resp, enum sandbox_action action)
{
        struct space_error err = { 0 };
        struct operation op;
        struct api_wait w;
        json_t *body = NULL;
        /* Actions take no body fields; an empty object (or nothing) is fine. */
        static const char *const none[] = { NULL };
        if (!api_json_name_ok(req->segments[2])) {
                space_error_set(&err, SPACE_E_NOT_FOUND, "sandbox %.64s not found", req->segments[2]);
                api_response_error(resp, &err);
                return;
        }
        if (api_wait_parse(req, &w, &err) < 0 || api_request_json(req, &body, &err) < 0 ||
            api_json_only(body, none, "", &err) < 0 ||
            sandbox_lifecycle_submit(req->ctx, req->segments[2], action, &op, &err) < 0)
                api_response_error(resp, &err);
        else
                api_respond_operation(req, resp, &op, &w, "sandbox");
        json_decref(body);
}

void route_sandbox_pause(struct api_request *req, struct api_response *resp)
{
        static const char *const fields[] = { "memory_to_disk", NULL };
        struct space_error err = { 0 };
        struct operation op;
        struct api_wait w;
        json_t *body = NULL;
        bool to_disk = false;
        if (!api_json_name_ok(req->segments[2])) {
                space_error_set(&err, SPACE_E_NOT_FOUND, "sandbox %.64s not found", req->segments[2]);
                api_response_error(resp, &err);
                return;
        }
        if (api_wait_parse(req, &w, &err) < 0 || api_request_json(req, &body, &err) < 0 ||
            api_json_only(body, fields, "", &err) < 0 || api_json_bool(body, "memory_to_disk", &to_disk, &err) < 0 ||
            (to_disk ? sandbox_memory_submit_hibernate(req->ctx, req->segments[2], &op, &err)
                     : sandbox_lifecycle_submit(req->ctx, req->segments[2], SANDBOX_ACTION_PAUSE, &op, &err)) < 0)
                api_response_error(resp, &err);
        else
                api_respond_operation(req, resp, &op, &w, "sandbox");
        json_decref(body);
}

void route_sandbox_action(struct api_request *req, struct api_response *resp)
{
        enum sandbox_action action;
        sandbox_action_from_name(req->segments[3], &action);
        submit_action(req, resp, action);
}

void route_sandbox_delete(struct api_request *req, struct api_response *resp)
{
        submit_action(req, resp, SANDBOX_ACTION_DESTROY);
}
