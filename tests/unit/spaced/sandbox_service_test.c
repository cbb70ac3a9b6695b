/* Unit tests of the service layer's caller checks (sandbox_service, and the lists and gets
 * that scope themselves: sessions, commands, snapshots, operations): a caller sees its own
 * project's objects only, a foreign id is the same 404 as an unknown one and changes nothing,
 * and a sandbox token's bearer is a caller of that sandbox's project. On an in-memory SQLite
 * store through the ops table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "service/operation_service.h"
#include "service/project_service.h"
#include "service/sandbox_access.h"
#include "service/sandbox_commands.h"
#include "service/sandbox_service.h"
#include "service/session_service.h"
#include "service/snapshot_service.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"
#include "store_fixture.h"

static struct principal owner_of(const char *project)
{
        struct principal p = { .role = ROLE_OWNER, .permissions = principal_role_permissions(ROLE_OWNER) };
        snprintf(p.project_id, sizeof(p.project_id), "%s", project);
        snprintf(p.key_id, sizeof(p.key_id), "key-%s", project);
        return p;
}

static void add_sandbox(struct spaced_context *ctx, const char *id, const char *project, enum sandbox_state state, int64_t at)
{
        struct sandbox sb = store_fixture_sandbox(id, state, at);
        snprintf(sb.project_id, sizeof(sb.project_id), "%s", project);
        struct operation op =
                store_fixture_operation(id[3] == 'a' ? "op-a" : "op-b", "sandbox.create", id, OPERATION_SUCCEEDED, at);
        snprintf(op.project_id, sizeof(op.project_id), "%s", project);
        assert_int_equal(STORE(ctx, sandbox_insert, &sb, &op), 0);
        sandbox_release(&sb);
}

static int setup(void **state)
{
        struct spaced_context *ctx = calloc(1, sizeof(*ctx));
        struct space_error err = { 0 };
        struct project pr;
        if (!ctx)
                return -1;
        ctx->store.ops = &state_store_sqlite;
        if (ctx->store.ops->open(":memory:", &ctx->store.st) < 0 || project_service_create(ctx, "p2", &pr, &err) < 0)
                return -1;
        add_sandbox(ctx, "sb-a", PROJECT_DEFAULT, SANDBOX_RUNNING, 1000);
        add_sandbox(ctx, "sb-b", "p2", SANDBOX_RUNNING, 2000);
        *state = ctx;
        return 0;
}

static int teardown(void **state)
{
        struct spaced_context *ctx = *state;
        ctx->store.ops->close(ctx->store.st);
        free(ctx);
        return 0;
}

static void test_list_is_scoped(void **state)
{
        struct spaced_context *ctx = *state;
        struct principal mine = owner_of(PROJECT_DEFAULT), admin;
        struct space_error err = { 0 };
        struct sandbox *all = NULL;
        size_t n = 0;
        principal_platform(&admin);
        assert_int_equal(sandbox_service_list(ctx, &mine, NULL, -1, NULL, &all, &n, &err), 0);
        assert_int_equal(n, 1);
        assert_string_equal(all[0].id, "sb-a");
        sandbox_array_free(all, n);
        /* another project's, asked by name: the same 404 as a project that does not exist */
        assert_int_equal(sandbox_service_list(ctx, &mine, "p2", -1, NULL, &all, &n, &err), -1);
        assert_int_equal(err.code, SPACE_E_NOT_FOUND);
        assert_string_equal(err.message, "project p2 not found");
        assert_int_equal(sandbox_service_list(ctx, &mine, "p9", -1, NULL, &all, &n, &err), -1);
        assert_string_equal(err.message, "project p9 not found");
        assert_int_equal(sandbox_service_list(ctx, &admin, NULL, -1, NULL, &all, &n, &err), 0);
        assert_int_equal(n, 2);
        sandbox_array_free(all, n);
        assert_int_equal(sandbox_service_list(ctx, &admin, "p2", -1, NULL, &all, &n, &err), 0);
        assert_int_equal(n, 1);
        assert_string_equal(all[0].id, "sb-b");
        sandbox_array_free(all, n);
        struct operation *ops = NULL;
        assert_int_equal(operation_service_list(ctx, &mine, NULL, NULL, -1, NULL, &ops, &n, &err), 0);
        assert_int_equal(n, 1);
        assert_string_equal(ops[0].target, "sb-a");
        free(ops);
}

