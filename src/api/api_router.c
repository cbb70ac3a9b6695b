/* The route table: method + path pattern ("*" matches one segment) -> handler. */
#include <string.h>

#include "api/api_routes.h"

static const struct route {
        const char *method;
        const char *pattern[5];
        api_handler handler;
        bool auth;
} routes[] = {
        { "GET", { "v1", "health" }, route_health, false },
        { "GET", { "v1", "version" }, route_version, true },
        { "GET", { "v1", "sandboxes" }, route_sandbox_list, true },
        { "POST", { "v1", "sandboxes" }, route_sandbox_create, true },
        { "GET", { "v1", "sandboxes", "*" }, route_sandbox_get, true },
        { "DELETE", { "v1", "sandboxes", "*" }, route_sandbox_delete, true },
        { "PATCH", { "v1", "sandboxes", "*" }, route_sandbox_patch, true },
        { "POST", { "v1", "sandboxes", "*", "exec" }, route_sandbox_exec, true },
        { "POST", { "v1", "sandboxes", "*", "stop" }, route_sandbox_action, true },
        { "POST", { "v1", "sandboxes", "*", "start" }, route_sandbox_action, true },
        { "POST", { "v1", "sandboxes", "*", "pause" }, route_sandbox_action, true },
        { "POST", { "v1", "sandboxes", "*", "resume" }, route_sandbox_action, true },
        { "POST", { "v1", "sandboxes", "*", "snapshots" }, route_snapshot_create, true },
        { "GET", { "v1", "sandboxes", "*", "snapshots" }, route_snapshot_list_of_sandbox, true },
        { "POST", { "v1", "sandboxes", "*", "restore" }, route_sandbox_restore, true },
        { "POST", { "v1", "sandboxes", "*", "fork" }, route_sandbox_fork, true },
        { "GET", { "v1", "snapshots" }, route_snapshot_list, true },
        { "GET", { "v1", "snapshots", "*" }, route_snapshot_get, true },
        { "DELETE", { "v1", "snapshots", "*" }, route_snapshot_delete, true },
        { "GET", { "v1", "snapshots", "*", "export" }, route_snapshot_export, true },
        { "GET", { "v1", "capabilities" }, route_capabilities, true },
        { "GET", { "v1", "templates" }, route_template_list, true },
        { "GET", { "v1", "templates", "*" }, route_template_get, true },
        { "DELETE", { "v1", "templates", "*" }, route_template_delete, true },
        { "POST", { "v1", "templates", "*", "build" }, route_template_build, true },
        { "GET", { "v1", "operations" }, route_operation_list, true },
        { "GET", { "v1", "operations", "*" }, route_operation_get, true },
        { "GET", { "v1", "keys" }, route_key_list, true },
        { "POST", { "v1", "keys" }, route_key_create, true },
        { "DELETE", { "v1", "keys", "*" }, route_key_delete, true },
};

static bool path_matches(const struct route *r, const struct api_request *req)
{
        int n = 0;
        while (n < 5 && r->pattern[n])
                n++;
        if (n != req->nsegments)
                return false;
        for (int i = 0; i < n; i++)
                if (strcmp(r->pattern[i], "*") != 0 && strcmp(r->pattern[i], req->segments[i]) != 0)
                        return false;
        return true;
}

api_handler api_router_match(struct api_request *req, bool *ret_needs_auth, struct space_error *err)
{
        bool path_known = false;
        for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
                if (!path_matches(&routes[i], req))
                        continue;
                path_known = true;
                if (strcmp(routes[i].method, req->method) == 0) {
                        *ret_needs_auth = routes[i].auth;
                        return routes[i].handler;
                }
        }
        if (path_known)
                space_error_set(err, SPACE_E_METHOD_NOT_ALLOWED, "%s is not allowed on %s", req->method, req->path);
        else
                space_error_set(err, SPACE_E_NOT_FOUND, "no route for %s %s", req->method, req->path);
        return NULL;
}

const struct api_upload_sink *api_router_upload_sink(const struct api_request *req)
{
        if (strcmp(req->method, "POST") == 0 && req->nsegments == 3 && strcmp(req->segments[0], "v1") == 0 &&
            strcmp(req->segments[1], "snapshots") == 0 && strcmp(req->segments[2], "import") == 0)
                return &snapshot_import_sink;
        return NULL;
}
