/* /v1/templates, /v1/operations, /v1/keys, /v1/version. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_auth.h"
#include "api/api_cursor.h"
#include "api/api_json.h"
#include "api/api_render.h"
#include "api/api_routes.h"
#include "api/key_request.h"
#include "runtime/cgroup/cgroup_manager.h"
#include "runtime/runtime_driver.h"
#include "service/key_service.h"
#include "service/operation_access.h"
#include "service/operation_service.h"
#include "service/template_service.h"
#include "service/template_access.h"
#include "runtime/runtime_registry.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"
#include "templates/template_catalog.h"
#include "templates/template_ref.h"

static bool name_segment_ok(struct api_request *req, const char *what, struct api_response *resp)
{
        if (strcmp(what, "template") == 0 ? template_ref_ok(req->segments[2]) : api_json_name_ok(req->segments[2]))
                return true;
        struct space_error err;
        space_error_set(&err, SPACE_E_NOT_FOUND, "%s %.64s not found", what, req->segments[2]);
        api_response_error(resp, &err);
        return false;
}

static void store_failure(struct api_response *resp, int r, const char *what, const char *name)
{
        struct space_error err;
        if (r == -ENOENT)
                space_error_set(&err, SPACE_E_NOT_FOUND, "%s %s not found", what, name);
        else
                space_error_errno(&err, r, "read %s %s", what, name);
        api_response_error(resp, &err);
}

void route_version(struct api_request *req, struct api_response *resp)
{
        const struct runtime_driver *d = runtime_registry_default(&req->ctx->runtimes);
        api_response_json(resp, 200,
                          json_pack("{s:s, s:s, s:s, s:s, s:{s:b, s:b}}", "version", SPACE_VERSION, "api", "v1", "runtime",
                                    d->ops->name, "cgroup", d->caps.cgroup, "capabilities", "pause", d->caps.pause,
                                    "memory_snapshot", d->caps.memory_snapshot));
}

void route_template_list(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct api_page page;
        struct template_record *all = NULL;
        size_t n = 0;
        if (api_cursor_parse(req, "templates", &page, &err) < 0 ||
            template_service_list(req->ctx, &req->principal, api_request_query(req, "project"), &page.store, &all, &n, &err) < 0)
                return api_response_error(resp, &err);
        size_t shown = api_page_rows(&page, n);
        json_t *arr = json_array();
        for (size_t i = 0; i < shown; i++)
                json_array_append_new(arr, api_render_template(&all[i]));
        json_t *next = shown ? api_cursor_next(&page, "templates", n, 0, all[shown - 1].name) : json_null();
        for (size_t i = 0; i < n; i++)
                template_record_release(&all[i]);
        free(all);
        api_response_json(resp, 200, json_pack("{s:o, s:o}", "templates", arr, "next_cursor", next));
}

/* The tags of a name: {"tag", "name", "digest", "state", "created_at"} per name:tag row. */
static json_t *tags_of(struct spaced_context *ctx, const struct principal *p, const char *name)
{
        struct template_record *all = NULL;
        struct space_error ignored;
        size_t n = 0, len = strlen(name);
        json_t *arr = json_array();
        if (template_service_tags(ctx, p, name, &all, &n, &ignored) < 0)
                return arr;
        for (size_t i = 0; i < n; i++) {
                json_t *env = all[i].environment;
                json_array_append_new(arr,
                                      json_pack("{s:s, s:s, s:O?, s:s, s:O?}", "tag", all[i].name + len + 1, "name", all[i].name,
                                                "digest", json_object_get(env, "digest"), "state", all[i].state, "created_at",
                                                json_object_get(env, "created_at")));
                template_record_release(&all[i]);
        }
        free(all);
        return arr;
}

void route_template_get(struct api_request *req, struct api_response *resp)
{
        struct template_record t;
        if (!name_segment_ok(req, "template", resp))
                return;
        const char *ref = req->segments[2];
        int r = template_ref_resolve(req->ctx, ref, &t);
        json_t *tags = strchr(ref, ':') ? NULL : tags_of(req->ctx, &req->principal, ref);
        if (r == -ENOENT && tags && json_array_size(tags) > 0) {
                /* A name with tags but no "latest": list them. */
                api_response_json(resp, 200, json_pack("{s:s, s:o}", "name", ref, "tags", tags));
                return;
        }
        if (r < 0) {
                json_decref(tags);
                return store_failure(resp, r, "template", ref);
        }
        json_t *j = api_render_template(&t);
        if (tags)
                json_object_set_new(j, "tags", tags);
        api_response_json(resp, 200, j);
        template_record_release(&t);
}

