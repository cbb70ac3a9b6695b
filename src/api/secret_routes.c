/* /v1/secrets, /v1/credential-bindings and /v1/sandboxes/{id}/grants (docs/network.md,
 * "Platform-held credentials"):
 * a secret's value goes in with POST and never comes out; what is rendered is its name and
 * dates. Which project: the caller's, or ?project= for the platform. */
#include <string.h>

#include "api/api_json.h"
#include "api/api_render.h"
#include "api/api_routes.h"
#include "cleanup.h"
#include "service/credential_binding_service.h"
#include "service/grant_service.h"
#include "service/secret_service.h"

static json_t *render_secret(const struct secret_record *s)
{
        return json_pack("{s:s, s:s, s:o}", "name", s->name, "project", s->project_id, "created_at",
                         api_render_time(s->created_at_ms));
}

static json_t *render_binding(const struct binding_record *b)
{
        json_t *j =
                json_pack("{s:s, s:s, s:s, s:s*, s:o}", "id", b->id, "project", b->project_id, "secret", b->secret_name,
                          "sandbox_id", b->sandbox_id[0] ? b->sandbox_id : NULL, "created_at", api_render_time(b->created_at_ms));
        if (j)
                json_object_update(j, b->spec);
        return j;
}

/* A body of the two fields a and b at most: invalid_request naming another. */
static int only_fields(const json_t *body, const char *a, const char *b, const char *shape, struct space_error *err)
{
        const char *key;
        const json_t *v;
        json_object_foreach((json_t *)body, key, v)
        {
                if (strcmp(key, a) != 0 && strcmp(key, b) != 0)
                        return space_error_set(err, SPACE_E_INVALID_REQUEST, "unknown field %s (%s)", key, shape);
        }
        return 0;
}

void route_secret_create(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        _cleanup_json_ json_t *body = NULL;
        struct secret_record rec = { 0 };
        if (api_request_json(req, &body, &err) < 0 || only_fields(body, "name", "value", "a secret is {name, value}", &err) < 0)
                return api_response_error(resp, &err);
        const json_t *value = json_object_get(body, "value");
        if (!json_is_string(value)) {
                space_error_set(&err, SPACE_E_INVALID_REQUEST, "value: a string");
                return api_response_error(resp, &err);
        }
        if (secret_service_create(req->ctx, &req->principal, api_request_query(req, "project"),
                                  json_string_value(json_object_get(body, "name")), json_string_value(value),
                                  json_string_length(value), &rec, &err) < 0)
                return api_response_error(resp, &err);
        api_response_json(resp, 201, render_secret(&rec));
        snprintf(resp->created, sizeof(resp->created), "%s", rec.name);
        secret_record_release(&rec);
}

void route_secret_list(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct secret_record *all = NULL;
        size_t n = 0;
        if (secret_service_list(req->ctx, &req->principal, api_request_query(req, "project"), &all, &n, &err) < 0)
                return api_response_error(resp, &err);
        json_t *arr = json_array();
        for (size_t i = 0; i < n; i++)
                json_array_append_new(arr, render_secret(&all[i]));
        secret_record_array_free(all, n);
        api_response_json(resp, 200, json_pack("{s:o}", "secrets", arr));
}

void route_secret_get(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct secret_record rec = { 0 };
        if (secret_service_get(req->ctx, &req->principal, api_request_query(req, "project"), req->segments[2], &rec, &err) < 0)
                return api_response_error(resp, &err);
        api_response_json(resp, 200, render_secret(&rec));
        secret_record_release(&rec);
}

void route_secret_delete(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        if (secret_service_delete(req->ctx, &req->principal, api_request_query(req, "project"), req->segments[2], &err) < 0)
                return api_response_error(resp, &err);
        api_response_json(resp, 204, NULL);
}

