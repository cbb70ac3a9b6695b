/* /v1/approvals: commands a require_approval rule holds (docs/governance.md), listed,
 * read, approved and denied. Who may decide, and what a decision does, is
 * approval_service's. */
#include <string.h>

#include "api/api_cursor.h"
#include "api/api_json.h"
#include "api/api_render.h"
#include "api/api_routes.h"
#include "service/approval_service.h"

/* A new reference: s, or JSON null for "". */
static json_t *text_or_null(const char *s)
{
        return s[0] ? json_string(s) : json_null();
}

static json_t *member_or_null(const json_t *o, const char *key)
{
        json_t *v = json_object_get(o, key);
        return v ? json_incref(v) : json_null();
}

static json_t *render_approval(const struct approval_record *a)
{
        const json_t *rq = a->request;
        return json_pack("{s:s, s:s, s:s, s:s, s:o, s:s, s:o, s:s, s:s, s:{s:o, s:o, s:o}, s:o, s:o, s:o, s:o, s:o}", "id", a->id,
                         "project", a->project_id, "sandbox_id", a->sandbox_id, "command_id", a->command_id, "requested_by",
                         text_or_null(a->key_id), "policy_id", a->policy_id, "rule_id", text_or_null(a->rule_id), "reason",
                         a->reason, "state", approval_state_name(a->state), "command", "argv", member_or_null(rq, "argv"), "cwd",
                         member_or_null(rq, "cwd"), "user", member_or_null(rq, "user"), "decided_by", text_or_null(a->decided_by),
                         "comment", text_or_null(a->comment), "created_at", api_render_time(a->created_at_ms), "expires_at",
                         api_render_time(a->expires_at_ms), "decided_at", api_render_time(a->decided_at_ms));
}

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
                json_array_append_new(arr, render_approval(&all[i]));
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
        api_response_json(resp, 200, render_approval(&a));
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
        api_response_json(resp, 200, render_approval(&a));
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