static void test_foreign_is_not_found(void **state)
{
        struct spaced_context *ctx = *state;
        struct principal mine = owner_of(PROJECT_DEFAULT);
        struct space_error err = { 0 };
        struct sandbox sb;
        assert_int_equal(sandbox_service_get_running(ctx, &mine, "sb-a", &sb, &err), 0);
        sandbox_release(&sb);
        assert_int_equal(sandbox_service_get_running(ctx, &mine, "sb-b", &sb, &err), -1);
        assert_int_equal(err.code, SPACE_E_NOT_FOUND);
        assert_string_equal(err.message, "sandbox sb-b not found");
        struct space_error unknown = { 0 };
        assert_int_equal(sandbox_service_get_running(ctx, &mine, "sb-zz", &sb, &unknown), -1);
        assert_int_equal(unknown.code, SPACE_E_NOT_FOUND);

        struct attach_session *sessions = NULL;
        struct command_record *cmds = NULL;
        size_t n = 0;
        memset(&err, 0, sizeof(err));
        assert_int_equal(session_service_list(ctx, &mine, "sb-b", NULL, &sessions, &n, &err), -1);
        assert_string_equal(err.message, "sandbox sb-b not found");
        memset(&err, 0, sizeof(err));
        assert_int_equal(sandbox_commands_list(ctx, &mine, "sb-b", false, NULL, &cmds, &n, &err), -1);
        assert_string_equal(err.message, "sandbox sb-b not found");
        assert_int_equal(sandbox_commands_list(ctx, &mine, "sb-a", false, NULL, &cmds, &n, &err), 0);
        assert_int_equal(n, 0);
        command_record_array_free(cmds, n);

        /* a change of another project's sandbox is refused and writes nothing */
        struct sandbox_change c = { .timeout_s = 5, .on_timeout = "pause" };
        memset(&err, 0, sizeof(err));
        assert_int_equal(sandbox_service_change(ctx, &mine, "sb-b", &c, NULL, &err), -1);
        assert_int_equal(err.code, SPACE_E_NOT_FOUND);
        assert_int_equal(STORE(ctx, sandbox_get, "sb-b", &sb), 0);
        assert_int_equal(sb.timeout_s, 3600);
        assert_string_equal(sb.on_timeout, "destroy");
        sandbox_release(&sb);
        assert_int_equal(sandbox_service_clear_expiry(ctx, &mine, "sb-b", &err), -1);
        assert_int_equal(err.code, SPACE_E_NOT_FOUND);
}

static void test_change(void **state)
{
        struct spaced_context *ctx = *state;
        struct principal mine = owner_of(PROJECT_DEFAULT);
        struct space_error err = { 0 };
        struct sandbox sb;
        json_t *meta = json_pack("{s:s}", "k", "v");
        struct sandbox_change c = { .metadata = meta, .timeout_s = 60 };
        int64_t before = wallclock_now_ms();
        assert_int_equal(sandbox_service_change(ctx, &mine, "sb-a", &c, &sb, &err), 0);
        json_decref(meta);
        assert_int_equal(sb.timeout_s, 60);
        assert_string_equal(json_string_value(json_object_get(sb.metadata, "k")), "v");
        assert_true(sb.expires_at_ms >= before + 60000); /* a running sandbox's timeout counts from now */
        int64_t armed = sb.expires_at_ms;
        sandbox_release(&sb);
        /* only_extend: a shorter timeout than what is left is left alone */
        struct sandbox_change shorter = { .timeout_s = 10, .only_extend = true };
        assert_int_equal(sandbox_service_change(ctx, &mine, "sb-a", &shorter, &sb, &err), 0);
        assert_int_equal(sb.timeout_s, 60);
        assert_int_equal(sb.expires_at_ms, armed);
        sandbox_release(&sb);
        assert_int_equal(sandbox_service_clear_expiry(ctx, &mine, "sb-a", &err), 0);
        assert_int_equal(STORE(ctx, sandbox_get, "sb-a", &sb), 0);
        assert_int_equal(sb.expires_at_ms, 0);
        sandbox_release(&sb);
        /* a destroyed sandbox is not changed */
        assert_int_equal(
                STORE(ctx, sandbox_transition, "sb-a", STATE_MASK(SANDBOX_RUNNING), SANDBOX_DESTROYED, "test", NULL, NULL), 0);
        assert_int_equal(sandbox_service_change(ctx, &mine, "sb-a", &c, NULL, &err), -1);
        assert_int_equal(err.code, SPACE_E_INVALID_STATE);
}

