#include "api/request_trail.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "api/api_json.h"
#include "service/audit_service.h"
#include "spaced/log.h"
#include "spaced/metrics.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

void request_trail_client_address(struct MHD_Connection *conn, char *buf, size_t size)
{
        const union MHD_ConnectionInfo *info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        const struct sockaddr *sa = info ? info->client_addr : NULL;
        snprintf(buf, size, "unix");
        if (sa && sa->sa_family == AF_INET)
                inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, buf, (socklen_t)size);
        else if (sa && sa->sa_family == AF_INET6)
                inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, buf, (socklen_t)size);
}

void request_trail_begin(struct request_trail *t, struct MHD_Connection *conn, const char *door, const char *method,
                         const char *url)
{
        memset(t, 0, sizeof(*t));
        t->door = door;
        t->started_us = monotonic_now_us();
        request_id_take(MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Request-Id"), t->id);
        /* The method is a client's token: kept printable ASCII like everything recorded. */
        log_escape(method, t->method, sizeof(t->method));
        /* MHD hands the path without its query string; cut one anyway if present. */
        snprintf(t->path, sizeof(t->path), "%.*s", (int)strcspn(url, "?"), url);
        request_trail_client_address(conn, t->source, sizeof(t->source));
}

void request_trail_route(struct request_trail *t, const char *action, bool mutating, const char *target)
{
        t->action = action;
        t->mutating = mutating;
        /* The id as the client wrote it, not yet checked: a malformed one (any bytes, not
         * UTF-8) is kept escaped, so that every row renders as JSON and none can be hidden. */
        if (!target || api_json_name_ok(target))
                snprintf(t->target, sizeof(t->target), "%s", target ? target : "");
        else
                log_escape(target, t->target, sizeof(t->target));
}

void request_trail_principal(struct request_trail *t, const struct api_request *req)
{
        /* a key, or on data-plane routes the attach session the caller holds */
        const struct principal *p = &req->principal;
        snprintf(t->key_id, sizeof(t->key_id), "%s", p->key_id[0] ? p->key_id : req->session_id);
        /* a data-plane caller (a session's token, an envd token) acts in its sandbox's project */
        snprintf(t->project, sizeof(t->project), "%s", p->project_id);
        if (p->key_id[0])
                snprintf(t->role, sizeof(t->role), "%s", principal_role_name(p->role));
}

void request_trail_answer(struct request_trail *t, const struct api_response *resp)
{
        t->status = resp->status;
        t->error_code[0] = '\0';
        /* A create's path names nothing: its row names what it made. */
        if (!t->target[0] && resp->created[0])
                snprintf(t->target, sizeof(t->target), "%s", resp->created);
        if (resp->error_code[0])
                snprintf(t->error_code, sizeof(t->error_code), "%s", resp->error_code);
        if (resp->status < 400 || !json_is_object(resp->body))
                return;
        /* v1: {"error": {"code"}}; Connect: {"code": "not_found"}; E2B control: {"code": 404} */
        const json_t *code = json_object_get(json_object_get(resp->body, "error"), "code");
        if (!json_is_string(code))
                code = json_object_get(resp->body, "code");
        if (json_is_string(code))
                snprintf(t->error_code, sizeof(t->error_code), "%s", json_string_value(code));
}

bool request_trail_audited(bool mutating, unsigned status)
{
        return mutating || status == 401 || status == 403;
}

static void write_audit(struct request_trail *t, struct spaced_context *ctx)
{
        struct audit_record a = { .created_at_ms = wallclock_now_ms(), .status = (int)t->status };
        random_id("aud-", 12, a.id, sizeof(a.id));
        snprintf(a.request_id, sizeof(a.request_id), "%s", t->id);
        snprintf(a.key_id, sizeof(a.key_id), "%s", t->key_id);
        snprintf(a.project, sizeof(a.project), "%s", t->project);
        snprintf(a.role, sizeof(a.role), "%s", t->role);
        snprintf(a.action, sizeof(a.action), "%s", t->action ? t->action : "unknown");
        snprintf(a.target, sizeof(a.target), "%s", t->target);
        snprintf(a.method, sizeof(a.method), "%s", t->method);
        snprintf(a.error_code, sizeof(a.error_code), "%s", t->error_code);
        snprintf(a.source, sizeof(a.source), "%s", t->source);
        struct space_error err;
        if (audit_service_record(ctx, &a, &err) < 0)
                log_error("audit.write_failed",
                          "error=\"%s\" request_id=%s key_id=%s action=%s target=\"%s\" method=%s status=%d error_code=\"%s\""
                          " source=%s note=\"this line is the audit record\"",
                          LOG_ESC(err.message), a.request_id, a.key_id[0] ? a.key_id : "-", a.action, LOG_ESC(a.target), a.method,
                          a.status, LOG_ESC(a.error_code), a.source);
}

void request_trail_finish(struct request_trail *t, struct spaced_context *ctx, bool completed)
{
        if (t->finished)
                return;
        t->finished = true;
        log_info("http.access",
                 "door=%s request_id=%s method=%s path=\"%s\" status=%u bytes=%llu duration_us=%lld key_id=%s source=%s%s",
                 t->door, t->id, LOG_ESC(t->method), LOG_ESC(t->path), t->status, (unsigned long long)atomic_load(&t->bytes),
                 (long long)(monotonic_now_us() - t->started_us), t->key_id[0] ? t->key_id : "-", t->source,
                 completed ? "" : " completed=false");
        metrics_http_request(ctx->metrics, t->door, t->action, t->status, monotonic_now_us() - t->started_us);
        if (request_trail_audited(t->mutating, t->status))
                write_audit(t, ctx);
}
