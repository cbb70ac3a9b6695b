/* Unit tests of the route table: every documented route resolves, authentication is
 * required everywhere but /v1/health, and 404 vs 405 is decided by the path alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "api/api_routes.h"

struct match {
        api_handler handler;
        enum api_auth_kind auth;
        struct space_error err;
        const char *action, *target;
};

/* Splits path on '/' like the HTTP server does, then asks the router. */
static struct match route(const char *method, const char *path)
{
        static char copy[256];
        struct api_request req = { .method = method, .path = path };
        struct match m = { .auth = API_AUTH_CONTROL };
        snprintf(copy, sizeof(copy), "%s", path);
        for (char *save = NULL, *seg = strtok_r(copy, "/", &save); seg; seg = strtok_r(NULL, "/", &save)) {
                assert_true(req.nsegments < 8);
                req.segments[req.nsegments++] = seg;
        }
        m.handler = api_router_match(&req, &m.auth, &m.err);
        m.action = req.action;
        m.target = req.target;
        return m;
}

/* An audit action name: <noun>.<verb>, lowercase. */
static bool action_ok(const char *a)
{
        if (!a || !strchr(a, '.') || a[0] == '.' || a[strlen(a) - 1] == '.')
                return false;
        for (const char *p = a; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || *p == '.' || *p == '_'))
                        return false;
        return true;
}

/* Each route names its action and the id in its path (the first "*"). */
static void test_actions_and_targets(void **state)
{
        static const struct {
                const char *method, *path, *action, *target;
        } cases[] = {
                { "POST", "/v1/sandboxes", "sandbox.create", NULL },
                { "DELETE", "/v1/sandboxes/sb-1", "sandbox.delete", "sb-1" },
                { "POST", "/v1/sandboxes/sb-1/stop", "sandbox.stop", "sb-1" },
                { "DELETE", "/v1/sandboxes/sb-1/sessions/ses-2", "session.revoke", "sb-1" },
                { "POST", "/v1/sandboxes/sb-1/commands/cmd-3/signal", "command.signal", "sb-1" },
                { "DELETE", "/v1/keys/key-1", "key.delete", "key-1" },
                { "POST", "/v1/keys", "key.create", NULL },
                { "DELETE", "/v1/templates/python", "template.delete", "python" },
                { "POST", "/v1/operations/op-1/cancel", "operation.cancel", "op-1" },
                { "GET", "/v1/audit", "audit.list", NULL },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct match m = route(cases[i].method, cases[i].path);
                assert_non_null(m.handler);
                assert_string_equal(m.action, cases[i].action);
                if (cases[i].target)
                        assert_string_equal(m.target, cases[i].target);
                else
                        assert_null(m.target);
        }
        /* Streamed uploads too. */
        char copy[64] = "v1/sandboxes/sb-9/files";
        struct api_request req = { .method = "PUT", .path = "/v1/sandboxes/sb-9/files" };
        for (char *save = NULL, *seg = strtok_r(copy, "/", &save); seg; seg = strtok_r(NULL, "/", &save))
                req.segments[req.nsegments++] = seg;
        enum api_auth_kind auth;
        assert_non_null(api_router_upload_sink(&req, &auth));
        assert_string_equal(req.action, "file.upload");
        assert_string_equal(req.target, "sb-9");
}

