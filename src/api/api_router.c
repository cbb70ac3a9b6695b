/* The route table: method + path pattern ("*" matches one segment) -> handler. */
#include <string.h>

#include "api/api_routes.h"

/* The query parameters each route accepts (the router refuses any other with 400); a name
 * ending in "." admits a family (metadata.<key>). */
static const char *const q_none[] = { NULL };
static const char *const q_wait[] = { "wait", "timeout_s", NULL };
static const char *const q_page[] = { "limit", "cursor", NULL };
static const char *const q_sandbox_list[] = { "state", "metadata.", "limit", "cursor", NULL };
static const char *const q_file[] = { "path", "user", NULL };
static const char *const q_file_list[] = { "path", "user", "depth", NULL };
static const char *const q_file_remove[] = { "path", "user", "recursive", NULL };
static const char *const q_file_watch[] = { "path", "user", "recursive", "keepalive_s", NULL };
static const char *const q_file_upload[] = { "path", "user", "mode", "owner", "uid", "gid", "parents", NULL };
static const char *const q_command_events[] = { "after", "keepalive_s", NULL };
static const char *const q_snapshot_list[] = { "sandbox_id", "limit", "cursor", NULL };
static const char *const q_snapshot_export[] = { "parent", "full", NULL };
static const char *const q_snapshot_import[] = { "sandbox_id", "label", "parent_snapshot_id", NULL };
static const char *const q_template_build[] = { "name", "spacefile", "wait", "timeout_s", NULL };
static const char *const q_template_import[] = { "name", "format", NULL };
static const char *const q_build_log[] = { "follow", NULL };
static const char *const q_build_events[] = { "after", NULL };
static const char *const q_operation_list[] = { "target", "state", "limit", "cursor", NULL };