void route_binding_create(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        _cleanup_json_ json_t *body = NULL;
        struct binding_record rec = { 0 };
        if (api_request_json(req, &body, &err) < 0 ||
            credential_binding_service_create(req->ctx, &req->principal, api_request_query(req, "project"), body, &rec, &err) < 0)
                return api_response_error(resp, &err);
        api_response_json(resp, 201, render_binding(&rec));
        snprintf(resp->created, sizeof(resp->created), "%s", rec.id);
        binding_record_release(&rec);
}

void route_binding_list(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct binding_record *all = NULL;
        size_t n = 0;
        if (credential_binding_service_list(req->ctx, &req->principal, api_request_query(req, "project"),
                                            api_request_query(req, "sandbox_id"), &all, &n, &err) < 0)
                return api_response_error(resp, &err);
        json_t *arr = json_array();
        for (size_t i = 0; i < n; i++)
                json_array_append_new(arr, render_binding(&all[i]));
        binding_record_array_free(all, n);
        api_response_json(resp, 200, json_pack("{s:o}", "bindings", arr));
}

void route_binding_get(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct binding_record rec = { 0 };
        if (credential_binding_service_get(req->ctx, &req->principal, api_request_query(req, "project"), req->segments[2], &rec,
                                           &err) < 0)
                return api_response_error(resp, &err);
        api_response_json(resp, 200, render_binding(&rec));
        binding_record_release(&rec);
}

void route_binding_delete(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        if (credential_binding_service_delete(req->ctx, &req->principal, api_request_query(req, "project"), req->segments[2],
                                              &err) < 0)
                return api_response_error(resp, &err);
        api_response_json(resp, 204, NULL);
}

static json_t *render_grant(const struct binding_record *g)
{
        const json_t *grant = json_object_get(g->spec, "grant");
        return json_pack("{s:s, s:s, s:s, s:s, s:o, s:o}", "id", g->id, "binding",
                         json_string_value(json_object_get(grant, "of")) ?: "", "sandbox_id", g->sandbox_id, "secret",
                         g->secret_name, "expires_at",
                         api_render_time((int64_t)json_integer_value(json_object_get(grant, "expires_at_ms"))), "created_at",
                         api_render_time(g->created_at_ms));
}

void route_grant_create(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        _cleanup_json_ json_t *body = NULL;
        struct binding_record rec = { 0 };
        if (api_request_json(req, &body, &err) < 0 ||
            only_fields(body, "binding", "ttl_s", "a grant is {binding, ttl_s}", &err) < 0)
                return api_response_error(resp, &err);
        const json_t *ttl = json_object_get(body, "ttl_s");
        if (!json_is_integer(ttl)) {
                space_error_set(&err, SPACE_E_INVALID_REQUEST, "ttl_s: an integer number of seconds");
                return api_response_error(resp, &err);
        }
        if (grant_service_create(req->ctx, &req->principal, req->segments[2], json_string_value(json_object_get(body, "binding")),
                                 (int64_t)json_integer_value(ttl), &rec, &err) < 0)
                return api_response_error(resp, &err);
        api_response_json(resp, 201, render_grant(&rec));
        snprintf(resp->created, sizeof(resp->created), "%s", rec.id);
        binding_record_release(&rec);
}

void route_grant_list(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct binding_record *all = NULL;
        size_t n = 0;
        if (grant_service_list(req->ctx, &req->principal, req->segments[2], &all, &n, &err) < 0)
                return api_response_error(resp, &err);
        json_t *arr = json_array();
        for (size_t i = 0; i < n; i++)
                json_array_append_new(arr, render_grant(&all[i]));
        binding_record_array_free(all, n);
        api_response_json(resp, 200, json_pack("{s:o}", "grants", arr));
}

void route_grant_delete(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        if (grant_service_revoke(req->ctx, &req->principal, req->segments[2], req->segments[4], &err) < 0)
                return api_response_error(resp, &err);
        api_response_json(resp, 204, NULL);
}
