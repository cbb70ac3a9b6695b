/* e2b_router: which handler serves an E2B request, and who may call it. */
#include "e2b/e2b_router.h"

#include "api/request_trail.h"

#include <errno.h>
#include <microhttpd.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_auth.h"
#include "api/api_json.h"
#include "e2b/e2b_connect.h"
#include "e2b/e2b_files_upload.h"
#include "e2b/e2b_routes.h"
#include "e2b/e2b_watchers.h"
#include "service/sandbox_service.h"
#include "spaced/log.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

enum route_half { CONTROL, ENVD, ENVD_OPEN }; /* ENVD_OPEN: envd without a token (/health) */

/* A table, one route per line: tests read it. */
/* clang-format off */
static const struct route {
        const char *method;
        const char *pattern[5];
        e2b_handler handler;
        enum route_half half;
        uint32_t permission;     /* control routes: what the key needs (auth/principal.h); envd: 0 (its token) */
        enum object_kind object; /* what the "*" segment names, checked before the handler runs */
        const char *action;      /* its name in the audit log, the v1 route's where there is one */
        bool mutating;           /* changes something: audited whatever its answer */
} routes[] = {
        { "POST", { "sandboxes" }, e2b_sandbox_create, CONTROL, PERM_SANDBOX_WRITE | PERM_SANDBOX_EXEC, OBJECT_NONE, "sandbox.create", true },
        { "POST", { "v2", "sandboxes" }, e2b_sandbox_create, CONTROL, PERM_SANDBOX_WRITE | PERM_SANDBOX_EXEC, OBJECT_NONE, "sandbox.create", true },
        { "GET", { "sandboxes" }, e2b_sandbox_list_v1, CONTROL, PERM_SANDBOX_READ, OBJECT_NONE, "sandbox.list", false },
        { "GET", { "v2", "sandboxes" }, e2b_sandbox_list, CONTROL, PERM_SANDBOX_READ, OBJECT_NONE, "sandbox.list", false },
        { "GET", { "sandboxes", "*" }, e2b_sandbox_get, CONTROL, PERM_SANDBOX_READ, OBJECT_SANDBOX, "sandbox.get", false },
        { "DELETE", { "sandboxes", "*" }, e2b_sandbox_kill, CONTROL, PERM_SANDBOX_WRITE, OBJECT_SANDBOX, "sandbox.delete", true },
        { "POST", { "sandboxes", "*", "timeout" }, e2b_sandbox_timeout, CONTROL, PERM_SANDBOX_WRITE, OBJECT_SANDBOX, "sandbox.set_timeout", true },
        { "POST", { "sandboxes", "*", "pause" }, e2b_sandbox_pause, CONTROL, PERM_SANDBOX_WRITE, OBJECT_SANDBOX, "sandbox.pause", true },
        { "POST", { "sandboxes", "*", "connect" }, e2b_sandbox_connect, CONTROL, PERM_SANDBOX_WRITE | PERM_SANDBOX_EXEC, OBJECT_SANDBOX, "sandbox.connect", true },
        { "POST", { "v2", "sandboxes", "*", "connect" }, e2b_sandbox_connect, CONTROL, PERM_SANDBOX_WRITE | PERM_SANDBOX_EXEC, OBJECT_SANDBOX, "sandbox.connect", true },
        { "POST", { "sandboxes", "*", "resume" }, e2b_sandbox_resume, CONTROL, PERM_SANDBOX_WRITE | PERM_SANDBOX_EXEC, OBJECT_SANDBOX, "sandbox.resume", true },
        { "POST", { "sandboxes", "*", "snapshots" }, e2b_snapshot_create, CONTROL, PERM_SNAPSHOT_WRITE, OBJECT_SANDBOX, "snapshot.create", true },
        { "GET", { "snapshots" }, e2b_snapshot_list, CONTROL, PERM_SNAPSHOT_READ, OBJECT_NONE, "snapshot.list", false },
        { "DELETE", { "templates", "*" }, e2b_snapshot_delete, CONTROL, PERM_SNAPSHOT_WRITE, OBJECT_SNAPSHOT, "snapshot.delete", true },
        { "POST", { "sandboxes", "*", "fork" }, e2b_sandbox_fork, CONTROL, PERM_SANDBOX_WRITE | PERM_SANDBOX_EXEC, OBJECT_SANDBOX, "sandbox.fork", true },
        { "GET", { "sandboxes", "*", "metrics" }, e2b_sandbox_metrics, CONTROL, PERM_SANDBOX_READ, OBJECT_SANDBOX, "sandbox.metrics", false },
        { "PUT", { "sandboxes", "*", "network" }, e2b_sandbox_network_update, CONTROL, PERM_SANDBOX_WRITE, OBJECT_SANDBOX, "sandbox.network_update", true },
        { "GET", { "health" }, e2b_envd_health, ENVD_OPEN, 0, OBJECT_NONE, "health.get", false },
        { "POST", { "process.Process", "Start" }, e2b_process_start, ENVD, 0, OBJECT_NONE, "command.start", true },
        { "POST", { "process.Process", "Connect" }, e2b_process_connect, ENVD, 0, OBJECT_NONE, "command.events", false },
        { "POST", { "process.Process", "List" }, e2b_process_list, ENVD, 0, OBJECT_NONE, "command.list", false },
        { "POST", { "process.Process", "SendInput" }, e2b_process_send_input, ENVD, 0, OBJECT_NONE, "command.stdin", true },
        { "POST", { "process.Process", "SendSignal" }, e2b_process_send_signal, ENVD, 0, OBJECT_NONE, "command.signal", true },
        { "POST", { "process.Process", "CloseStdin" }, e2b_process_close_stdin, ENVD, 0, OBJECT_NONE, "command.stdin_close", true },
        { "POST", { "process.Process", "Update" }, e2b_process_update, ENVD, 0, OBJECT_NONE, "command.resize", true },
        { "POST", { "filesystem.Filesystem", "Stat" }, e2b_fs_stat, ENVD, 0, OBJECT_NONE, "file.stat", false },
        { "POST", { "filesystem.Filesystem", "ListDir" }, e2b_fs_list_dir, ENVD, 0, OBJECT_NONE, "file.list", false },
        { "POST", { "filesystem.Filesystem", "MakeDir" }, e2b_fs_make_dir, ENVD, 0, OBJECT_NONE, "file.mkdir", true },
        { "POST", { "filesystem.Filesystem", "Move" }, e2b_fs_move, ENVD, 0, OBJECT_NONE, "file.move", true },
        { "POST", { "filesystem.Filesystem", "Remove" }, e2b_fs_remove, ENVD, 0, OBJECT_NONE, "file.remove", true },
        { "POST", { "filesystem.Filesystem", "WatchDir" }, e2b_fs_watch_dir, ENVD, 0, OBJECT_NONE, "file.watch", false },
        { "POST", { "filesystem.Filesystem", "CreateWatcher" }, e2b_fs_create_watcher, ENVD, 0, OBJECT_NONE, "file.watch", false },
        { "POST", { "filesystem.Filesystem", "GetWatcherEvents" }, e2b_fs_get_watcher_events, ENVD, 0, OBJECT_NONE, "file.watch_events", false },
        { "POST", { "filesystem.Filesystem", "RemoveWatcher" }, e2b_fs_remove_watcher, ENVD, 0, OBJECT_NONE, "file.watch_remove", false },
        { "GET", { "files" }, e2b_files_download, ENVD, 0, OBJECT_NONE, "file.download", false },
        { "POST", { "files" }, NULL, ENVD, 0, OBJECT_NONE, "file.upload", true }, /* streamed: e2b_router_upload_begin */
};
/* clang-format on */

