/* Unit tests of the SQLite schema migrations and of reopening a database file. */
#include <errno.h>
#include <setjmp.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "state_store/sqlite_migrations.h"
#include "state_store/state_store.h"
#include "store_fixture.h"

static const struct state_store_ops *ops = &state_store_sqlite;

struct files {
        char dir[4096];
        char db[4200];
};

static int make_dir(void **state)
{
        struct files *f = calloc(1, sizeof(*f));
        if (!f)
                return -1;
        store_fixture_tmpdir(f->dir, sizeof(f->dir));
        snprintf(f->db, sizeof(f->db), "%s/state.db", f->dir);
        *state = f;
        return 0;
}

static int remove_dir(void **state)
{
        struct files *f = *state;
        store_fixture_rmdir(f->dir);
        free(f);
        return 0;
}

static int user_version(const char *path)
{
        sqlite3 *db = NULL;
        sqlite3_stmt *s = NULL;
        int v = -1;
        assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, NULL), SQLITE_OK);
        if (sqlite3_step(s) == SQLITE_ROW)
                v = sqlite3_column_int(s, 0);
        sqlite3_finalize(s);
        sqlite3_close(db);
        return v;
}

static void test_apply_is_idempotent(void **state)
{
        sqlite3 *db = NULL;
        assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
        int v1 = -1, v2 = -1;
        assert_int_equal(sqlite_migrations_apply(db, &v1), 0);
        assert_true(v1 >= 1);
        assert_int_equal(sqlite_migrations_apply(db, &v2), 0);
        assert_int_equal(v2, v1);
        assert_int_equal(sqlite_migrations_apply(db, NULL), 0);
        /* Every table the backend uses exists exactly once. */
        static const char *const tables[] = { "sandboxes", "operations", "templates", "api_keys" };
        for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
                sqlite3_stmt *s = NULL;
                assert_int_equal(
                        sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name=?", -1, &s, NULL),
                        SQLITE_OK);
                sqlite3_bind_text(s, 1, tables[i], -1, SQLITE_STATIC);
                assert_int_equal(sqlite3_step(s), SQLITE_ROW);
                assert_int_equal(sqlite3_column_int(s, 0), 1);
                sqlite3_finalize(s);
        }
        sqlite3_close(db);
}

static void expect_text(sqlite3 *db, const char *sql, const char *want)
{
        sqlite3_stmt *s = NULL;
        assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_step(s), SQLITE_ROW);
        assert_string_equal((const char *)sqlite3_column_text(s, 0), want);
        sqlite3_finalize(s);
}

/* Migration 6 (projects): what existed belongs to "default", the keys that existed stay
 * all-powerful admins, the templates that existed are shared. */
static void test_projects_migration_moves_existing_rows(void **state)
{
        sqlite3 *db = NULL;
        int v = -1;
        assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
        assert_int_equal(sqlite_migrations_apply_upto(db, 5, &v), 0);
        assert_int_equal(v, 5);
        assert_int_equal(
                sqlite3_exec(db,
                             "INSERT INTO sandboxes(id, state, template, environment, cpus, memory_mb, pids, disk_mb, env,"
                             " metadata, timeout_s, on_timeout, created_at, updated_at, uid_base)"
                             " VALUES ('sb-old', 'running', 'busybox', '{}', 1, 512, 256, 0, '{}', '{}', 0, 'stop', 1, 1, 0);"
                             "INSERT INTO snapshots(id, sandbox_id, state, kind, created_at) VALUES ('snap-old', 'sb-old', "
                             "'ready', 'filesystem', 1);"
                             "INSERT INTO operations(id, kind, target, state, created_at) VALUES ('op-old', 'sandbox.create', "
                             "'sb-old', 'succeeded', 1);"
                             "INSERT INTO templates(name, state, environment, updated_at) VALUES ('mine:1', 'ready', '{}', 1);"
                             "INSERT INTO api_keys(id, name, hash, created_at) VALUES ('key-old', 'ci', 'h', 1);"
                             "INSERT INTO commands(id, sandbox_id, spec, state, created_at) VALUES ('cmd-old', 'sb-old', '{}', "
                             "'exited', 1);"
                             "INSERT INTO attach_sessions(id, sandbox_id, token_hash, created_at, expires_at) VALUES ('ses-old', "
                             "'sb-old', 't', 1, 2);",
                             NULL, NULL, NULL),
                SQLITE_OK);
        assert_int_equal(sqlite_migrations_apply(db, &v), 0);
        assert_true(v >= 6);
        expect_text(db, "SELECT id FROM projects", "default");
        expect_text(db, "SELECT project_id FROM sandboxes WHERE id='sb-old'", "default");
        expect_text(db, "SELECT project_id FROM snapshots WHERE id='snap-old'", "default");
        expect_text(db, "SELECT project_id FROM operations WHERE id='op-old'", "default");
        expect_text(db, "SELECT project_id FROM commands WHERE id='cmd-old'", "default");
        expect_text(db, "SELECT project_id FROM attach_sessions WHERE id='ses-old'", "default");
        expect_text(db, "SELECT project_id || '|' FROM templates WHERE name='mine:1'", "|");
        expect_text(db, "SELECT project_id || '|' || role || '|' || permissions || '|' || expires_at FROM api_keys",
                    "default|admin|4294967295|0");
        sqlite3_close(db);
}

