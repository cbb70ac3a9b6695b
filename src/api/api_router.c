/* The route table: method ("*": any) + path pattern ("*" matches one segment, a last "**"
 * the rest of the path, none or any number of segments) -> handler, who may call
 * it (auth kind + permission) and what body it takes. The object a control route names is
 * its first "*" segment, of the kind the segment before it says (sandboxes/…, snapshots/…);
 * api_auth_request checks the caller may see it before the handler runs. */
#include <string.h>

#include "api/api_routes.h"
#include "api/metrics_http.h"

/* The query parameters each route accepts (the router refuses any other with 400); a name
 * ending in "." admits a family (metadata.<key>), "*" alone any query at all. */
static const char *const q_none[] = { NULL };
static const char *const q_wait[] = { "wait", "timeout_s", NULL };
static const char *const q_page[] = { "limit", "cursor", NULL };
static const char *const q_sandbox_list[] = { "state", "metadata.", "project", "limit", "cursor", NULL };
static const char *const q_sandbox_events[] = { "project", "keepalive_s", NULL };
static const char *const q_file[] = { "path", "user", NULL };
static const char *const q_file_list[] = { "path", "user", "depth", NULL };
static const char *const q_file_remove[] = { "path", "user", "recursive", NULL };
static const char *const q_file_watch[] = { "path", "user", "recursive", "keepalive_s", NULL };
static const char *const q_file_upload[] = { "path", "user", "mode", "owner", "uid", "gid", "parents", NULL };
static const char *const q_command_events[] = { "after", "keepalive_s", NULL };
static const char *const q_snapshot_list[] = { "sandbox_id", "project", "limit", "cursor", NULL };
static const char *const q_snapshot_export[] = { "parent", "full", NULL };
static const char *const q_snapshot_import[] = { "sandbox_id", "label", "parent_snapshot_id", NULL };
static const char *const q_memory_import[] = { "snapshot_id", NULL };
static const char *const q_template_build[] = { "name", "spacefile", "wait", "timeout_s", NULL };
static const char *const q_template_import[] = { "name", "format", NULL };
static const char *const q_build_log[] = { "follow", NULL };
static const char *const q_force[] = { "force", NULL };
static const char *const q_build_events[] = { "after", NULL };
static const char *const q_operation_list[] = { "target", "state", "project", "limit", "cursor", NULL };
static const char *const q_project_page[] = { "project", "limit", "cursor", NULL };
static const char *const q_project[] = { "project", NULL };
static const char *const q_policy_replace[] = { "if_version", NULL };
static const char *const q_binding_list[] = { "project", "sandbox_id", NULL };
static const char *const q_approval_list[] = { "project", "state", "limit", "cursor", NULL };
static const char *const q_any[] = { "*", NULL }; /* anything: the query goes on to the sandbox as it came */
static const char *const q_audit[] = { "project", "key_id", "action", "target", "since", "until", "limit", "cursor", NULL };