const char *e2b_call_header(const struct e2b_call *call, const char *name)
{
        return MHD_lookup_connection_value(call->req.conn, MHD_HEADER_KIND, name);
}

void e2b_reply_error(struct api_response *resp, unsigned status, const char *fmt, ...)
{
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        resp->status = status;
        resp->body = json_pack("{s:i, s:s}", "code", (int)status, "message", msg);
}

void e2b_reply_space_error(struct api_response *resp, const struct space_error *err)
{
        e2b_reply_error(resp, api_error_http_status(err->code), "%s", err->message);
}

void e2b_reply_empty(struct api_response *resp)
{
        resp->status = 204;
        resp->body = NULL;
}

/* Whether the path belongs to envd: /health, /files, or a Connect method (/pkg.Service/Method). */
static bool envd_path(const struct api_request *req)
{
        if (req->nsegments < 1)
                return false;
        const char *first = req->segments[0];
        return strcmp(first, "health") == 0 || strcmp(first, "files") == 0 || strchr(first, '.') != NULL;
}

static bool matches(const struct route *rt, const struct api_request *req, const char **ret_id)
{
        int n = 0;
        while (n < 5 && rt->pattern[n])
                n++;
        if (n != req->nsegments)
                return false;
        for (int i = 0; i < n; i++) {
                if (strcmp(rt->pattern[i], "*") == 0)
                        *ret_id = req->segments[i];
                else if (strcmp(rt->pattern[i], req->segments[i]) != 0)
                        return false;
        }
        return true;
}

