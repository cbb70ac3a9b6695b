/* Ids that are not UTF-8 (a URL's raw bytes reach the store as a path's id): every backend
 * finds no row by them and changes nothing, as for any unknown id. SQLite compares their
 * bytes; PostgreSQL cannot hold them at all, so they match nothing there either. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "state_store/state_store.h"
#include "store_conformance.h"
#include "store_fixture.h"

static const struct state_store_ops *ops;

static void test_raw_bytes_match_nothing(void **state)
{
        struct state_store *st = *state;
        const char *raw = "\xff\xfe\"\nx";
        struct sandbox sb = store_fixture_sandbox("sb-raw", SANDBOX_RUNNING, 1);
        assert_int_equal(ops->sandbox_insert(st, &sb, NULL), 0);
        sandbox_release(&sb);

        struct sandbox got;
        assert_int_equal(ops->sandbox_get(st, raw, &got), -ENOENT);
        assert_int_equal(ops->sandbox_set_head(st, raw, "snap-x"), -ENOENT);
        enum sandbox_state cur;
        assert_int_equal(ops->sandbox_transition(st, raw, ~0u, SANDBOX_STOPPED, "", NULL, &cur), -ENOENT);
        struct snapshot snap;
        assert_int_equal(ops->snapshot_get(st, raw, &snap), -ENOENT);
        struct operation op;
        assert_int_equal(ops->operation_get(st, raw, &op), -ENOENT);
        bool refers = true;
        assert_int_equal(ops->operation_refers(st, raw, &refers), 0);
        assert_false(refers);
        struct snapshot *snaps = NULL;
        size_t n = 9;
        assert_int_equal(ops->snapshot_list(st, raw, NULL, NULL, &snaps, &n), 0);
        assert_int_equal(n, 0);
        free(snaps);
        assert_int_equal(ops->command_delete(st, raw, raw), 0);
        assert_int_equal(ops->template_delete(st, raw), -ENOENT);
        struct api_key key;
        assert_int_equal(ops->key_authenticate(st, raw, &key), -ENOENT);
        /* The row that is there is untouched. */
        assert_int_equal(ops->sandbox_get(st, "sb-raw", &got), 0);
        assert_int_equal(got.state, SANDBOX_RUNNING);
        sandbox_release(&got);
}

int store_conformance_raw_ids(const struct store_backend *b)
{
        ops = b->ops;
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_raw_bytes_match_nothing, store_conformance_open, store_conformance_close),
        };
        return cmocka_run_group_tests_name("raw ids", tests, NULL, NULL);
}