static void test_reopen_keeps_data(void **state)
{
        struct files *f = *state;
        struct state_store *st = NULL;
        assert_int_equal(ops->open(f->db, &st), 0);
        struct sandbox sb = store_fixture_sandbox("sb-persist", SANDBOX_RUNNING, 77);
        struct operation op = store_fixture_operation("op-persist", "sandbox.create", "sb-persist", OPERATION_SUCCEEDED, 77);
        assert_int_equal(ops->sandbox_insert(st, &sb, &op), 0);
        struct api_key k = { .created_at_ms = 5 };
        snprintf(k.id, sizeof(k.id), "key-persist");
        snprintf(k.name, sizeof(k.name), "admin");
        memset(k.hash, 'c', 64);
        assert_int_equal(ops->key_insert(st, &k), 0);
        ops->close(st);
        int version = user_version(f->db);
        assert_true(version >= 1);

        /* Reopening runs the migrations again: they must find nothing to do. */
        for (int round = 0; round < 2; round++) {
                st = NULL;
                assert_int_equal(ops->open(f->db, &st), 0);
                struct sandbox got;
                assert_int_equal(ops->sandbox_get(st, "sb-persist", &got), 0);
                assert_int_equal(got.state, SANDBOX_RUNNING);
                assert_true(json_equal(got.env, sb.env));
                assert_int_equal(got.created_at_ms, 77);
                sandbox_release(&got);
                struct operation gop;
                assert_int_equal(ops->operation_get(st, "op-persist", &gop), 0);
                assert_int_equal(gop.state, OPERATION_SUCCEEDED);
                int64_t count = 0;
                assert_int_equal(ops->key_count(st, &count), 0);
                assert_int_equal(count, 1);
                ops->close(st);
                assert_int_equal(user_version(f->db), version);
        }
        sandbox_release(&sb);
}

static void test_newer_schema_is_refused(void **state)
{
        struct files *f = *state;
        sqlite3 *db = NULL;
        assert_int_equal(sqlite3_open(f->db, &db), SQLITE_OK);
        assert_int_equal(sqlite3_exec(db, "PRAGMA user_version = 999;", NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);
        struct state_store *st = (struct state_store *)0x1;
        assert_int_equal(ops->open(f->db, &st), -EPROTO);
        assert_ptr_equal(st, (struct state_store *)0x1); /* untouched on failure */
        assert_int_equal(user_version(f->db), 999);
}

/* Operations stored before operation_refs existed get their references from their params
 * when the store is upgraded; a malformed params text is skipped, not fatal. */
static void test_operation_refs_backfilled(void **state)
{
        struct files *f = *state;
        struct state_store *st = NULL;
        assert_int_equal(ops->open(f->db, &st), 0);
        ops->close(st);
        int latest = user_version(f->db);
        sqlite3 *db = NULL;
        assert_int_equal(sqlite3_open(f->db, &db), SQLITE_OK);
        char sql[1024];
        /* As the schema was before the refs, with three operations in it (the migrations
         * after it undone too: the sandboxes' network column). */
        snprintf(sql, sizeof(sql),
                 "DROP TABLE operation_refs; ALTER TABLE sandboxes DROP COLUMN network; PRAGMA user_version = %d;"
                 "INSERT INTO operations(id, kind, target, state, created_at, params) VALUES"
                 " ('op-f', 'sandbox.fork', 'sb-p', 'pending', 1, "
                 "'{\"snapshot_id\":\"snap-1\",\"children\":[\"sb-a\",\"sb-b\"]}'),"
                 " ('op-s', 'sandbox.stop', 'sb-q', 'pending', 2, ''),"
                 " ('op-x', 'sandbox.snapshot', 'sb-r', 'pending', 3, '{not json');",
                 SQLITE_MIGRATION_OPERATION_REFS - 1);
        assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);
        assert_int_equal(ops->open(f->db, &st), 0);
        assert_int_equal(user_version(f->db), latest);
        const char *const named[] = { "snap-1", "sb-a", "sb-b", "sb-p", "sb-q" };
        bool refers;
        for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++) {
                refers = false;
                assert_int_equal(ops->operation_refers(st, named[i], &refers), 0);
                assert_true(refers);
        }
        refers = true;
        assert_int_equal(ops->operation_refers(st, "sb-", &refers), 0);
        assert_false(refers);
        ops->close(st);
}