static void test_documented_routes(void **state)
{
        static const struct {
                const char *method, *path;
                api_handler handler;
        } routes[] = {
                { "GET", "/v1/version", route_version },
                { "GET", "/v1/sandboxes", route_sandbox_list },
                { "POST", "/v1/sandboxes", route_sandbox_create },
                { "GET", "/v1/sandboxes/sb-0123456789abcdef", route_sandbox_get },
                { "DELETE", "/v1/sandboxes/sb-0123456789abcdef", route_sandbox_delete },
                { "POST", "/v1/sandboxes/sb-1/exec", route_sandbox_exec },
                { "POST", "/v1/sandboxes/sb-1/stop", route_sandbox_action },
                { "POST", "/v1/sandboxes/sb-1/start", route_sandbox_action },
                { "POST", "/v1/sandboxes/sb-1/pause", route_sandbox_pause },
                { "POST", "/v1/sandboxes/sb-1/resume", route_sandbox_action },
                { "PATCH", "/v1/sandboxes/sb-1", route_sandbox_patch },
                { "POST", "/v1/sandboxes/sb-1/snapshots", route_snapshot_create },
                { "GET", "/v1/sandboxes/sb-1/snapshots", route_snapshot_list_of_sandbox },
                { "POST", "/v1/sandboxes/sb-1/restore", route_sandbox_restore },
                { "POST", "/v1/sandboxes/sb-1/fork", route_sandbox_fork },
                { "GET", "/v1/snapshots", route_snapshot_list },
                { "GET", "/v1/snapshots/snap-1", route_snapshot_get },
                { "DELETE", "/v1/snapshots/snap-1", route_snapshot_delete },
                { "GET", "/v1/capabilities", route_capabilities },
                { "GET", "/v1/audit", route_audit_list },
                { "GET", "/v1/templates", route_template_list },
                { "GET", "/v1/templates/busybox", route_template_get },
                { "DELETE", "/v1/templates/busybox", route_template_delete },
                { "POST", "/v1/templates/debian/build", route_template_build },
                { "GET", "/v1/operations", route_operation_list },
                { "GET", "/v1/operations/op-1", route_operation_get },
                { "GET", "/v1/keys", route_key_list },
                { "POST", "/v1/keys", route_key_create },
                { "DELETE", "/v1/keys/key-1", route_key_delete },
                { "POST", "/v1/sandboxes/sb-1/sessions", route_session_create },
                { "GET", "/v1/sandboxes/sb-1/sessions", route_session_list },
                { "POST", "/v1/sandboxes/sb-1/sessions/ses-1/renew", route_session_renew },
                { "DELETE", "/v1/sandboxes/sb-1/sessions/ses-1", route_session_revoke },
        };
        for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
                struct match m = route(routes[i].method, routes[i].path);
                if (m.handler != routes[i].handler)
                        fail_msg("%s %s went to the wrong handler", routes[i].method, routes[i].path);
                if (!action_ok(m.action))
                        fail_msg("%s %s has no audit action name", routes[i].method, routes[i].path);
                if (m.auth != API_AUTH_CONTROL)
                        fail_msg("%s %s does not need a control API key", routes[i].method, routes[i].path);
        }
}

/* Commands take only attach tokens: a control key must not reach them, nor a token the
 * control plane. */
static void test_data_plane_routes(void **state)
{
        static const struct {
                const char *method, *path;
                api_handler handler;
        } routes[] = {
                { "POST", "/v1/sandboxes/sb-1/commands", route_command_start },
                { "GET", "/v1/sandboxes/sb-1/commands", route_command_list },
                { "GET", "/v1/sandboxes/sb-1/commands/cmd-1", route_command_get },
                { "GET", "/v1/sandboxes/sb-1/commands/cmd-1/events", route_command_events },
                { "POST", "/v1/sandboxes/sb-1/commands/cmd-1/stdin", route_command_stdin },
                { "POST", "/v1/sandboxes/sb-1/commands/cmd-1/stdin/close", route_command_stdin_close },
                { "POST", "/v1/sandboxes/sb-1/commands/cmd-1/signal", route_command_signal },
                { "POST", "/v1/sandboxes/sb-1/commands/cmd-1/resize", route_command_resize },
        };
        for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
                struct match m = route(routes[i].method, routes[i].path);
                if (m.handler != routes[i].handler)
                        fail_msg("%s %s went to the wrong handler", routes[i].method, routes[i].path);
                if (m.auth != API_AUTH_DATA)
                        fail_msg("%s %s does not take an attach token", routes[i].method, routes[i].path);
        }
        /* The session routes hand tokens out, so they are control-plane. */
        assert_int_equal(route("POST", "/v1/sandboxes/sb-1/sessions").auth, API_AUTH_CONTROL);
}

static void test_health_is_open(void **state)
{
        struct match m = route("GET", "/v1/health");
        assert_ptr_equal(m.handler, route_health);
        assert_int_equal(m.auth, API_AUTH_NONE);
        /* Trailing and doubled slashes do not matter. */
        m = route("GET", "//v1//health/");
        assert_ptr_equal(m.handler, route_health);
}

