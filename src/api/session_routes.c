/* Attach sessions: the control plane hands out data-plane tokens for one sandbox. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/http_listener.h"
#include "api/api_cursor.h"
#include "api/api_json.h"
#include "api/api_render.h"
#include "api/api_routes.h"
#include "data_plane/attach_session.h"
#include "service/session_service.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

static json_t *render_session(const struct attach_session *s)
{
        const char *state = s->revoked_at_ms ? "revoked" : s->expires_at_ms <= wallclock_now_ms() ? "expired" : "active";
        return json_pack("{s:s, s:s, s:o, s:o, s:o, s:s}", "session_id", s->id, "sandbox_id", s->sandbox_id, "created_at",
                         api_render_time(s->created_at_ms), "expires_at", api_render_time(s->expires_at_ms), "revoked_at",
                         api_render_time(s->revoked_at_ms), "state", state);
}

/* {"ttl_s": N} or an empty body. */
static int ttl_parse(struct api_request *req, long long *ret, struct space_error *err)
{
        static const char *const fields[] = { "ttl_s", NULL };
        json_t *body = NULL;
        int r = api_request_json(req, &body, err);
        if (r == 0)
                r = api_json_only(body, fields, "", err);
        if (r == 0)
                r = api_json_int(body, "ttl_s", 1, 604800, ret, err);
        json_decref(body);
        return r;
}

/* A session never outlives the key that opens or renews it. */
static long long ttl_within_key(const struct api_request *req, long long ttl)
{
        int64_t until = req->principal.expires_at_ms;
        if (!until)
                return ttl;
        long long left = (until - wallclock_now_ms()) / 1000, want = ttl > 0 ? ttl : req->ctx->cfg.session_ttl_s;
        if (left < 1)
                left = 1;
        return want < left ? want : left;
}

void route_session_create(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct sandbox sb;
        struct attach_session s;
        char token[ATTACH_TOKEN_SIZE];
        long long ttl = 0;
        if (ttl_parse(req, &ttl, &err) < 0 || api_load_sandbox(req, &sb, &err) < 0)
                return api_response_error(resp, &err);
        bool gone = sb.state == SANDBOX_DESTROYED || sb.state == SANDBOX_DESTROYING || sb.state == SANDBOX_FAILED;
        sandbox_release(&sb);
        if (gone) {
                space_error_set(&err, SPACE_E_INVALID_STATE, "sandbox %s is %s", req->segments[2], sandbox_state_name(sb.state));
                return api_response_error(resp, &err);
        }
        if (attach_session_create(req->ctx, req->segments[2], req->principal.key_id, ttl_within_key(req, ttl), &s, token, &err) <
            0)
                return api_response_error(resp, &err);
        json_t *body = render_session(&s);
        char base[HTTP_LISTENER_URL_MAX], url[256];
        snprintf(url, sizeof(url), "%s/v1/sandboxes/%s",
                 http_listener_url(&req->ctx->cfg, req->ctx->cfg.listen_addr, req->ctx->cfg.listen_port, base, sizeof(base)),
                 s.sandbox_id);
        json_object_set_new(body, "attach_token", json_string(token));
        json_object_set_new(body, "data_url", json_string(url));
        explicit_bzero(token, sizeof(token));
        api_response_json(resp, 201, body);
}

void route_session_list(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct attach_session *all = NULL;
        struct api_page page;
        size_t n = 0;
        if (api_cursor_parse(req, "sessions", &page, &err) < 0 ||
            session_service_list(req->ctx, &req->principal, req->segments[2], &page.store, &all, &n, &err) < 0)
                return api_response_error(resp, &err);
        size_t shown = api_page_rows(&page, n);
        json_t *arr = json_array();
        for (size_t i = 0; i < shown; i++)
                json_array_append_new(arr, render_session(&all[i]));
        json_t *next =
                shown ? api_cursor_next(&page, "sessions", n, all[shown - 1].created_at_ms, all[shown - 1].id) : json_null();
        free(all);
        api_response_json(resp, 200, json_pack("{s:o, s:o}", "sessions", arr, "next_cursor", next));
}

static bool session_id_ok(struct api_request *req, struct api_response *resp)
{
        struct space_error err;
        if (api_json_name_ok(req->segments[2]) && api_json_name_ok(req->segments[4]))
                return true;
        space_error_set(&err, SPACE_E_NOT_FOUND, "session %.64s not found", req->segments[4]);
        api_response_error(resp, &err);
        return false;
}

void route_session_renew(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct attach_session s;
        long long ttl = 0;
        if (!session_id_ok(req, resp))
                return;
        if (ttl_parse(req, &ttl, &err) < 0 ||
            attach_session_renew(req->ctx, req->segments[2], req->segments[4], ttl_within_key(req, ttl), &s, &err) < 0)
                return api_response_error(resp, &err);
        api_response_json(resp, 200, render_session(&s));
}

void route_session_revoke(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        if (!session_id_ok(req, resp))
                return;
        if (attach_session_revoke(req->ctx, req->segments[2], req->segments[4], &err) < 0)
                return api_response_error(resp, &err);
        api_response_json(resp, 204, NULL);
}
