/* Snapshots, restore, fork and /v1/capabilities. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_cursor.h"
#include "api/api_json.h"
#include "api/api_render.h"
#include "api/api_routes.h"
#include "operations/sandbox_history.h"
#include "runtime/runtime_driver.h"
#include "service/snapshot_access.h"
#include "service/snapshot_service.h"
#include "runtime/runtime_registry.h"
#include "spaced/spaced_context.h"
#include "service/policy_gate.h"

static bool id_ok(struct api_request *req, int segment, const char *what, struct api_response *resp)
{
        if (api_json_name_ok(req->segments[segment]))
                return true;
        struct space_error err;
        space_error_set(&err, SPACE_E_NOT_FOUND, "%s %.64s not found", what, req->segments[segment]);
        api_response_error(resp, &err);
        return false;
}

void route_snapshot_create(struct api_request *req, struct api_response *resp)
{
        static const char *const fields[] = { "label", "memory", NULL };
        struct space_error err = { 0 };
        struct api_wait w;
        json_t *body = NULL;
        const char *label = "";
        bool memory = false;
        struct snapshot snap;
        struct operation op;
        if (!id_ok(req, 2, "sandbox", resp))
                return;
        if (api_wait_parse(req, &w, &err) < 0 || api_request_json(req, &body, &err) < 0 ||
            api_json_only(body, fields, "", &err) < 0 || api_json_string(body, "label", 127, &label, &err) < 0 ||
            api_json_bool(body, "memory", &memory, &err) < 0 ||
            sandbox_history_snapshot(req->ctx, req->segments[2], label, memory, false, &snap, &op, &err) < 0)
                api_response_error(resp, &err);
        else
                api_respond_operation(req, resp, &op, &w, "snapshot");
        json_decref(body);
}

static void list_snapshots(struct api_request *req, struct api_response *resp, const char *sandbox_id)
{
        struct space_error err = { 0 };
        struct snapshot *all = NULL;
        struct api_page page;
        size_t n = 0;
        if (api_cursor_parse(req, "snapshots", &page, &err) < 0 ||
            snapshot_service_list(req->ctx, &req->principal, api_request_query(req, "project"), sandbox_id, &page.store, &all, &n,
                                  &err) < 0)
                return api_response_error(resp, &err);
        size_t shown = api_page_rows(&page, n);
        json_t *arr = json_array();
        for (size_t i = 0; i < shown; i++)
                json_array_append_new(arr, api_render_snapshot(&all[i]));
        json_t *next =
                shown ? api_cursor_next(&page, "snapshots", n, all[shown - 1].created_at_ms, all[shown - 1].id) : json_null();
        free(all);
        api_response_json(resp, 200, json_pack("{s:o, s:o}", "snapshots", arr, "next_cursor", next));
}

void route_snapshot_list_of_sandbox(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct sandbox sb;
        if (api_load_sandbox(req, &sb, &err) < 0)
                return api_response_error(resp, &err);
        sandbox_release(&sb);
        list_snapshots(req, resp, req->segments[2]);
}

void route_snapshot_list(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        const char *sandbox_id = api_request_query(req, "sandbox_id");
        if (sandbox_id && !api_json_name_ok(sandbox_id)) {
                space_error_set(&err, SPACE_E_INVALID_REQUEST, "sandbox_id is not a valid id");
                return api_response_error(resp, &err);
        }
        list_snapshots(req, resp, sandbox_id);
}

void route_snapshot_get(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct snapshot snap;
        if (!id_ok(req, 2, "snapshot", resp))
                return;
        if (snapshot_access_load(req->ctx, &req->principal, req->segments[2], &snap, &err) < 0)
                return api_response_error(resp, &err);
        api_response_json(resp, 200, api_render_snapshot(&snap));
}

void route_snapshot_delete(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        if (!id_ok(req, 2, "snapshot", resp))
                return;
        if (sandbox_history_delete_snapshot(req->ctx, req->segments[2], &err) < 0)
                api_response_error(resp, &err);
        else
                api_response_json(resp, 204, NULL);
}

void route_sandbox_restore(struct api_request *req, struct api_response *resp)
{
        static const char *const fields[] = { "snapshot_id", NULL };
        struct space_error err = { 0 };
        struct api_wait w;
        json_t *body = NULL;
        const char *snapshot_id = NULL;
        struct operation op;
        if (!id_ok(req, 2, "sandbox", resp))
                return;
        if (api_wait_parse(req, &w, &err) < 0 || api_request_json(req, &body, &err) < 0 ||
            api_json_only(body, fields, "", &err) < 0 || api_json_string(body, "snapshot_id", 31, &snapshot_id, &err) < 0)
                goto fail;
        if (!snapshot_id) {
                space_error_set(&err, SPACE_E_INVALID_REQUEST, "snapshot_id is required");
                goto fail;
        }
        struct snapshot seen;
        if (snapshot_access_load(req->ctx, &req->principal, snapshot_id, &seen, &err) < 0)
                goto fail;
        if (sandbox_history_restore(req->ctx, req->segments[2], snapshot_id, &op, &err) < 0)
                goto fail;
        api_respond_operation(req, resp, &op, &w, "sandbox");
        json_decref(body);
        return;
fail:
        api_response_error(resp, &err);
        json_decref(body);
}

void route_sandbox_fork(struct api_request *req, struct api_response *resp)
{
        static const char *const fields[] = { "snapshot_id", "count", "metadata", "memory", NULL };
        struct space_error err = { 0 };
        struct api_wait w;
        json_t *body = NULL, *metadata = NULL;
        const char *snapshot_id = NULL;
        long long count = 1;
        bool memory = false;
        char(*ids)[32] = NULL;
        struct operation op;
        if (!id_ok(req, 2, "sandbox", resp))
                return;
        if (api_wait_parse(req, &w, &err) < 0 || api_request_json(req, &body, &err) < 0 ||
            api_json_only(body, fields, "", &err) < 0 || api_json_string(body, "snapshot_id", 31, &snapshot_id, &err) < 0 ||
            api_json_int(body, "count", 1, 16, &count, &err) < 0 || api_json_bool(body, "memory", &memory, &err) < 0 ||
            api_json_string_map(body, "metadata", api_json_metadata_key_ok, 64, 256, &metadata, &err) < 0)
                goto fail;
        struct snapshot seen;
        if (memory && snapshot_id) {
                space_error_set(&err, SPACE_E_INVALID_REQUEST,
                                "memory applies to a fork of the running sandbox; a fork from a memory snapshot has its memory");
                goto fail;
        }
        if (snapshot_id && snapshot_access_load(req->ctx, &req->principal, snapshot_id, &seen, &err) < 0)
                goto fail;
        struct sandbox source = { 0 };
        if (api_load_sandbox(req, &source, &err) < 0)
                goto fail;
        int gated = policy_gate_fork(req->ctx, &source, count, &err);
        sandbox_release(&source);
        if (gated < 0)
                goto fail;
        if (sandbox_history_fork(req->ctx, req->segments[2], snapshot_id, (int)count, memory, metadata, &ids, &op, &err) < 0)
                goto fail;
        free(ids);
        api_respond_operation(req, resp, &op, &w, "sandboxes");
        json_decref(body);
        return;
fail:
        api_response_error(resp, &err);
        json_decref(body);
}

static json_t *render_capabilities(const struct runtime_driver *d)
{
        return json_pack("{s:b, s:b, s:b, s:b, s:b, s:b}", "pause", d->caps.pause, "filesystem_snapshot", 1, "memory_snapshot",
                         d->caps.memory_snapshot, "restore", 1, "fork", 1, "fd_passing", d->caps.fd_passing);
}

/* One driver this server hosts; new templates are bound to the default one. */
static json_t *render_driver(const struct runtime_driver *d, bool is_default)
{
        json_t *o = json_pack("{s:s, s:s, s:b, s:o, s:{s:s}}", "name", d->ops->name, "version",
                              d->caps.version[0] ? d->caps.version : d->ops->version, "default", is_default, "capabilities",
                              render_capabilities(d), "details", "memory_snapshot", d->caps.memory_snapshot_detail);
        if (o && d->caps.cgroup[0])
                json_object_set_new(o, "cgroup", json_string(d->caps.cgroup));
        return o;
}

void route_capabilities(struct api_request *req, struct api_response *resp)
{
        const struct runtime_registry *reg = &req->ctx->runtimes;
        const struct runtime_driver *d = runtime_registry_default(reg);
        json_t *drivers = json_array();
        for (size_t i = 0; i < reg->n; i++)
                json_array_append_new(drivers, render_driver(reg->drivers[i], reg->drivers[i] == d));
        /* The top-level fields describe the default driver (what clients read before there
         * were several). */
        api_response_json(resp, 200,
                          json_pack("{s:s, s:s, s:o, s:{s:s}, s:o}", "runtime", d->ops->name, "runtime_version", d->ops->version,
                                    "capabilities", render_capabilities(d), "details", "memory_snapshot",
                                    d->caps.memory_snapshot_detail, "drivers", drivers));
}
