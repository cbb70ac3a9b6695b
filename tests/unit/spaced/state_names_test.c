/* Unit tests of the state names shared by the API and the database (state_names.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "state_store/state_store.h"

static void test_sandbox_states_round_trip(void **state)
{
        static const char *const names[] = { "creating", "running",    "paused",    "stopping", "stopped",
                                             "starting", "destroying", "destroyed", "failed",   "restoring" };
        assert_int_equal(sizeof(names) / sizeof(names[0]), _SANDBOX_STATE_MAX);
        for (unsigned i = 0; i < _SANDBOX_STATE_MAX; i++) {
                enum sandbox_state s = _SANDBOX_STATE_MAX;
                assert_string_equal(sandbox_state_name((enum sandbox_state)i), names[i]);
                assert_int_equal(sandbox_state_from_name(names[i], &s), 0);
                assert_int_equal(s, i);
        }
        enum sandbox_state s = SANDBOX_PAUSED;
        static const char *const bad[] = { "", "Running", "running ", "unknown", "destroy" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_int_equal(sandbox_state_from_name(bad[i], &s), -EINVAL);
        assert_int_equal(sandbox_state_from_name(NULL, &s), -EINVAL);
        assert_int_equal(s, SANDBOX_PAUSED); /* untouched on failure */
        assert_string_equal(sandbox_state_name(_SANDBOX_STATE_MAX), "unknown");
        assert_string_equal(sandbox_state_name((enum sandbox_state) - 1), "unknown");
}

static void test_operation_states_round_trip(void **state)
{
        static const char *const names[] = { "pending", "running", "succeeded", "failed" };
        for (unsigned i = 0; i < 4; i++) {
                enum operation_state s = OPERATION_FAILED + 1;
                assert_string_equal(operation_state_name((enum operation_state)i), names[i]);
                assert_int_equal(operation_state_from_name(names[i], &s), 0);
                assert_int_equal(s, i);
        }
        enum operation_state s = OPERATION_RUNNING;
        assert_int_equal(operation_state_from_name("done", &s), -EINVAL);
        assert_int_equal(operation_state_from_name(NULL, &s), -EINVAL);
        assert_int_equal(s, OPERATION_RUNNING);
        assert_string_equal(operation_state_name((enum operation_state)4), "unknown");
}

static void test_release_accepts_empty_records(void **state)
{
        sandbox_release(NULL);
        template_record_release(NULL);
        sandbox_array_free(NULL, 0);
        struct sandbox sb = { .env = json_object() };
        sandbox_release(&sb);
        assert_null(sb.env);
        sandbox_release(&sb); /* twice is fine */
        struct template_record t = { 0 };
        template_record_release(&t);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_sandbox_states_round_trip),
                cmocka_unit_test(test_operation_states_round_trip),
                cmocka_unit_test(test_release_accepts_empty_records),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
