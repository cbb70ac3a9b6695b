/* Conformance tests of a state_store backend (store_conformance.h): the audit log. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "state_store/state_store.h"
#include "store_conformance.h"

static const struct state_store_ops *ops; /* the backend under test, set by store_conformance_audit() */

static struct audit_record row(const char *id, int64_t at, const char *key, const char *action, const char *target, int status)
{
        struct audit_record a = { .created_at_ms = at, .status = status };
        snprintf(a.id, sizeof(a.id), "%s", id);
        snprintf(a.request_id, sizeof(a.request_id), "req-%s", id);
        snprintf(a.key_id, sizeof(a.key_id), "%s", key);
        snprintf(a.action, sizeof(a.action), "%s", action);
        snprintf(a.target, sizeof(a.target), "%s", target);
        snprintf(a.method, sizeof(a.method), "POST");
        snprintf(a.source, sizeof(a.source), "127.0.0.1");
        if (status >= 400)
                snprintf(a.error_code, sizeof(a.error_code), "unauthorized");
        return a;
}

void store_conformance_audit_rows(const struct state_store_ops *with, struct state_store *st)
{
        struct audit_record rows[] = {
                row("aud-1", 1000, "key-a", "sandbox.create", "", 200),
                row("aud-2", 2000, "key-a", "sandbox.delete", "sb-1", 200),
                row("aud-3", 2000, "", "key.list", "", 401),
                row("aud-4", 3000, "key-b", "sandbox.delete", "sb-2", 404),
        };
        for (size_t i = 0; i < 4; i++)
                assert_int_equal(with->audit_insert(st, &rows[i]), 0);
}

static size_t list(struct state_store *st, const struct audit_filter *f, const struct store_page *page, char ids[8][32])
{
        struct audit_record *got = NULL;
        size_t n = 0;
        assert_int_equal(ops->audit_list(st, f, page, &got, &n), 0);
        assert_true(n <= 8);
        for (size_t i = 0; i < n; i++)
                snprintf(ids[i], 32, "%s", got[i].id);
        free(got);
        return n;
}

static void test_insert_list_roundtrip(void **state)
{
        struct state_store *st = *state;
        store_conformance_audit_rows(ops, st);
        struct audit_record *got = NULL;
        size_t n = 0;
        struct audit_filter all = { 0 };
        assert_int_equal(ops->audit_list(st, &all, NULL, &got, &n), 0);
        assert_int_equal(n, 4);
        assert_string_equal(got[0].id, "aud-1");
        assert_string_equal(got[2].id, "aud-3");
        assert_string_equal(got[2].key_id, ""); /* stored NULL, read back empty */
        assert_string_equal(got[2].error_code, "unauthorized");
        assert_int_equal(got[2].status, 401);
        assert_string_equal(got[1].target, "sb-1");
        assert_string_equal(got[1].request_id, "req-aud-2");
        assert_string_equal(got[1].project, "");
        assert_int_equal(got[3].created_at_ms, 3000);
        free(got);
        struct audit_record dup = row("aud-1", 5, "", "x", "", 200);
        assert_int_equal(ops->audit_insert(st, &dup), -EEXIST);
}

/* A row with a detail (an egress connection's) reads back byte for byte; one without, "". */
static void test_detail(void **state)
{
        struct state_store *st = *state;
        struct audit_record a = row("aud-c", 7000, "", "egress.connection", "sb-9", 0);
        snprintf(a.detail, sizeof(a.detail), "{\"name\":\"pypi.org\",\"port\":443,\"decision\":\"deny\",\"bytes_in\":0}");
        assert_int_equal(ops->audit_insert(st, &a), 0);
        struct audit_record plain = row("aud-d", 7001, "key-a", "sandbox.create", "", 200);
        assert_int_equal(ops->audit_insert(st, &plain), 0);
        struct audit_record *got = NULL;
        size_t n = 0;
        struct audit_filter f = { .action = "egress.connection", .target = "sb-9" };
        assert_int_equal(ops->audit_list(st, &f, NULL, &got, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(got[0].detail, a.detail);
        free(got);
        struct audit_filter all = { 0 };
        assert_int_equal(ops->audit_list(st, &all, NULL, &got, &n), 0);
        assert_int_equal(n, 2);
        assert_string_equal(got[1].detail, "");
        free(got);
}

static void test_filters(void **state)
{
        struct state_store *st = *state;
        store_conformance_audit_rows(ops, st);
        char ids[8][32];
        struct audit_filter f = { .action = "sandbox.delete" };
        assert_int_equal(list(st, &f, NULL, ids), 2);
        assert_string_equal(ids[1], "aud-4");
        f = (struct audit_filter){ .key_id = "key-a", .target = "sb-1" };
        assert_int_equal(list(st, &f, NULL, ids), 1);
        assert_string_equal(ids[0], "aud-2");
        f = (struct audit_filter){ .since_ms = 2000, .until_ms = 3000 };
        assert_int_equal(list(st, &f, NULL, ids), 2);
        f = (struct audit_filter){ .project = "p1" };
        assert_int_equal(list(st, &f, NULL, ids), 0);
        f = (struct audit_filter){ .target = "'; DROP TABLE audit_log; --" };
        assert_int_equal(list(st, &f, NULL, ids), 0);
}

static void test_pages(void **state)
{
        struct state_store *st = *state;
        store_conformance_audit_rows(ops, st);
        char ids[8][32];
        struct audit_filter all = { 0 };
        struct store_page page = { .limit = 2 };
        assert_int_equal(list(st, &all, &page, ids), 2);
        assert_string_equal(ids[1], "aud-2");
        /* after (2000, aud-2): aud-3 shares the time and follows by id */
        page = (struct store_page){ .after_ms = 2000, .after_id = "aud-2", .limit = 2 };
        assert_int_equal(list(st, &all, &page, ids), 2);
        assert_string_equal(ids[0], "aud-3");
        assert_string_equal(ids[1], "aud-4");
        page = (struct store_page){ .after_ms = 3000, .after_id = "aud-4", .limit = 2 };
        assert_int_equal(list(st, &all, &page, ids), 0);
}

static void test_purge(void **state)
{
        struct state_store *st = *state;
        store_conformance_audit_rows(ops, st);
        int n = -1;
        assert_int_equal(ops->audit_purge(st, 2000, 500, &n), 0);
        assert_int_equal(n, 1);
        assert_int_equal(ops->audit_purge(st, 3000, 1, &n), 0); /* in batches */
        assert_int_equal(n, 1);
        assert_int_equal(ops->audit_purge(st, 3000, 500, &n), 0);
        assert_int_equal(n, 1);
        char ids[8][32];
        struct audit_filter all = { 0 };
        assert_int_equal(list(st, &all, NULL, ids), 1);
        assert_string_equal(ids[0], "aud-4");
}

int store_conformance_audit(const struct store_backend *b)
{
        ops = b->ops;
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_insert_list_roundtrip, store_conformance_open, store_conformance_close),
                cmocka_unit_test_setup_teardown(test_detail, store_conformance_open, store_conformance_close),
                cmocka_unit_test_setup_teardown(test_filters, store_conformance_open, store_conformance_close),
                cmocka_unit_test_setup_teardown(test_pages, store_conformance_open, store_conformance_close),
                cmocka_unit_test_setup_teardown(test_purge, store_conformance_open, store_conformance_close),
        };
        return cmocka_run_group_tests_name("audit", tests, NULL, NULL);
}