void route_template_build(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct operation op;
        struct api_wait w;
        if (!name_segment_ok(req, "template", resp))
                return;
        if (api_wait_parse(req, &w, &err) < 0 || template_catalog_submit_build(req->ctx, req->segments[2], &op, &err) < 0)
                api_response_error(resp, &err);
        else
                api_respond_operation(req, resp, &op, &w, "template");
}

void route_template_delete(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        bool force = false;
        if (!name_segment_ok(req, "template", resp))
                return;
        if (api_request_query_bool(req, "force", &force, &err) < 0 ||
            template_catalog_delete(req->ctx, req->segments[2], force, &err) < 0)
                api_response_error(resp, &err);
        else
                api_response_json(resp, 204, NULL);
}

void route_operation_list(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        const char *target = api_request_query(req, "target"), *state = api_request_query(req, "state");
        enum operation_state filter;
        if (state && operation_state_from_name(state, &filter) < 0) {
                space_error_set(&err, SPACE_E_INVALID_REQUEST, "unknown operation state \"%.32s\"", state);
                return api_response_error(resp, &err);
        }
        struct api_page page;
        if (api_cursor_parse(req, "operations", &page, &err) < 0)
                return api_response_error(resp, &err);
        struct operation *ops = NULL;
        size_t n = 0;
        if (operation_service_list(req->ctx, &req->principal, api_request_query(req, "project"), target, state ? (int)filter : -1,
                                   &page.store, &ops, &n, &err) < 0)
                return api_response_error(resp, &err);
        size_t shown = api_page_rows(&page, n);
        json_t *arr = json_array();
        for (size_t i = 0; i < shown; i++)
                json_array_append_new(arr, api_render_operation(&ops[i]));
        json_t *next =
                shown ? api_cursor_next(&page, "operations", n, ops[shown - 1].created_at_ms, ops[shown - 1].id) : json_null();
        free(ops);
        api_response_json(resp, 200, json_pack("{s:o, s:o}", "operations", arr, "next_cursor", next));
}

void route_operation_get(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct operation op;
        if (!name_segment_ok(req, "operation", resp))
                return;
        if (operation_access_load(req->ctx, &req->principal, req->segments[2], &op, &err) < 0)
                return api_response_error(resp, &err);
        api_response_json(resp, 200, api_render_operation(&op));
}

void route_key_create(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        json_t *body = NULL;
        struct key_spec spec;
        struct api_key k;
        char secret[KEY_SECRET_SIZE];
        if (api_request_json(req, &body, &err) < 0 || key_request_parse(body, wallclock_now_ms(), &spec, &err) < 0 ||
            key_service_create(req->ctx, &req->principal, &spec, &k, secret, sizeof(secret), &err) < 0)
                goto fail;
        json_t *j = api_render_key(&k);
        json_object_set_new(j, "secret", json_string(secret));
        explicit_bzero(secret, sizeof(secret));
        api_response_json(resp, 201, j);
        snprintf(resp->created, sizeof(resp->created), "%s", k.id);
        json_decref(body);
        return;
fail:
        api_response_error(resp, &err);
        json_decref(body);
}

void route_key_list(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct api_page page;
        struct api_key *keys = NULL;
        size_t n = 0;
        if (api_cursor_parse(req, "keys", &page, &err) < 0 ||
            key_service_list(req->ctx, &req->principal, api_request_query(req, "project"), &page.store, &keys, &n, &err) < 0)
                return api_response_error(resp, &err);
        size_t shown = api_page_rows(&page, n);
        json_t *arr = json_array();
        for (size_t i = 0; i < shown; i++)
                json_array_append_new(arr, api_render_key(&keys[i]));
        json_t *next = shown ? api_cursor_next(&page, "keys", n, keys[shown - 1].created_at_ms, keys[shown - 1].id) : json_null();
        free(keys);
        api_response_json(resp, 200, json_pack("{s:o, s:o}", "keys", arr, "next_cursor", next));
}

void route_key_delete(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        if (!name_segment_ok(req, "key", resp))
                return;
        if (key_service_revoke(req->ctx, &req->principal, req->segments[2], &err) < 0)
                return api_response_error(resp, &err);
        api_response_json(resp, 204, NULL);
}