/* A table, one route per line: tests read it. */
/* clang-format off */
static const struct route {
        const char *method;
        const char *pattern[8];
        api_handler handler;
        enum api_auth_kind auth;
        enum api_body_rule body; /* GET routes take none, whatever this says */
        uint32_t permission;     /* what the caller's key needs (auth/principal.h); 0: no key (health, data plane) */
        const char *action;      /* its name in the audit log: <noun>.<verb>, stable */
        const char *const *query; /* the query parameters it accepts */
} routes[] = {
        { "GET", { "v1", "health" }, route_health, API_AUTH_NONE, API_BODY_ANY, 0, "health.get", q_none },
        { "GET", { "v1", "ready" }, route_ready, API_AUTH_NONE, API_BODY_ANY, 0, "ready.get", q_none },
        { "POST", { "v1", "console", "session" }, route_console_sign_in, API_AUTH_NONE, API_BODY_ANY, 0, "console.sign_in", q_none },
        { "GET", { "v1", "console", "session" }, route_console_session_get, API_AUTH_CONTROL, API_BODY_ANY, PERM_SERVER_READ, "console.session", q_none },
        { "DELETE", { "v1", "console", "session" }, route_console_sign_out, API_AUTH_CONTROL, API_BODY_NONE, PERM_SERVER_READ, "console.sign_out", q_none },
        { "GET", { "metrics" }, route_metrics, API_AUTH_CONTROL, API_BODY_ANY, PERM_PLATFORM, "metrics.get", q_none },
        { "GET", { "v1", "version" }, route_version, API_AUTH_CONTROL, API_BODY_ANY, PERM_SERVER_READ, "version.get", q_none },
        { "GET", { "v1", "sandboxes" }, route_sandbox_list, API_AUTH_CONTROL, API_BODY_ANY, PERM_SANDBOX_READ, "sandbox.list", q_sandbox_list },
        { "POST", { "v1", "sandboxes" }, route_sandbox_create, API_AUTH_CONTROL, API_BODY_ANY, PERM_SANDBOX_WRITE, "sandbox.create", q_wait },
        { "GET", { "v1", "sandboxes", "events" }, route_sandbox_events, API_AUTH_CONTROL, API_BODY_ANY, PERM_SANDBOX_READ, "sandbox.events", q_sandbox_events },
        { "GET", { "v1", "sandboxes", "*" }, route_sandbox_get, API_AUTH_CONTROL, API_BODY_ANY, PERM_SANDBOX_READ, "sandbox.get", q_none },
        { "GET", { "v1", "sandboxes", "*", "stats" }, route_sandbox_stats, API_AUTH_CONTROL, API_BODY_ANY, PERM_SANDBOX_READ, "sandbox.stats", q_none },
        { "GET", { "v1", "sandboxes", "*", "network" }, route_sandbox_network_get, API_AUTH_CONTROL, API_BODY_ANY, PERM_SANDBOX_READ, "sandbox.network_get", q_none },
        { "PUT", { "v1", "sandboxes", "*", "network" }, route_sandbox_network_put, API_AUTH_CONTROL, API_BODY_ANY, PERM_SANDBOX_WRITE, "sandbox.network_update", q_none },
        { "GET", { "v1", "egress-profiles" }, route_egress_profile_list, API_AUTH_CONTROL, API_BODY_ANY, PERM_SANDBOX_READ, "egress_profile.list", q_none },
        { "DELETE", { "v1", "sandboxes", "*" }, route_sandbox_delete, API_AUTH_CONTROL, API_BODY_NO_FIELDS, PERM_SANDBOX_WRITE, "sandbox.delete", q_wait },
        { "PATCH", { "v1", "sandboxes", "*" }, route_sandbox_patch, API_AUTH_CONTROL, API_BODY_ANY, PERM_SANDBOX_WRITE, "sandbox.update", q_none },
        { "POST", { "v1", "sandboxes", "*", "exec" }, route_sandbox_exec, API_AUTH_CONTROL, API_BODY_ANY, PERM_SANDBOX_EXEC, "sandbox.exec", q_none },
        { "POST", { "v1", "sandboxes", "*", "stop" }, route_sandbox_action, API_AUTH_CONTROL, API_BODY_NO_FIELDS, PERM_SANDBOX_WRITE, "sandbox.stop", q_wait },
        { "POST", { "v1", "sandboxes", "*", "start" }, route_sandbox_action, API_AUTH_CONTROL, API_BODY_NO_FIELDS, PERM_SANDBOX_WRITE, "sandbox.start", q_wait },
        { "POST", { "v1", "sandboxes", "*", "pause" }, route_sandbox_pause, API_AUTH_CONTROL, API_BODY_ANY, PERM_SANDBOX_WRITE, "sandbox.pause", q_wait },
        { "POST", { "v1", "sandboxes", "*", "resume" }, route_sandbox_action, API_AUTH_CONTROL, API_BODY_NO_FIELDS, PERM_SANDBOX_WRITE, "sandbox.resume", q_wait },
        { "POST", { "v1", "sandboxes", "*", "snapshots" }, route_snapshot_create, API_AUTH_CONTROL, API_BODY_ANY, PERM_SNAPSHOT_WRITE, "snapshot.create", q_wait },
        { "GET", { "v1", "sandboxes", "*", "snapshots" }, route_snapshot_list_of_sandbox, API_AUTH_CONTROL, API_BODY_ANY, PERM_SNAPSHOT_READ, "snapshot.list", q_page },
        { "POST", { "v1", "sandboxes", "*", "restore" }, route_sandbox_restore, API_AUTH_CONTROL, API_BODY_ANY, PERM_SANDBOX_WRITE, "sandbox.restore", q_wait },
        { "POST", { "v1", "sandboxes", "*", "fork" }, route_sandbox_fork, API_AUTH_CONTROL, API_BODY_ANY, PERM_SANDBOX_WRITE, "sandbox.fork", q_wait },
        { "POST", { "v1", "sandboxes", "*", "sessions" }, route_session_create, API_AUTH_CONTROL, API_BODY_ANY, PERM_SANDBOX_EXEC, "session.create", q_none },
        { "GET", { "v1", "sandboxes", "*", "sessions" }, route_session_list, API_AUTH_CONTROL, API_BODY_ANY, PERM_SANDBOX_READ, "session.list", q_page },
        { "POST", { "v1", "sandboxes", "*", "sessions", "*", "renew" }, route_session_renew, API_AUTH_CONTROL, API_BODY_ANY, PERM_SANDBOX_EXEC, "session.renew", q_none },
        { "DELETE", { "v1", "sandboxes", "*", "sessions", "*" }, route_session_revoke, API_AUTH_CONTROL, API_BODY_NONE, PERM_SANDBOX_EXEC, "session.revoke", q_none },
        { "POST", { "v1", "sandboxes", "*", "commands" }, route_command_start, API_AUTH_DATA, API_BODY_ANY, 0, "command.start", q_none },
        { "GET", { "v1", "sandboxes", "*", "commands" }, route_command_list, API_AUTH_DATA, API_BODY_ANY, 0, "command.list", q_page },
        { "GET", { "v1", "sandboxes", "*", "commands", "*" }, route_command_get, API_AUTH_DATA, API_BODY_ANY, 0, "command.get", q_wait },
        { "GET", { "v1", "sandboxes", "*", "commands", "*", "events" }, route_command_events, API_AUTH_DATA, API_BODY_ANY, 0, "command.events", q_command_events },
        { "POST", { "v1", "sandboxes", "*", "commands", "*", "stdin" }, route_command_stdin, API_AUTH_DATA, API_BODY_ANY, 0, "command.stdin", q_none },
        { "POST", { "v1", "sandboxes", "*", "commands", "*", "stdin", "close" }, route_command_stdin_close, API_AUTH_DATA, API_BODY_NO_FIELDS, 0, "command.stdin_close", q_none },
        { "POST", { "v1", "sandboxes", "*", "commands", "*", "signal" }, route_command_signal, API_AUTH_DATA, API_BODY_ANY, 0, "command.signal", q_none },
        { "POST", { "v1", "sandboxes", "*", "commands", "*", "resize" }, route_command_resize, API_AUTH_DATA, API_BODY_ANY, 0, "command.resize", q_none },
        { "GET", { "v1", "snapshots" }, route_snapshot_list, API_AUTH_CONTROL, API_BODY_ANY, PERM_SNAPSHOT_READ, "snapshot.list", q_snapshot_list },
        { "GET", { "v1", "snapshots", "*" }, route_snapshot_get, API_AUTH_CONTROL, API_BODY_ANY, PERM_SNAPSHOT_READ, "snapshot.get", q_none },
        { "DELETE", { "v1", "snapshots", "*" }, route_snapshot_delete, API_AUTH_CONTROL, API_BODY_NONE, PERM_SNAPSHOT_WRITE, "snapshot.delete", q_none },
        { "GET", { "v1", "snapshots", "*", "export" }, route_snapshot_export, API_AUTH_CONTROL, API_BODY_ANY, PERM_SNAPSHOT_WRITE, "snapshot.export", q_snapshot_export },
        { "GET", { "v1", "snapshots", "*", "memory" }, route_snapshot_memory_export, API_AUTH_CONTROL, API_BODY_ANY, PERM_SNAPSHOT_WRITE, "snapshot.export_memory", q_none },
        { "GET", { "v1", "capabilities" }, route_capabilities, API_AUTH_CONTROL, API_BODY_ANY, PERM_SERVER_READ, "capabilities.get", q_none },
        { "GET", { "v1", "templates" }, route_template_list, API_AUTH_CONTROL, API_BODY_ANY, PERM_TEMPLATE_READ, "template.list", q_project_page },
        { "GET", { "v1", "templates", "*" }, route_template_get, API_AUTH_CONTROL, API_BODY_ANY, PERM_TEMPLATE_READ, "template.get", q_none },
        { "DELETE", { "v1", "templates", "*" }, route_template_delete, API_AUTH_CONTROL, API_BODY_NONE, PERM_TEMPLATE_WRITE, "template.delete", q_force },
        { "POST", { "v1", "templates", "*", "build" }, route_template_build, API_AUTH_CONTROL, API_BODY_NO_FIELDS, PERM_TEMPLATE_WRITE, "template.rebuild", q_wait },
        { "GET", { "v1", "templates", "builds", "*", "log" }, route_template_build_log, API_AUTH_CONTROL, API_BODY_ANY, PERM_TEMPLATE_READ, "template.build_log", q_build_log },
        { "GET", { "v1", "templates", "builds", "*", "events" }, route_template_build_events, API_AUTH_CONTROL, API_BODY_ANY, PERM_TEMPLATE_READ, "template.build_events", q_build_events },
        { "POST", { "v1", "operations", "*", "cancel" }, route_operation_cancel, API_AUTH_CONTROL, API_BODY_NO_FIELDS, PERM_OPERATION_WRITE, "operation.cancel", q_none },
        { "POST", { "v1", "templates", "layers", "prune" }, route_template_layers_prune, API_AUTH_CONTROL, API_BODY_NO_FIELDS, PERM_PLATFORM, "template.layers_prune", q_none },
        { "GET", { "v1", "operations" }, route_operation_list, API_AUTH_CONTROL, API_BODY_ANY, PERM_OPERATION_READ, "operation.list", q_operation_list },
        { "GET", { "v1", "operations", "*" }, route_operation_get, API_AUTH_CONTROL, API_BODY_ANY, PERM_OPERATION_READ, "operation.get", q_none },
        { "GET", { "v1", "audit" }, route_audit_list, API_AUTH_CONTROL, API_BODY_ANY, PERM_KEY_READ, "audit.list", q_audit },
        { "GET", { "v1", "keys" }, route_key_list, API_AUTH_CONTROL, API_BODY_ANY, PERM_KEY_READ, "key.list", q_project_page },
        { "POST", { "v1", "keys" }, route_key_create, API_AUTH_CONTROL, API_BODY_ANY, PERM_KEY_WRITE, "key.create", q_none },
        { "DELETE", { "v1", "keys", "*" }, route_key_delete, API_AUTH_CONTROL, API_BODY_NONE, PERM_KEY_WRITE, "key.delete", q_none },
        { "GET", { "v1", "policies" }, route_policy_list, API_AUTH_CONTROL, API_BODY_ANY, PERM_PROJECT_READ, "policy.list", q_project },
        { "POST", { "v1", "policies" }, route_policy_create, API_AUTH_CONTROL, API_BODY_ANY, PERM_KEY_WRITE, "policy.create", q_project },
        { "POST", { "v1", "policies", "test" }, route_policy_test, API_AUTH_CONTROL, API_BODY_ANY, PERM_PROJECT_READ, "policy.test", q_none },
        { "GET", { "v1", "policies", "*" }, route_policy_get, API_AUTH_CONTROL, API_BODY_ANY, PERM_PROJECT_READ, "policy.get", q_none },
        { "PUT", { "v1", "policies", "*" }, route_policy_replace, API_AUTH_CONTROL, API_BODY_ANY, PERM_KEY_WRITE, "policy.update", q_policy_replace },
        { "DELETE", { "v1", "policies", "*" }, route_policy_delete, API_AUTH_CONTROL, API_BODY_NONE, PERM_KEY_WRITE, "policy.delete", q_none },
        { "GET", { "v1", "approvals" }, route_approval_list, API_AUTH_CONTROL, API_BODY_ANY, PERM_PROJECT_READ, "approval.list", q_approval_list },
        { "GET", { "v1", "approvals", "*" }, route_approval_get, API_AUTH_CONTROL, API_BODY_ANY, PERM_PROJECT_READ, "approval.get", q_none },
        { "POST", { "v1", "approvals", "*", "approve" }, route_approval_approve, API_AUTH_CONTROL, API_BODY_ANY, PERM_APPROVAL_WRITE, "approval.approve", q_none },
        { "POST", { "v1", "approvals", "*", "deny" }, route_approval_deny, API_AUTH_CONTROL, API_BODY_ANY, PERM_APPROVAL_WRITE, "approval.deny", q_none },
        { "GET", { "v1", "secrets" }, route_secret_list, API_AUTH_CONTROL, API_BODY_ANY, PERM_SECRET_READ, "secret.list", q_project },
        { "POST", { "v1", "secrets" }, route_secret_create, API_AUTH_CONTROL, API_BODY_ANY, PERM_SECRET_WRITE, "secret.create", q_project },
        { "GET", { "v1", "secrets", "*" }, route_secret_get, API_AUTH_CONTROL, API_BODY_ANY, PERM_SECRET_READ, "secret.get", q_project },
        { "DELETE", { "v1", "secrets", "*" }, route_secret_delete, API_AUTH_CONTROL, API_BODY_NONE, PERM_SECRET_WRITE, "secret.delete", q_project },
        { "POST", { "v1", "sandboxes", "*", "grants" }, route_grant_create, API_AUTH_CONTROL, API_BODY_ANY, PERM_SECRET_WRITE, "grant.create", q_none },
        { "GET", { "v1", "sandboxes", "*", "grants" }, route_grant_list, API_AUTH_CONTROL, API_BODY_ANY, PERM_SECRET_READ, "grant.list", q_none },
        { "DELETE", { "v1", "sandboxes", "*", "grants", "*" }, route_grant_delete, API_AUTH_CONTROL, API_BODY_NONE, PERM_SECRET_WRITE, "grant.delete", q_none },
        { "GET", { "v1", "credential-bindings" }, route_binding_list, API_AUTH_CONTROL, API_BODY_ANY, PERM_SECRET_READ, "binding.list", q_binding_list },
        { "POST", { "v1", "credential-bindings" }, route_binding_create, API_AUTH_CONTROL, API_BODY_ANY, PERM_SECRET_WRITE, "binding.create", q_project },
        { "GET", { "v1", "credential-bindings", "*" }, route_binding_get, API_AUTH_CONTROL, API_BODY_ANY, PERM_SECRET_READ, "binding.get", q_project },
        { "DELETE", { "v1", "credential-bindings", "*" }, route_binding_delete, API_AUTH_CONTROL, API_BODY_NONE, PERM_SECRET_WRITE, "binding.delete", q_project },
        { "GET", { "v1", "projects" }, route_project_list, API_AUTH_CONTROL, API_BODY_ANY, PERM_PLATFORM, "project.list", q_page },
        { "GET", { "v1", "nodes" }, route_node_list, API_AUTH_CONTROL, API_BODY_ANY, PERM_PLATFORM, "node.list", q_none },
        { "POST", { "v1", "projects" }, route_project_create, API_AUTH_CONTROL, API_BODY_ANY, PERM_PLATFORM, "project.create", q_none },
        { "GET", { "v1", "projects", "*" }, route_project_get, API_AUTH_CONTROL, API_BODY_ANY, PERM_PROJECT_READ, "project.get", q_none },
        { "GET", { "v1", "sandboxes", "*", "files" }, route_file_download, API_AUTH_DATA, API_BODY_ANY, 0, "file.download", q_file },
        { "DELETE", { "v1", "sandboxes", "*", "files" }, route_file_remove, API_AUTH_DATA, API_BODY_NONE, 0, "file.remove", q_file_remove },
        { "GET", { "v1", "sandboxes", "*", "files", "stat" }, route_file_stat, API_AUTH_DATA, API_BODY_ANY, 0, "file.stat", q_file },
        { "GET", { "v1", "sandboxes", "*", "files", "list" }, route_file_list, API_AUTH_DATA, API_BODY_ANY, 0, "file.list", q_file_list },
        { "GET", { "v1", "sandboxes", "*", "files", "watch" }, route_file_watch, API_AUTH_DATA, API_BODY_ANY, 0, "file.watch", q_file_watch },
        { "POST", { "v1", "sandboxes", "*", "files", "mkdir" }, route_file_mkdir, API_AUTH_DATA, API_BODY_ANY, 0, "file.mkdir", q_none },
        { "POST", { "v1", "sandboxes", "*", "files", "move" }, route_file_move, API_AUTH_DATA, API_BODY_ANY, 0, "file.move", q_none },
};
/* clang-format on */