/* "Basic base64(user:)" -> user; absent: envd's default user. */
static void envd_user(struct e2b_call *call)
{
        snprintf(call->user, sizeof(call->user), "user");
        const char *auth = e2b_call_header(call, MHD_HTTP_HEADER_AUTHORIZATION);
        if (!auth || strncasecmp(auth, "Basic ", 6) != 0)
                return;
        const char *b64 = auth + 6;
        size_t n = strlen(b64);
        unsigned char out[160];
        if (n == 0 || n % 4 != 0 || n / 4 * 3 >= sizeof(out))
                return;
        int got = EVP_DecodeBlock(out, (const unsigned char *)b64, (int)n);
        if (got <= 0)
                return;
        out[got] = '\0';
        char *colon = strchr((char *)out, ':');
        if (colon)
                *colon = '\0';
        if (out[0] && strlen((char *)out) < sizeof(call->user))
                snprintf(call->user, sizeof(call->user), "%s", (char *)out);
}

/* A signed /files URL (?signature=v1_…[&signature_expiration=]) stands in for the access
 * token. It may carry no header at all (a browser, curl): then the sandbox is the running
 * one whose token makes that signature. */
static int signed_url(struct e2b_call *call, const char *id, struct space_error *err)
{
        const char *sig = api_request_query(&call->req, "signature");
        const char *expiration = api_request_query(&call->req, "signature_expiration");
        const char *path = api_request_query(&call->req, "path");
        const char *user = api_request_query(&call->req, "username");
        const char *op = strcmp(call->req.method, "GET") == 0 ? "read" : "write";
        long long at = 0;
        if (expiration && *expiration) {
                char *end;
                errno = 0;
                at = strtoll(expiration, &end, 10);
                if (*end || errno)
                        return space_error_set(err, SPACE_E_INVALID_REQUEST, "signature_expiration is not a unix time");
        }
        char(*ids)[32] = NULL;
        size_t n = 0;
        if (id && *id) {
                ids = calloc(1, sizeof(*ids));
                if (!ids)
                        return space_error_set(err, SPACE_E_INTERNAL, "out of memory");
                snprintf(ids[0], sizeof(ids[0]), "%s", id);
                n = 1;
        } else if (sandbox_service_running_ids(call->front->ctx, &ids, &n, err) < 0) {
                return space_error_set(err, SPACE_E_INTERNAL, "list sandboxes");
        }
        bool found = false;
        for (size_t i = 0; i < n && !found; i++) {
                char token[E2B_ENVD_TOKEN_SIZE], want[64];
                if (e2b_keys_envd_token(call->front->token_secret, ids[i], token, sizeof(token)) == 0 &&
                    e2b_keys_file_signature(path ? path : "", op, user ? user : "", token, expiration, want, sizeof(want)) == 0 &&
                    strlen(want) == strlen(sig) && CRYPTO_memcmp(want, sig, strlen(want)) == 0) {
                        snprintf(call->sandbox_id, sizeof(call->sandbox_id), "%s", ids[i]);
                        found = true;
                }
                explicit_bzero(token, sizeof(token));
        }
        free(ids);
        if (!found)
                return space_error_set(err, SPACE_E_UNAUTHORIZED, "the signature does not match");
        /* As envd: the signature first, then its expiry, in envd's words. */
        if (expiration && *expiration && at < wallclock_now_ms() / 1000)
                return space_error_set(err, SPACE_E_UNAUTHORIZED, "signature is already expired");
        sandbox_service_token_caller(call->front->ctx, call->sandbox_id, &call->req.principal);
        return 0;
}