static void test_wrong_method_is_405(void **state)
{
        static const char *const cases[][2] = {
                { "PUT", "/v1/sandboxes" },        { "DELETE", "/v1/sandboxes" }, { "GET", "/v1/sandboxes/x/exec" },
                { "POST", "/v1/health" },          { "PUT", "/v1/sandboxes/x" },  { "GET", "/v1/templates/x/build" },
                { "POST", "/v1/operations/op-1" }, { "get", "/v1/version" },      { "DELETE", "/v1/operations/op-1" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct match m = route(cases[i][0], cases[i][1]);
                assert_null(m.handler);
                if (m.err.code != SPACE_E_METHOD_NOT_ALLOWED)
                        fail_msg("%s %s gave %s", cases[i][0], cases[i][1], space_error_code_name(m.err.code));
        }
}

static void test_unknown_path_is_404(void **state)
{
        static const char *const paths[] = {
                "/",
                "/v1",
                "/v2/health",
                "/v1/sandboxes/x/exec/more",
                "/v1/sandboxes/x/reboot",
                "/v1/Health",
                "/v1/templates/x/y/build",
                "/v1/keys/x/rotate",
                "/health",
                "/v1/health/extra",
        };
        for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
                struct match m = route("GET", paths[i]);
                assert_null(m.handler);
                if (m.err.code != SPACE_E_NOT_FOUND)
                        fail_msg("GET %s gave %s", paths[i], space_error_code_name(m.err.code));
        }
}

/* Splits path as the HTTP server does (API_REQUEST_SEGMENTS kept, more_segments past them)
 * and asks for a streamed-body route. */
static const struct api_upload_sink *sink_of(const char *method, const char *path, struct api_request *req)
{
        static char copy[1024];
        *req = (struct api_request){ .method = method, .path = path };
        snprintf(copy, sizeof(copy), "%s", path);
        for (char *save = NULL, *seg = strtok_r(copy, "/", &save); seg; seg = strtok_r(NULL, "/", &save)) {
                if (req->nsegments == API_REQUEST_SEGMENTS) {
                        req->more_segments = true;
                        break;
                }
                req->segments[req->nsegments++] = seg;
        }
        enum api_auth_kind auth;
        return api_router_upload_sink(req, &auth);
}

/* A "**" tail takes none, one or any number of segments (more than a request keeps apart),
 * with any method ("*"); a route without one takes no more segments than it names. */
static void test_tail_wildcard(void **state)
{
        (void)state;
        struct api_request req;
        static const char *const methods[] = { "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS" };
        for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
                assert_ptr_equal(sink_of(methods[i], "/v1/sandboxes/sb-1/ports/8080/x", &req), &port_proxy_sink);
        assert_ptr_equal(sink_of("GET", "/v1/sandboxes/sb-1/ports/8080", &req), &port_proxy_sink);
        assert_string_equal(req.target, "sb-1");
        assert_int_equal(req.object, OBJECT_SANDBOX);
        assert_int_equal(req.permission, PERM_SANDBOX_EXEC);
        assert_ptr_equal(sink_of("POST", "/v1/sandboxes/sb-1/ports/8080/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q", &req),
                         &port_proxy_sink);
        assert_true(req.more_segments);
        assert_null(sink_of("GET", "/v1/sandboxes/sb-1/port/8080/x", &req));
        assert_null(sink_of("GET", "/v1/sandboxes/sb-1/ports", &req));
        /* a fixed route past its segments: no match */
        struct match m = route("GET", "/v1/sandboxes/sb-1/stats/extra");
        assert_null(m.handler);
        assert_int_equal(m.err.code, SPACE_E_NOT_FOUND);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_documented_routes),   cmocka_unit_test(test_actions_and_targets),
                cmocka_unit_test(test_data_plane_routes),   cmocka_unit_test(test_health_is_open),
                cmocka_unit_test(test_wrong_method_is_405), cmocka_unit_test(test_unknown_path_is_404),
                cmocka_unit_test(test_tail_wildcard),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
