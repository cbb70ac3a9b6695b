/* Unit tests of api_render: the response objects have exactly the members api/openapi.yaml
 * lists as required, with nulls where it says nullable. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "api/api_render.h"
#include "auth/principal.h"
#include "store_fixture.h"

/* The object has exactly these members (NULL-terminated). */
static void assert_members(const json_t *obj, const char *const names[])
{
        size_t n = 0;
        for (; names[n]; n++)
                if (!json_object_get(obj, names[n]))
                        fail_msg("member %s is missing", names[n]);
        if (json_object_size(obj) != n)
                fail_msg("%zu members, want %zu", json_object_size(obj), n);
}

static void test_time(void **state)
{
        json_t *t = api_render_time(1764439200123);
        assert_string_equal(json_string_value(t), "2025-11-29T18:00:00.123Z");
        json_decref(t);
        assert_true(json_is_null(api_render_time(0)));
        assert_true(json_is_null(api_render_time(-5)));
}

static void test_sandbox(void **state)
{
        static const char *const members[] = { "id",         "state",      "state_reason", "template",  "environment",
                                               "resources",  "env",        "metadata",     "timeout_s", "on_timeout",
                                               "expires_at", "created_at", "updated_at",   "lineage",   "rolling_snapshots",
                                               "project",    "storage",    "network",      "runtime",   "node",
                                               "idle",       NULL };
        static const char *const lineage[] = { "parent_sandbox_id", "parent_snapshot_id", "head_snapshot_id", NULL };
        static const char *const resources[] = { "cpus", "memory_mb", "pids", "disk_mb", NULL };
        struct sandbox sb = store_fixture_sandbox("sb-0123456789abcdef", SANDBOX_RUNNING, 1764439200123);
        struct pool_health pool = { .condition = POOL_OK };
        json_t *j = api_render_sandbox(&sb, &pool);
        assert_non_null(j);
        assert_string_equal(json_string_value(json_object_get(json_object_get(j, "storage"), "condition")), "ok");
        assert_true(json_is_null(json_object_get(json_object_get(j, "storage"), "reason")));
        assert_members(j, members);
        assert_members(json_object_get(j, "resources"), resources);
        assert_members(json_object_get(j, "lineage"), lineage);
        /* no network: the profile none, with no rules */
        assert_string_equal(json_string_value(json_object_get(json_object_get(j, "network"), "profile")), "none");
        assert_int_equal(json_array_size(json_object_get(json_object_get(j, "network"), "allow")), 0);
        assert_true(json_is_null(json_object_get(json_object_get(j, "lineage"), "parent_sandbox_id")));
        assert_string_equal(json_string_value(json_object_get(j, "state")), "running");
        assert_true(json_is_null(json_object_get(j, "state_reason")));
        assert_true(json_is_null(json_object_get(j, "expires_at")));
        assert_true(json_is_null(json_object_get(j, "idle"))); /* none of its own */
        assert_string_equal(json_string_value(json_object_get(j, "created_at")), "2025-11-29T18:00:00.123Z");
        assert_float_equal(json_number_value(json_object_get(json_object_get(j, "resources"), "cpus")), 0.5, 1e-12);
        assert_true(json_is_integer(json_object_get(json_object_get(j, "resources"), "memory_mb")));
        assert_true(json_equal(json_object_get(j, "env"), sb.env));
        /* The runtime handle (pid, uid range) never leaks into the API. */
        assert_null(json_object_get(j, "pid"));
        assert_null(json_object_get(j, "uid_base"));
        json_decref(j);

        snprintf(sb.state_reason, sizeof(sb.state_reason), "agent died");
        sb.state = SANDBOX_FAILED;
        sb.expires_at_ms = 1000;
        pool.condition = POOL_READ_ONLY;
        snprintf(pool.reason, sizeof(pool.reason), "the pool is mounted read-only");
        j = api_render_sandbox(&sb, &pool);
        assert_string_equal(json_string_value(json_object_get(json_object_get(j, "storage"), "condition")), "read_only");
        assert_string_equal(json_string_value(json_object_get(json_object_get(j, "storage"), "reason")),
                            "the pool is mounted read-only");
        assert_string_equal(json_string_value(json_object_get(j, "state_reason")), "agent died");
        assert_string_equal(json_string_value(json_object_get(j, "state")), "failed");
        assert_string_equal(json_string_value(json_object_get(j, "expires_at")), "1970-01-01T00:00:01.000Z");
        json_decref(j);
        sandbox_release(&sb);
}

