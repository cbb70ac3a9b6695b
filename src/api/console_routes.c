/* The web console's sign-in (docs/console.md): POST /v1/console/session exchanges an API
 * key for a session cookie, GET tells the page who it is (and its CSRF token), DELETE signs
 * out. The cookie authenticates control routes as that key would (api_auth_request). */
#include <microhttpd.h>
#include <stdio.h>
#include <string.h>

#include "api/api_json.h"
#include "api/api_render.h"
#include "api/api_routes.h"
#include "cleanup.h"
#include "service/console_session.h"
#include "spaced/wallclock.h"

#define CONSOLE_SESSION_TTL_S 3600

/* Secure when the browser came over https: to spaced's own TLS (--tls-cert), or through a
 * TLS-terminating proxy that says so. The attribute only makes the cookie stricter, so a
 * client that sends the header itself gains nothing. */
static bool came_over_tls(const struct api_request *req)
{
        const union MHD_ConnectionInfo *tls = MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
        if (tls && tls->tls_session)
                return true;
        const char *proto = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, "X-Forwarded-Proto");
        return proto && strcasecmp(proto, "https") == 0;
}

static void set_cookie(const struct api_request *req, struct api_response *resp, const char *value, long long max_age)
{
        char cookie[256];
        snprintf(cookie, sizeof(cookie), "%s=%s; Path=/; HttpOnly; SameSite=Strict; Max-Age=%lld%s", API_CONSOLE_COOKIE, value,
                 max_age, came_over_tls(req) ? "; Secure" : "");
        if (!resp->headers)
                resp->headers = json_object();
        json_object_set_new(resp->headers, "Set-Cookie", json_string(cookie));
        explicit_bzero(cookie, sizeof(cookie));
}

/* Who the caller is, and (signed in through the console) its session. */
static json_t *render_caller(const struct principal *p, const struct console_session *s)
{
        json_t *body = json_pack("{s:s, s:s, s:s, s:o, s:o}", "key_id", p->key_id, "project", p->project_id, "role",
                                 principal_role_name(p->role), "permissions", api_render_permissions(p->permissions),
                                 "key_expires_at", api_render_time(p->expires_at_ms));
        if (s && s->id[0])
                json_object_set_new(body, "session",
                                    json_pack("{s:s, s:s, s:o, s:o}", "id", s->id, "csrf_token", s->csrf, "created_at",
                                              api_render_time(s->created_at_ms), "expires_at",
                                              api_render_time(s->expires_at_ms)));
        else
                json_object_set_new(body, "session", json_null());
        return body;
}

void route_console_sign_in(struct api_request *req, struct api_response *resp)
{
        static const char *const fields[] = { "api_key", NULL };
        struct space_error err = { 0 };
        _cleanup_json_ json_t *body = NULL;
        const char *key = NULL;
        struct principal p;
        struct console_session s;
        char token[CONSOLE_TOKEN_SIZE];
        if (api_request_json(req, &body, &err) < 0 || api_json_only(body, fields, "", &err) < 0 ||
            api_json_string(body, "api_key", 128, &key, &err) < 0)
                return api_response_error(resp, &err);
        if (!key) {
                space_error_set(&err, SPACE_E_INVALID_REQUEST, "field api_key is required");
                return api_response_error(resp, &err);
        }
        int r = console_session_open(req->ctx, key, CONSOLE_SESSION_TTL_S, &p, &s, token, &err);
        explicit_bzero((char *)key, strlen(key));
        if (r < 0)
                return api_response_error(resp, &err);
        req->principal = p; /* the audit row names the key that signed in */
        snprintf(resp->created, sizeof(resp->created), "%s", s.id);
        set_cookie(req, resp, token, (s.expires_at_ms - wallclock_now_ms() + 999) / 1000);
        explicit_bzero(token, sizeof(token));
        api_response_json(resp, 201, render_caller(&p, &s));
}

void route_console_session_get(struct api_request *req, struct api_response *resp)
{
        api_response_json(resp, 200, render_caller(&req->principal, &req->console));
}

void route_console_sign_out(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        const char *cookie = MHD_lookup_connection_value(req->conn, MHD_COOKIE_KIND, API_CONSOLE_COOKIE);
        if (!req->console.id[0] || !cookie) {
                space_error_set(&err, SPACE_E_NOT_FOUND, "this request came with an api key, not a console session");
                return api_response_error(resp, &err);
        }
        if (console_session_close(req->ctx, cookie, &err) < 0)
                return api_response_error(resp, &err);
        set_cookie(req, resp, "", 0);
        api_response_json(resp, 204, NULL);
}