/* Names and authenticates the sandbox of an envd call. */
static int envd_authenticate(struct e2b_call *call, bool need_token, struct space_error *err)
{
        const char *id = e2b_call_header(call, "E2b-Sandbox-Id");
        const char *token = e2b_call_header(call, "X-Access-Token");
        char from_token[32] = "";
        if (!token && strcmp(call->req.segments[0], "files") == 0 && api_request_query(&call->req, "signature")) {
                if (id && (!api_json_name_ok(id) || strlen(id) >= sizeof(call->sandbox_id)))
                        return space_error_set(err, SPACE_E_NOT_FOUND, "sandbox %.64s not found", id);
                if (signed_url(call, id, err) < 0)
                        return -1;
                /* The user is the signed username (the handlers read it), else envd's
                 * default: never an Authorization header the signature does not cover. */
                snprintf(call->user, sizeof(call->user), "user");
                call->signed_url = true;
                return 0;
        }
        if (token && e2b_keys_envd_token_sandbox(token, from_token, sizeof(from_token)) < 0)
                return space_error_set(err, SPACE_E_UNAUTHORIZED, "invalid access token");
        if (!id || !*id)
                id = from_token;
        if (!*id)
                return space_error_set(err, SPACE_E_NOT_FOUND, "no sandbox named: send E2b-Sandbox-Id or X-Access-Token");
        if (!api_json_name_ok(id) || strlen(id) >= sizeof(call->sandbox_id))
                return space_error_set(err, SPACE_E_NOT_FOUND, "sandbox %.64s not found", id);
        snprintf(call->sandbox_id, sizeof(call->sandbox_id), "%s", id);
        if (token && !e2b_keys_envd_token_ok(call->front->token_secret, call->sandbox_id, token))
                return space_error_set(err, SPACE_E_UNAUTHORIZED, "invalid access token for sandbox %s", call->sandbox_id);
        if (need_token && !token)
                return space_error_set(err, SPACE_E_UNAUTHORIZED, "missing X-Access-Token");
        /* The token's bearer acts in its sandbox's project and nowhere else. */
        sandbox_service_token_caller(call->front->ctx, call->sandbox_id, &call->req.principal);
        envd_user(call);
        return 0;
}

static int split_path(struct api_request *req, char *copy)
{
        req->nsegments = 0;
        req->more_segments = false;
        for (char *save = NULL, *seg = strtok_r(copy, "/", &save); seg; seg = strtok_r(NULL, "/", &save)) {
                if (req->nsegments == API_REQUEST_SEGMENTS) {
                        req->more_segments = true;
                        break;
                }
                req->segments[req->nsegments++] = seg;
        }
        return 0;
}

/* Finds the route of the request in call->req and authenticates it. NULL with resp filled
 * when there is none or the caller may not call it. */
