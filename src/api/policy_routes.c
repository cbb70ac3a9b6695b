/* /v1/policies: a project's policy documents (docs/governance.md) and the dry run. The body
 * of a create or a replace is the document itself; which project is the caller's, or
 * ?project= for the platform. Validation, scope and the cache are policy_service's. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_json.h"
#include "api/api_render.h"
#include "api/api_routes.h"
#include "service/policy_service.h"

static json_t *render_policy(const struct policy_record *p)
{
        return json_pack("{s:s, s:s, s:s, s:s*, s:I, s:O, s:o, s:o}", "id", p->id, "project", p->project_id, "name", p->name,
                         "sandbox_id", p->sandbox_id[0] ? p->sandbox_id : NULL, "version", (json_int_t)p->version, "document",
                         p->document, "created_at", api_render_time(p->created_at_ms), "updated_at",
                         api_render_time(p->updated_at_ms));
}

void route_policy_create(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        json_t *body = NULL;
        struct policy_record rec = { 0 };
        if (api_request_json(req, &body, &err) < 0 ||
            policy_service_create(req->ctx, &req->principal, api_request_query(req, "project"), body, &rec, &err) < 0)
                api_response_error(resp, &err);
        else {
                api_response_json(resp, 201, render_policy(&rec));
                snprintf(resp->created, sizeof(resp->created), "%s", rec.id);
        }
        policy_record_release(&rec);
        json_decref(body);
}

void route_policy_list(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct policy_record *all = NULL;
        size_t n = 0;
        if (policy_service_list(req->ctx, &req->principal, api_request_query(req, "project"), &all, &n, &err) < 0)
                return api_response_error(resp, &err);
        json_t *arr = json_array();
        for (size_t i = 0; i < n; i++)
                json_array_append_new(arr, render_policy(&all[i]));
        policy_record_array_free(all, n);
        api_response_json(resp, 200, json_pack("{s:o}", "policies", arr));
}

void route_policy_get(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct policy_record rec = { 0 };
        if (policy_service_get(req->ctx, &req->principal, req->segments[2], &rec, &err) < 0)
                return api_response_error(resp, &err);
        api_response_json(resp, 200, render_policy(&rec));
        policy_record_release(&rec);
}

void route_policy_replace(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        json_t *body = NULL;
        struct policy_record rec = { 0 };
        long long if_version = 0;
        const char *v = api_request_query(req, "if_version");
        if (v) {
                char *end;
                errno = 0;
                if_version = strtoll(v, &end, 10);
                if (errno || end == v || *end || if_version < 1) {
                        space_error_set(&err, SPACE_E_INVALID_REQUEST, "if_version must be a version number from 1");
                        return api_response_error(resp, &err);
                }
        }
        if (api_request_json(req, &body, &err) < 0 ||
            policy_service_update(req->ctx, &req->principal, req->segments[2], body, if_version, &rec, &err) < 0)
                api_response_error(resp, &err);
        else
                api_response_json(resp, 200, render_policy(&rec));
        policy_record_release(&rec);
        json_decref(body);
}

void route_policy_delete(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        if (policy_service_delete(req->ctx, &req->principal, req->segments[2], &err) < 0)
                return api_response_error(resp, &err);
        api_response_json(resp, 204, NULL);
}

void route_policy_test(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        json_t *body = NULL, *out = NULL;
        if (api_request_json(req, &body, &err) < 0 || !(out = policy_service_dry_run_new(req->ctx, &req->principal, body, &err)))
                api_response_error(resp, &err);
        else
                api_response_json(resp, 200, out);
        json_decref(body);
}
