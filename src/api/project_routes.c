/* /v1/projects: the tenants (admin). Which project a list shows is project_service_scope's. */
#include <stdlib.h>
#include <string.h>

#include "api/api_cursor.h"
#include "api/api_json.h"
#include "api/api_render.h"
#include "api/api_routes.h"
#include "service/project_service.h"

static json_t *render_project(const struct project *p)
{
        return json_pack("{s:s, s:o}", "id", p->id, "created_at", api_render_time(p->created_at_ms));
}

void route_project_create(struct api_request *req, struct api_response *resp)
{
        static const char *const fields[] = { "id", NULL };
        struct space_error err = { 0 };
        json_t *body = NULL;
        const char *id = NULL;
        struct project p;
        if (api_request_json(req, &body, &err) < 0 || api_json_only(body, fields, "", &err) < 0 ||
            api_json_string(body, "id", 31, &id, &err) < 0 || project_service_create(req->ctx, id, &p, &err) < 0)
                api_response_error(resp, &err);
        else {
                api_response_json(resp, 201, render_project(&p));
                snprintf(resp->created, sizeof(resp->created), "%s", p.id);
        }
        json_decref(body);
}

void route_project_list(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct project *all = NULL;
        struct api_page page;
        size_t n = 0;
        if (api_cursor_parse(req, "projects", &page, &err) < 0 ||
            project_service_list(req->ctx, &req->principal, &page.store, &all, &n, &err) < 0)
                return api_response_error(resp, &err);
        size_t shown = api_page_rows(&page, n);
        json_t *arr = json_array();
        for (size_t i = 0; i < shown; i++)
                json_array_append_new(arr, render_project(&all[i]));
        json_t *next =
                shown ? api_cursor_next(&page, "projects", n, all[shown - 1].created_at_ms, all[shown - 1].id) : json_null();
        free(all);
        api_response_json(resp, 200, json_pack("{s:o, s:o}", "projects", arr, "next_cursor", next));
}

void route_project_get(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct project p;
        if (project_service_get(req->ctx, &req->principal, req->segments[2], &p, &err) < 0)
                return api_response_error(resp, &err);
        api_response_json(resp, 200, render_project(&p));
}