static void test_token_caller(void **state)
{
        struct spaced_context *ctx = *state;
        struct principal bearer;
        struct space_error err = { 0 };
        struct sandbox sb;
        sandbox_service_token_caller(ctx, "sb-b", &bearer);
        assert_string_equal(bearer.project_id, "p2");
        assert_int_equal(bearer.permissions, 0);
        assert_string_equal(bearer.key_id, "");
        assert_int_equal(sandbox_access_load(ctx, &bearer, "sb-b", &sb, &err), 0);
        sandbox_release(&sb);
        assert_int_equal(sandbox_access_load(ctx, &bearer, "sb-a", &sb, &err), -1); /* its sandbox's project only */
        sandbox_service_token_caller(ctx, "sb-nope", &bearer);
        assert_string_equal(bearer.project_id, "");
        assert_int_equal(sandbox_access_load(ctx, &bearer, "sb-a", &sb, &err), -1);
        assert_int_equal(sandbox_access_load(ctx, &bearer, "sb-b", &sb, &err), -1);
}

static void test_snapshots_by_label_are_scoped(void **state)
{
        struct spaced_context *ctx = *state;
        struct principal mine = owner_of(PROJECT_DEFAULT), theirs = owner_of("p2");
        struct space_error err = { 0 };
        struct snapshot snap = { .bytes_exclusive = -1, .created_at_ms = 3000 };
        snprintf(snap.id, sizeof(snap.id), "snap-b");
        snprintf(snap.sandbox_id, sizeof(snap.sandbox_id), "sb-b");
        snprintf(snap.project_id, sizeof(snap.project_id), "p2");
        snprintf(snap.state, sizeof(snap.state), "ready");
        snprintf(snap.label, sizeof(snap.label), "golden");
        snprintf(snap.kind, sizeof(snap.kind), "filesystem");
        /* an import lands in a project its importer sees only */
        assert_int_equal(snapshot_service_add_imported(ctx, &mine, &snap, &err), -1);
        assert_int_equal(err.code, SPACE_E_NOT_FOUND);
        assert_false(snapshot_service_id_taken(ctx, "snap-b"));
        assert_int_equal(snapshot_service_add_imported(ctx, &theirs, &snap, &err), 0);
        assert_true(snapshot_service_id_taken(ctx, "snap-b"));
        struct snapshot found;
        assert_int_equal(snapshot_service_by_label(ctx, &theirs, "golden", &found, &err), 0);
        assert_string_equal(found.id, "snap-b");
        assert_int_equal(snapshot_service_by_label(ctx, &mine, "golden", &found, &err), -1);
        assert_int_equal(err.code, SPACE_E_NOT_FOUND);
        struct snapshot *all = NULL;
        size_t n = 9;
        assert_int_equal(snapshot_service_list(ctx, &mine, NULL, "sb-b", NULL, &all, &n, &err), 0);
        assert_int_equal(n, 0);
        free(all);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_list_is_scoped, setup, teardown),
                cmocka_unit_test_setup_teardown(test_foreign_is_not_found, setup, teardown),
                cmocka_unit_test_setup_teardown(test_change, setup, teardown),
                cmocka_unit_test_setup_teardown(test_token_caller, setup, teardown),
                cmocka_unit_test_setup_teardown(test_snapshots_by_label_are_scoped, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