static const struct route {
        const char *method;
        const char *pattern[8];
        api_handler handler;
        enum api_auth_kind auth;
        enum api_body_rule body; /* GET routes take none, whatever this says */
        const char *const *query; /* the query parameters it accepts */
} routes[] = {
        { "GET", { "v1", "health" }, route_health, API_AUTH_NONE, API_BODY_ANY, q_none },
        { "GET", { "v1", "version" }, route_version, API_AUTH_CONTROL, API_BODY_ANY, q_none },
        { "GET", { "v1", "sandboxes" }, route_sandbox_list, API_AUTH_CONTROL, API_BODY_ANY, q_sandbox_list },
        { "POST", { "v1", "sandboxes" }, route_sandbox_create, API_AUTH_CONTROL, API_BODY_ANY, q_wait },
        { "GET", { "v1", "sandboxes", "*" }, route_sandbox_get, API_AUTH_CONTROL, API_BODY_ANY, q_none },
        { "DELETE", { "v1", "sandboxes", "*" }, route_sandbox_delete, API_AUTH_CONTROL, API_BODY_NO_FIELDS, q_wait },
        { "PATCH", { "v1", "sandboxes", "*" }, route_sandbox_patch, API_AUTH_CONTROL, API_BODY_ANY, q_none },
        { "POST", { "v1", "sandboxes", "*", "exec" }, route_sandbox_exec, API_AUTH_CONTROL, API_BODY_ANY, q_none },
        { "POST", { "v1", "sandboxes", "*", "stop" }, route_sandbox_action, API_AUTH_CONTROL, API_BODY_NO_FIELDS, q_wait },
        { "POST", { "v1", "sandboxes", "*", "start" }, route_sandbox_action, API_AUTH_CONTROL, API_BODY_NO_FIELDS, q_wait },
        { "POST", { "v1", "sandboxes", "*", "pause" }, route_sandbox_action, API_AUTH_CONTROL, API_BODY_NO_FIELDS, q_wait },
        { "POST", { "v1", "sandboxes", "*", "resume" }, route_sandbox_action, API_AUTH_CONTROL, API_BODY_NO_FIELDS, q_wait },
        { "POST", { "v1", "sandboxes", "*", "snapshots" }, route_snapshot_create, API_AUTH_CONTROL, API_BODY_ANY, q_wait },
        { "GET", { "v1", "sandboxes", "*", "snapshots" }, route_snapshot_list_of_sandbox, API_AUTH_CONTROL, API_BODY_ANY, q_page },
        { "POST", { "v1", "sandboxes", "*", "restore" }, route_sandbox_restore, API_AUTH_CONTROL, API_BODY_ANY, q_wait },
        { "POST", { "v1", "sandboxes", "*", "fork" }, route_sandbox_fork, API_AUTH_CONTROL, API_BODY_ANY, q_wait },
        { "POST", { "v1", "sandboxes", "*", "sessions" }, route_session_create, API_AUTH_CONTROL, API_BODY_ANY, q_none },
        { "GET", { "v1", "sandboxes", "*", "sessions" }, route_session_list, API_AUTH_CONTROL, API_BODY_ANY, q_page },
        { "POST", { "v1", "sandboxes", "*", "sessions", "*", "renew" }, route_session_renew, API_AUTH_CONTROL, API_BODY_ANY, q_none },
        { "DELETE", { "v1", "sandboxes", "*", "sessions", "*" }, route_session_revoke, API_AUTH_CONTROL, API_BODY_NONE, q_none },
        { "POST", { "v1", "sandboxes", "*", "commands" }, route_command_start, API_AUTH_DATA, API_BODY_ANY, q_none },
        { "GET", { "v1", "sandboxes", "*", "commands" }, route_command_list, API_AUTH_DATA, API_BODY_ANY, q_page },
        { "GET", { "v1", "sandboxes", "*", "commands", "*" }, route_command_get, API_AUTH_DATA, API_BODY_ANY, q_wait },
        { "GET", { "v1", "sandboxes", "*", "commands", "*", "events" }, route_command_events, API_AUTH_DATA, API_BODY_ANY, q_command_events },
        { "POST", { "v1", "sandboxes", "*", "commands", "*", "stdin" }, route_command_stdin, API_AUTH_DATA, API_BODY_ANY, q_none },
        { "POST", { "v1", "sandboxes", "*", "commands", "*", "stdin", "close" }, route_command_stdin_close, API_AUTH_DATA, API_BODY_NO_FIELDS, q_none },
        { "POST", { "v1", "sandboxes", "*", "commands", "*", "signal" }, route_command_signal, API_AUTH_DATA, API_BODY_ANY, q_none },
        { "POST", { "v1", "sandboxes", "*", "commands", "*", "resize" }, route_command_resize, API_AUTH_DATA, API_BODY_ANY, q_none },
        { "GET", { "v1", "snapshots" }, route_snapshot_list, API_AUTH_CONTROL, API_BODY_ANY, q_snapshot_list },
        { "GET", { "v1", "snapshots", "*" }, route_snapshot_get, API_AUTH_CONTROL, API_BODY_ANY, q_none },
        { "DELETE", { "v1", "snapshots", "*" }, route_snapshot_delete, API_AUTH_CONTROL, API_BODY_NONE, q_none },
        { "GET", { "v1", "snapshots", "*", "export" }, route_snapshot_export, API_AUTH_CONTROL, API_BODY_ANY, q_snapshot_export },
        { "GET", { "v1", "capabilities" }, route_capabilities, API_AUTH_CONTROL, API_BODY_ANY, q_none },
        { "GET", { "v1", "templates" }, route_template_list, API_AUTH_CONTROL, API_BODY_ANY, q_page },
        { "GET", { "v1", "templates", "*" }, route_template_get, API_AUTH_CONTROL, API_BODY_ANY, q_none },
        { "DELETE", { "v1", "templates", "*" }, route_template_delete, API_AUTH_CONTROL, API_BODY_NONE, q_none },
        { "POST", { "v1", "templates", "*", "build" }, route_template_build, API_AUTH_CONTROL, API_BODY_NO_FIELDS, q_wait },
        { "GET", { "v1", "templates", "builds", "*", "log" }, route_template_build_log, API_AUTH_CONTROL, API_BODY_ANY, q_build_log },
        { "GET", { "v1", "templates", "builds", "*", "events" }, route_template_build_events, API_AUTH_CONTROL, API_BODY_ANY, q_build_events },
        { "POST", { "v1", "operations", "*", "cancel" }, route_operation_cancel, API_AUTH_CONTROL, API_BODY_NO_FIELDS, q_none },
        { "POST", { "v1", "templates", "layers", "prune" }, route_template_layers_prune, API_AUTH_CONTROL, API_BODY_NO_FIELDS, q_none },
        { "GET", { "v1", "operations" }, route_operation_list, API_AUTH_CONTROL, API_BODY_ANY, q_operation_list },
        { "GET", { "v1", "operations", "*" }, route_operation_get, API_AUTH_CONTROL, API_BODY_ANY, q_none },
        { "GET", { "v1", "keys" }, route_key_list, API_AUTH_CONTROL, API_BODY_ANY, q_page },
        { "POST", { "v1", "keys" }, route_key_create, API_AUTH_CONTROL, API_BODY_ANY, q_none },
        { "DELETE", { "v1", "keys", "*" }, route_key_delete, API_AUTH_CONTROL, API_BODY_NONE, q_none },
        { "GET", { "v1", "sandboxes", "*", "files" }, route_file_download, API_AUTH_DATA, API_BODY_ANY, q_file },
        { "DELETE", { "v1", "sandboxes", "*", "files" }, route_file_remove, API_AUTH_DATA, API_BODY_NONE, q_file_remove },
        { "GET", { "v1", "sandboxes", "*", "files", "stat" }, route_file_stat, API_AUTH_DATA, API_BODY_ANY, q_file },
        { "GET", { "v1", "sandboxes", "*", "files", "list" }, route_file_list, API_AUTH_DATA, API_BODY_ANY, q_file_list },
        { "GET", { "v1", "sandboxes", "*", "files", "watch" }, route_file_watch, API_AUTH_DATA, API_BODY_ANY, q_file_watch },
        { "POST", { "v1", "sandboxes", "*", "files", "mkdir" }, route_file_mkdir, API_AUTH_DATA, API_BODY_ANY, q_none },
        { "POST", { "v1", "sandboxes", "*", "files", "move" }, route_file_move, API_AUTH_DATA, API_BODY_ANY, q_none },
};

