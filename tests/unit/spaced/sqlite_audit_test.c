/* Unit tests of what only the SQLite backend has of the audit log (sqlite_audit.c): rows
 * cannot be changed, even by SQL that bypasses the ops table. The audit verbs every backend
 * must have are in the conformance suite (tests/unit/state_store/store_conformance_audit.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "state_store/sqlite_statement.h"
#include "state_store/state_store.h"
#include "store_conformance.h"

static const struct state_store_ops *ops = &state_store_sqlite;

static int open_store(void **state)
{
        struct state_store *st = NULL;
        if (ops->open(":memory:", &st) < 0)
                return -1;
        *state = st;
        return 0;
}

static int close_store(void **state)
{
        ops->close(*state);
        return 0;
}

static void test_append_only(void **state)
{
        struct state_store *st = *state;
        store_conformance_audit_rows(ops, st);
        assert_int_not_equal(sqlite3_exec(st->db, "UPDATE audit_log SET status = 200", NULL, NULL, NULL), SQLITE_OK);
        struct audit_filter f = { .key_id = "key-b" };
        struct audit_record *got = NULL;
        size_t n = 0;
        assert_int_equal(ops->audit_list(st, &f, NULL, &got, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(got[0].id, "aud-4");
        assert_int_equal(got[0].status, 404);
        free(got);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_append_only, open_store, close_store),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