static const struct route *route_call(struct e2b_call *call, char *path_copy, size_t copy_size, struct request_trail *trail,
                                      struct api_response *resp)
{
        struct space_error err = { 0 };
        const char *method = call->req.method, *url = call->req.path;
        struct e2b_front *front = call->front;
        call->req.content_type = MHD_lookup_connection_value(call->req.conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
        if (strlen(url) >= copy_size || (snprintf(path_copy, copy_size, "%s", url), split_path(&call->req, path_copy) < 0)) {
                e2b_reply_error(resp, 404, "no route for %s", method);
                return NULL;
        }
        bool envd = envd_path(&call->req);
        const struct route *found = NULL;
        const char *id = NULL;
        bool path_known = false;
        for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]) && !found; i++) {
                if (!matches(&routes[i], &call->req, &id))
                        continue;
                path_known = true;
                if (strcmp(routes[i].method, method) == 0)
                        found = &routes[i];
        }
        if (!found) {
                space_error_set(&err, path_known ? SPACE_E_METHOD_NOT_ALLOWED : SPACE_E_NOT_FOUND, "%s %s is not %s", method, url,
                                path_known ? "allowed" : "supported by space's E2B front door");
                if (envd)
                        e2b_connect_reply_error(resp, &err);
                else
                        e2b_reply_space_error(resp, &err);
                return NULL;
        }
        request_trail_route(trail, found->action, found->mutating, id);
        if (found->half == CONTROL) {
                if (e2b_keys_authenticate(front->ctx, e2b_call_header(call, "X-API-KEY"), &call->req.principal, &err) < 0) {
                        e2b_reply_space_error(resp, &err);
                        return NULL;
                }
                request_trail_principal(trail, &call->req);
                if (id) {
                        if (!api_json_name_ok(id) || strlen(id) >= sizeof(call->sandbox_id)) {
                                e2b_reply_error(resp, 404, "sandbox %.64s not found", id);
                                return NULL;
                        }
                        snprintf(call->sandbox_id, sizeof(call->sandbox_id), "%s", id);
                }
                /* The key's role and project: the same check as the v1 router's. */
                if (api_auth_authorize(front->ctx, &call->req.principal, found->permission, found->object, id, &err) < 0) {
                        e2b_reply_space_error(resp, &err);
                        return NULL;
                }
        } else if (envd_authenticate(call, found->half == ENVD, &err) < 0) {
                if (found->half == ENVD_OPEN)
                        e2b_reply_space_error(resp, &err);
                else if (strcmp(call->req.segments[0], "files") == 0)
                        e2b_files_reply_error(resp, &err); /* envd's /files is REST: {"code": 401, "message"} */
                else
                        e2b_connect_reply_error(resp, &err);
                return NULL;
        }
        if (found->half != CONTROL) { /* the sandbox an envd call addresses, and its project */
                request_trail_route(trail, found->action, found->mutating, call->sandbox_id);
                request_trail_principal(trail, &call->req);
        }
        if (atomic_load(&front->ctx->shutting_down) && strcmp(method, "GET") != 0) {
                space_error_set(&err, SPACE_E_UNAVAILABLE, "spaced is shutting down");
                if (envd)
                        e2b_connect_reply_error(resp, &err);
                else
                        e2b_reply_space_error(resp, &err);
                return NULL;
        }
        return found;
}

bool e2b_router_streams_body(const char *method, const char *url)
{
        return strcmp(method, "POST") == 0 && strncmp(url, "/files", 6) == 0 && (url[6] == '\0' || url[6] == '?');
}

int e2b_router_upload_begin(struct e2b_front *front, struct MHD_Connection *conn, const char *method, const char *url,
                            struct request_trail *trail, struct e2b_upload **ret, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct e2b_call call = { .front = front };
        char path_copy[1024];
        call.req = (struct api_request){
                .ctx = front->ctx, .conn = conn, .method = method, .path = url, .body = "", .request_id = trail->id
        };
        if (!route_call(&call, path_copy, sizeof(path_copy), trail, resp))
                return -1;
        if (e2b_upload_begin(&call, ret, &err) < 0) {
                e2b_files_reply_error(resp, &err);
                return -1;
        }
        return 0;
}

bool e2b_router_authenticates(struct e2b_front *front, struct MHD_Connection *conn, const char *method, const char *url,
                              struct request_trail *trail)
{
        struct e2b_call call = { .front = front };
        struct api_response resp = { 0 };
        char path_copy[1024];
        call.req = (struct api_request){
                .ctx = front->ctx, .conn = conn, .method = method, .path = url, .body = "", .request_id = trail->id
        };
        const struct route *found = route_call(&call, path_copy, sizeof(path_copy), trail, &resp);
        json_decref(resp.body);
        json_decref(resp.headers);
        return found && found->half != ENVD_OPEN;
}

void e2b_router_handle(struct e2b_front *front, struct MHD_Connection *conn, const char *method, const char *url,
                       const char *body, size_t body_len, struct request_trail *trail, struct api_response *resp)
{
        struct e2b_call call = { .front = front };
        char path_copy[1024];
        call.req = (struct api_request){ .ctx = front->ctx,
                                         .conn = conn,
                                         .method = method,
                                         .path = url,
                                         .body = body,
                                         .body_len = body_len,
                                         .request_id = trail->id };
        const struct route *found = route_call(&call, path_copy, sizeof(path_copy), trail, resp);
        if (!found)
                return;
        if (!found->handler)
                return e2b_reply_error(resp, 500, "%s %s takes a streamed body", method, url);
        found->handler(&call, resp);
        if (!resp->status)
                e2b_reply_error(resp, 500, "handler gave no answer");
}