static bool pattern_matches(const char *const pattern[8], const struct api_request *req)
{
        int n = 0;
        while (n < 8 && pattern[n])
                n++;
        if (n != req->nsegments)
                return false;
        for (int i = 0; i < n; i++)
                if (strcmp(pattern[i], "*") != 0 && strcmp(pattern[i], req->segments[i]) != 0)
                        return false;
        return true;
}

api_handler api_router_match(struct api_request *req, enum api_auth_kind *ret_auth, struct space_error *err)
{
        bool path_known = false;
        for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
                if (!pattern_matches(routes[i].pattern, req))
                        continue;
                path_known = true;
                if (strcmp(routes[i].method, req->method) == 0) {
                        *ret_auth = routes[i].auth;
                        req->body_rule = strcmp(req->method, "GET") == 0 ? API_BODY_NONE : routes[i].body;
                        req->query_allowed = routes[i].query;
                        return routes[i].handler;
                }
        }
        if (path_known)
                space_error_set(err, SPACE_E_METHOD_NOT_ALLOWED, "%s is not allowed on %s", req->method, req->path);
        else
                space_error_set(err, SPACE_E_NOT_FOUND, "no route for %s %s", req->method, req->path);
        return NULL;
}

/* Routes whose request body is streamed to a sink instead of buffered. */
static const struct upload_route {
        const char *method;
        const char *pattern[8];
        const struct api_upload_sink *sink;
        enum api_auth_kind auth;
        const char *const *query;
} upload_routes[] = {
        { "POST", { "v1", "snapshots", "import" }, &snapshot_import_sink, API_AUTH_CONTROL, q_snapshot_import },
        { "PUT", { "v1", "sandboxes", "*", "files" }, &file_upload_sink, API_AUTH_DATA, q_file_upload },
        { "POST", { "v1", "templates" }, &template_build_sink, API_AUTH_CONTROL, q_template_build },
        { "POST", { "v1", "templates", "import" }, &template_import_sink, API_AUTH_CONTROL, q_template_import },
};

const struct api_upload_sink *api_router_upload_sink(struct api_request *req, enum api_auth_kind *ret_auth)
{
        for (size_t i = 0; i < sizeof(upload_routes) / sizeof(upload_routes[0]); i++) {
                const struct upload_route *u = &upload_routes[i];
                if (strcmp(u->method, req->method) == 0 && pattern_matches(u->pattern, req)) {
                        *ret_auth = u->auth;
                        req->query_allowed = u->query;
                        return u->sink;
                }
        }
        return NULL;
}