static void test_operation(void **state)
{
        static const char *const members[] = { "id",          "kind",  "target", "state", "created_at", "started_at",
                                               "finished_at", "error", "result", "node",  "claims",     NULL };
        struct operation op = store_fixture_operation("op-8c1f0e2a9b7d4c11", "sandbox.create", "sb-1", OPERATION_PENDING, 5000);
        json_t *j = api_render_operation(&op);
        assert_members(j, members);
        assert_true(json_is_null(json_object_get(j, "error")));
        assert_true(json_is_null(json_object_get(j, "result")));
        assert_true(json_is_null(json_object_get(j, "node"))); /* claimed by no node yet */
        assert_int_equal(json_integer_value(json_object_get(j, "claims")), 0);
        assert_true(json_is_null(json_object_get(j, "started_at")));
        assert_true(json_is_null(json_object_get(j, "finished_at")));
        assert_string_equal(json_string_value(json_object_get(j, "state")), "pending");
        json_decref(j);

        /* An error is shown only once the operation has failed. */
        snprintf(op.error_code, sizeof(op.error_code), "internal");
        snprintf(op.error_message, sizeof(op.error_message), "boom");
        op.state = OPERATION_SUCCEEDED;
        j = api_render_operation(&op);
        assert_true(json_is_null(json_object_get(j, "error")));
        json_decref(j);
        op.state = OPERATION_FAILED;
        op.started_at_ms = 6000;
        op.finished_at_ms = 7000;
        j = api_render_operation(&op);
        assert_members(j, members);
        json_t *e = json_object_get(j, "error");
        assert_string_equal(json_string_value(json_object_get(e, "code")), "internal");
        assert_string_equal(json_string_value(json_object_get(e, "message")), "boom");
        assert_string_equal(json_string_value(json_object_get(j, "finished_at")), "1970-01-01T00:00:07.000Z");
        json_decref(j);
}

static void test_template_and_key(void **state)
{
        static const char *const template_members[] = { "name", "state", "state_reason", "environment", "updated_at", NULL };
        /* key rows grew their project, role, permissions and expiry (docs/tenancy.md) */
        static const char *const key_members[] = { "id",          "name",       "created_at", "last_used_at", "project", "role",
                                                   "permissions", "expires_at", NULL };
        struct template_record t = { .environment = json_object(), .updated_at_ms = 1 };
        snprintf(t.name, sizeof(t.name), "debian");
        snprintf(t.state, sizeof(t.state), "not_built");
        json_t *j = api_render_template(&t);
        assert_members(j, template_members);
        assert_true(json_is_null(json_object_get(j, "state_reason")));
        json_decref(j);
        template_record_release(&t);

        struct api_key k = { .created_at_ms = 1000 };
        snprintf(k.id, sizeof(k.id), "key-1");
        snprintf(k.name, sizeof(k.name), "ci");
        memset(k.hash, 'a', 64);
        snprintf(k.project_id, sizeof(k.project_id), "p1");
        snprintf(k.role, sizeof(k.role), "viewer");
        k.permissions = PERM_ALL;
        j = api_render_key(&k);
        assert_members(j, key_members); /* and never the hash */
        assert_true(json_is_null(json_object_get(j, "last_used_at")));
        assert_true(json_is_null(json_object_get(j, "expires_at")));
        assert_string_equal(json_string_value(json_object_get(j, "role")), "viewer");
        assert_int_equal(json_array_size(json_object_get(j, "permissions")), 6); /* a viewer's reads */
        json_decref(j);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_time),
                cmocka_unit_test(test_sandbox),
                cmocka_unit_test(test_operation),
                cmocka_unit_test(test_template_and_key),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
