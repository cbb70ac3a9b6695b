/* Conformance tests of a state_store backend (store_conformance.h), figures for health and
 * metrics: the write probe, sandboxes by state and runtime (destroyed ones left out),
 * unfinished operations by kind and state. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "store_conformance.h"
#include "store_fixture.h"

static const struct state_store_ops *ops; /* the backend under test, set by store_conformance_figures() */

static void put(struct state_store *st, const char *id, enum sandbox_state state, const char *runtime, const char *op_kind,
                enum operation_state op_state)
{
        struct sandbox sb = store_fixture_sandbox(id, state, 1);
        snprintf(sb.runtime, sizeof(sb.runtime), "%s", runtime);
        char op_id[32];
        snprintf(op_id, sizeof(op_id), "op-%s", id);
        struct operation op = store_fixture_operation(op_id, op_kind, id, op_state, 1);
        assert_int_equal(ops->sandbox_insert(st, &sb, &op), 0);
        sandbox_release(&sb);
}

static int64_t count_of(const struct store_tally *t, size_t n, const char *a, const char *b)
{
        for (size_t i = 0; i < n; i++)
                if (strcmp(t[i].a, a) == 0 && strcmp(t[i].b, b) == 0)
                        return t[i].n;
        return 0;
}

static void test_tallies(void **state)
{
        struct state_store *st = *state;
        struct store_tally *t = NULL;
        size_t n = 0;
        assert_int_equal(ops->sandbox_tally(st, &t, &n), 0);
        assert_int_equal(n, 0);
        free(t);
        put(st, "sb-1", SANDBOX_RUNNING, "namespaces", "sandbox.create", OPERATION_SUCCEEDED);
        put(st, "sb-2", SANDBOX_RUNNING, "namespaces", "sandbox.create", OPERATION_RUNNING);
        put(st, "sb-3", SANDBOX_RUNNING, "gvisor", "sandbox.create", OPERATION_PENDING);
        put(st, "sb-4", SANDBOX_STOPPED, "namespaces", "sandbox.stop", OPERATION_PENDING);
        put(st, "sb-5", SANDBOX_DESTROYED, "namespaces", "sandbox.destroy", OPERATION_FAILED);

        assert_int_equal(ops->sandbox_tally(st, &t, &n), 0);
        assert_int_equal(n, 3);
        assert_int_equal(count_of(t, n, "running", "namespaces"), 2);
        assert_int_equal(count_of(t, n, "running", "gvisor"), 1);
        assert_int_equal(count_of(t, n, "stopped", "namespaces"), 1);
        assert_int_equal(count_of(t, n, "destroyed", "namespaces"), 0);
        free(t);

        assert_int_equal(ops->operation_tally(st, &t, &n), 0);
        assert_int_equal(n, 3);
        assert_int_equal(count_of(t, n, "sandbox.create", "running"), 1);
        assert_int_equal(count_of(t, n, "sandbox.create", "pending"), 1);
        assert_int_equal(count_of(t, n, "sandbox.stop", "pending"), 1);
        assert_int_equal(count_of(t, n, "sandbox.create", "succeeded"), 0);
        free(t);
}

/* The probe rewrites its one row: again and again, with any time. */
static void test_probe_write(void **state)
{
        struct state_store *st = *state;
        for (int64_t at = 1; at < 4; at++)
                assert_int_equal(ops->probe_write(st, at * 1000), 0);
        assert_int_equal(ops->probe_write(st, 0), 0);
}

int store_conformance_figures(const struct store_backend *b)
{
        ops = b->ops;
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_tallies, store_conformance_open, store_conformance_close),
                cmocka_unit_test_setup_teardown(test_probe_write, store_conformance_open, store_conformance_close),
        };
        return cmocka_run_group_tests_name("figures", tests, NULL, NULL);
}
