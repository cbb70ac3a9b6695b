/* /v1/approvals: commands a require_approval rule holds (docs/governance.md), listed,
 * read, approved and denied. Who may decide, and what a decision does, is
 * approval_service's. */
#include <string.h>

#include "api/api_cursor.h"
#include "api/api_json.h"
#include "api/api_routes.h"
#include "service/approval_json.h"
#include "service/approval_service.h"

void route_approval_list(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct approval_record *all = NULL;
        struct api_page page;
        size_t n = 0;
        int state = -1;
        const char *s = api_request_query(req, "state");
        if (s) {
                enum approval_state st;
                if (approval_state_from_name(s, &st) < 0) {
                        space_error_set(&err, SPACE_E_INVALID_REQUEST, "state must be pending, approved, denied or expired");
                        return api_response_error(resp, &err);
                }
                state = (int)st;
        }
        if (api_cursor_parse(req, "approvals", &page, &err) < 0 ||
            approval_service_list(req->ctx, &req->principal, api_request_query(req, "project"), state, &page.store, &all, &n,
                                  &err) < 0)
                return api_response_error(resp, &err);
        size_t shown = api_page_rows(&page, n);
        json_t *arr = json_array();
        for (size_t i = 0; i < shown; i++)
                json_array_append_new(arr, approval_json(&all[i]));
        json_t *next =
                shown ? api_cursor_next(&page, "approvals", n, all[shown - 1].created_at_ms, all[shown - 1].id) : json_null();
        approval_record_array_free(all, n);
        api_response_json(resp, 200, json_pack("{s:o, s:o}", "approvals", arr, "next_cursor", next));
}

void route_approval_get(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct approval_record a;
        if (approval_service_get(req->ctx, &req->principal, req->segments[2], &a, &err) < 0)
                return api_response_error(resp, &err);
        api_response_json(resp, 200, approval_json(&a));
        approval_record_release(&a);
}

/* POST …/approve and …/deny: an optional {"comment": "..."}. */
static void decide(struct api_request *req, struct api_response *resp, bool approve)
{
        static const char *const fields[] = { "comment", NULL };
        struct space_error err = { 0 };
        json_t *body = NULL;
        const char *comment = NULL;
        struct approval_record a;
        if (req->body_len > 0 &&
            (api_request_json(req, &body, &err) < 0 || api_json_only(body, fields, "", &err) < 0 ||
             api_json_string(body, "comment", 500, &comment, &err) < 0))
                goto fail;
        if (approval_service_decide(req->ctx, &req->principal, req->segments[2], approve, comment, &a, &err) < 0)
                goto fail;
        api_response_json(resp, 200, approval_json(&a));
        approval_record_release(&a);
        json_decref(body);
        return;
fail:
        api_response_error(resp, &err);
        json_decref(body);
}

void route_approval_approve(struct api_request *req, struct api_response *resp)
{
        decide(req, resp, true);
}

void route_approval_deny(struct api_request *req, struct api_response *resp)
{
        decide(req, resp, false);
}