static void test_open_failure(void **state)
{
        struct files *f = *state;
        char path[4300];
        snprintf(path, sizeof(path), "%s/no/such/dir/state.db", f->dir);
        struct state_store *st = NULL;
        assert_true(ops->open(path, &st) < 0);
        assert_null(st);
}

static void test_close_null(void **state)
{
        ops->close(NULL);
}

/* A database an older spaced left, with a live and a stopped sandbox: the namespace driver's
 * columns move into runtime_state, every row is on the namespaces runtime, and the store
 * reads it back. */
static void test_runtime_state_migration_moves_rows(void **state)
{
        struct files *f = *state;
        sqlite3 *db = NULL;
        int v = -1;
        assert_int_equal(sqlite3_open(f->db, &db), SQLITE_OK);
        assert_int_equal(sqlite_migrations_apply_upto(db, SQLITE_MIGRATION_RUNTIME_STATE - 1, &v), 0);
        assert_int_equal(v, SQLITE_MIGRATION_RUNTIME_STATE - 1);
        const char *rows =
                "INSERT INTO sandboxes(id, state, template, environment, cpus, memory_mb, pids, disk_mb, env, metadata,"
                " timeout_s, on_timeout, created_at, updated_at, pid, pid_start, uid_base) VALUES"
                " ('sb-live', 'running', 'busybox', '{\"driver\":\"namespaces\"}', 1, 512, 256, 0, '{}', '{}', 0, 'stop', 1, 1,"
                "  4242, 1099511627776, 1065536),"
                " ('sb-off', 'stopped', 'busybox', '{}', 1, 512, 256, 0, '{}', '{}', 0, 'stop', 1, 1, 0, 0, 1000000);";
        assert_int_equal(sqlite3_exec(db, rows, NULL, NULL, NULL), SQLITE_OK);
        assert_int_equal(sqlite_migrations_apply(db, &v), 0);
        assert_true(v >= SQLITE_MIGRATION_RUNTIME_STATE);
        /* The old columns are gone. */
        assert_int_not_equal(sqlite3_exec(db, "SELECT uid_base FROM sandboxes", NULL, NULL, NULL), SQLITE_OK);
        assert_int_not_equal(sqlite3_exec(db, "SELECT pid, pid_start FROM sandboxes", NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);

        struct state_store *st = NULL;
        struct sandbox sb;
        assert_int_equal(ops->open(f->db, &st), 0);
        assert_int_equal(ops->sandbox_get(st, "sb-live", &sb), 0);
        assert_string_equal(sb.runtime, "namespaces");
        json_t *h = json_loads(sb.runtime_state, 0, NULL);
        assert_non_null(h);
        assert_int_equal(json_integer_value(json_object_get(h, "pid")), 4242);
        assert_int_equal(json_integer_value(json_object_get(h, "pid_start")), 1099511627776LL);
        assert_int_equal(json_integer_value(json_object_get(h, "uid_base")), 1065536);
        json_decref(h);
        sandbox_release(&sb);
        assert_int_equal(ops->sandbox_get(st, "sb-off", &sb), 0);
        assert_string_equal(sb.runtime, "namespaces");
        h = json_loads(sb.runtime_state, 0, NULL);
        assert_int_equal(json_integer_value(json_object_get(h, "uid_base")), 1000000);
        json_decref(h);
        sandbox_release(&sb);
        ops->close(st);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_apply_is_idempotent),
                cmocka_unit_test(test_projects_migration_moves_existing_rows),
                cmocka_unit_test_setup_teardown(test_reopen_keeps_data, make_dir, remove_dir),
                cmocka_unit_test_setup_teardown(test_newer_schema_is_refused, make_dir, remove_dir),
                cmocka_unit_test_setup_teardown(test_operation_refs_backfilled, make_dir, remove_dir),
                cmocka_unit_test_setup_teardown(test_open_failure, make_dir, remove_dir),
                cmocka_unit_test(test_close_null),
                cmocka_unit_test_setup_teardown(test_runtime_state_migration_moves_rows, make_dir, remove_dir),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