static bool pattern_matches(const char *const pattern[8], const struct api_request *req)
{
        int n = 0;
        while (n < 8 && pattern[n])
                n++;
        bool tail = n > 0 && strcmp(pattern[n - 1], "**") == 0;
        if (tail)
                n--;
        if (tail ? req->nsegments < n : (n != req->nsegments || req->more_segments))
                return false;
        for (int i = 0; i < n; i++)
                if (strcmp(pattern[i], "*") != 0 && strcmp(pattern[i], req->segments[i]) != 0)
                        return false;
        return true;
}

/* The route's action, and its target: the segment of the pattern's first "*" (the sandbox,
 * snapshot, template, key or operation named in the path). */
static void name_action(struct api_request *req, const char *const pattern[8], const char *action)
{
        req->action = action;
        req->target = NULL;
        for (int i = 0; i < 8 && pattern[i] && !req->target; i++)
                if (strcmp(pattern[i], "*") == 0)
                        req->target = req->segments[i];
}

/* The object named by the first "*" of pattern, and its segment. */
static void object_of(const char *const pattern[8], enum api_auth_kind auth, struct api_request *req)
{
        static const struct {
                const char *collection;
                enum object_kind kind;
        } kinds[] = {
                { "sandboxes", OBJECT_SANDBOX },
                { "snapshots", OBJECT_SNAPSHOT },
                { "templates", OBJECT_TEMPLATE },
                { "builds", OBJECT_OPERATION },
                { "operations", OBJECT_OPERATION },
                { "keys", OBJECT_KEY },
                { "projects", OBJECT_PROJECT },
                { "policies", OBJECT_POLICY },
                { "approvals", OBJECT_APPROVAL },
                { "secrets", OBJECT_SECRET },
                { "credential-bindings", OBJECT_BINDING },
        };
        req->object = OBJECT_NONE;
        if (auth != API_AUTH_CONTROL) /* a data-plane token names its sandbox itself */
                return;
        for (int i = 1; i < 8 && pattern[i]; i++) {
                if (strcmp(pattern[i], "*") != 0)
                        continue;
                for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
                        if (strcmp(pattern[i - 1], kinds[k].collection) == 0) {
                                req->object = kinds[k].kind;
                                req->object_segment = i;
                        }
                return;
        }
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
                        req->permission = routes[i].permission;
                        object_of(routes[i].pattern, routes[i].auth, req);
                        name_action(req, routes[i].pattern, routes[i].action);
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
/* A table, one route per line: tests read it. */
/* clang-format off */
static const struct upload_route {
        const char *method;
        const char *pattern[8];
        const struct api_upload_sink *sink;
        enum api_auth_kind auth;
        uint32_t permission;
        const char *action;
        const char *const *query;
} upload_routes[] = {
        { "POST", { "v1", "snapshots", "import" }, &snapshot_import_sink, API_AUTH_CONTROL, PERM_SNAPSHOT_WRITE, "snapshot.import", q_snapshot_import },
        { "POST", { "v1", "snapshots", "import", "memory" }, &memory_import_sink, API_AUTH_CONTROL, PERM_SNAPSHOT_WRITE, "snapshot.import_memory", q_memory_import },
        { "PUT", { "v1", "sandboxes", "*", "files" }, &file_upload_sink, API_AUTH_DATA, 0, "file.upload", q_file_upload },
        { "POST", { "v1", "templates" }, &template_build_sink, API_AUTH_CONTROL, PERM_TEMPLATE_WRITE, "template.build", q_template_build },
        { "POST", { "v1", "templates", "import" }, &template_import_sink, API_AUTH_CONTROL, PERM_TEMPLATE_WRITE, "template.import", q_template_import },
        { "*", { "v1", "sandboxes", "*", "ports", "*", "**" }, &port_proxy_sink, API_AUTH_CONTROL, PERM_SANDBOX_EXEC, "sandbox.port", q_any },
};
/* clang-format on */

const struct api_upload_sink *api_router_upload_sink(struct api_request *req, enum api_auth_kind *ret_auth)
{
        for (size_t i = 0; i < sizeof(upload_routes) / sizeof(upload_routes[0]); i++) {
                const struct upload_route *u = &upload_routes[i];
                if ((strcmp(u->method, "*") == 0 || strcmp(u->method, req->method) == 0) && pattern_matches(u->pattern, req)) {
                        *ret_auth = u->auth;
                        req->permission = u->permission;
                        object_of(u->pattern, u->auth, req);
                        name_action(req, u->pattern, u->action);
                        req->query_allowed = u->query;
                        return u->sink;
                }
        }
        return NULL;
}
