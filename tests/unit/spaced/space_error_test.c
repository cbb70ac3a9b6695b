/* Unit tests of space_error: set, errno, wrap and the code names. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "spaced/space_error.h"

static const struct {
        enum space_error_code code;
        const char *name;
} names[] = {
        { SPACE_OK, "ok" },
        { SPACE_E_INVALID_JSON, "invalid_json" },
        { SPACE_E_INVALID_REQUEST, "invalid_request" },
        { SPACE_E_UNAUTHORIZED, "unauthorized" },
        { SPACE_E_FORBIDDEN, "forbidden" },
        { SPACE_E_NOT_FOUND, "not_found" },
        { SPACE_E_METHOD_NOT_ALLOWED, "method_not_allowed" },
        { SPACE_E_INVALID_STATE, "invalid_state" },
        { SPACE_E_TEMPLATE_NOT_READY, "template_not_ready" },
        { SPACE_E_ALREADY_EXISTS, "already_exists" },
        { SPACE_E_PAYLOAD_TOO_LARGE, "payload_too_large" },
        { SPACE_E_UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type" },
        { SPACE_E_UNSUPPORTED, "unsupported" },
        { SPACE_E_UNAVAILABLE, "unavailable" },
        { SPACE_E_TIMEOUT, "timeout" },
        { SPACE_E_PERMISSION_DENIED, "permission_denied" },
        { SPACE_E_CONFLICT, "conflict" },
        { SPACE_E_RANGE_NOT_SATISFIABLE, "range_not_satisfiable" },
        { SPACE_E_INTERNAL, "internal" },
        { SPACE_E_BUILD_FAILED, "build_failed" },
        { SPACE_E_CANCELLED, "cancelled" },
        { SPACE_E_GONE, "gone" },
        { SPACE_E_POLICY_DENIED, "policy_denied" },
        { SPACE_E_BAD_GATEWAY, "bad_gateway" },
};

static void test_set(void **state)
{
        struct space_error err = { 0 };
        assert_int_equal(space_error_set(&err, SPACE_E_NOT_FOUND, "sandbox %s not found", "sb-1"), -1);
        assert_int_equal(err.code, SPACE_E_NOT_FOUND);
        assert_string_equal(err.message, "sandbox sb-1 not found");
        assert_int_equal(space_error_set(NULL, SPACE_E_INTERNAL, "ignored %d", 1), -1);
}

static void test_set_truncates(void **state)
{
        struct space_error err;
        char big[2000];
        memset(big, 'x', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        memset(&err, 0, sizeof(err));
        space_error_set(&err, SPACE_E_INVALID_REQUEST, "%s", big);
        assert_int_equal(strlen(err.message), sizeof(err.message) - 1);
}

static void test_errno(void **state)
{
        struct space_error err = { 0 };
        assert_int_equal(space_error_errno(&err, -ENOENT, "open %s", "/x"), -1);
        assert_int_equal(err.code, SPACE_E_INTERNAL);
        assert_string_equal(err.message, "open /x: No such file or directory");
        /* A positive errno means the same. */
        space_error_errno(&err, EACCES, "write");
        assert_string_equal(err.message, "write: Permission denied");
        assert_int_equal(space_error_errno(NULL, -EIO, "nothing"), -1);
        /* A passed deadline is a timeout (504), either sign. */
        space_error_errno(&err, -ETIMEDOUT, "agent");
        assert_int_equal(err.code, SPACE_E_TIMEOUT);
        space_error_errno(&err, ETIMEDOUT, "agent");
        assert_int_equal(err.code, SPACE_E_TIMEOUT);
        space_error_errno(&err, -EIO, "agent");
        assert_int_equal(err.code, SPACE_E_INTERNAL);
}

static void test_wrap(void **state)
{
        struct space_error err = { 0 };
        space_error_set(&err, SPACE_E_TEMPLATE_NOT_READY, "inner");
        space_error_wrap(&err, "middle %d", 2);
        space_error_wrap(&err, "outer");
        assert_string_equal(err.message, "outer: middle 2: inner");
        assert_int_equal(err.code, SPACE_E_TEMPLATE_NOT_READY); /* the code is kept */
        space_error_wrap(NULL, "ignored");

        /* Wrapping a full message keeps the prefix and stays terminated. */
        char big[600];
        memset(big, 'y', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        space_error_set(&err, SPACE_E_INTERNAL, "%s", big);
        space_error_wrap(&err, "ctx");
        assert_int_equal(strlen(err.message), sizeof(err.message) - 1);
        assert_memory_equal(err.message, "ctx: yyy", 8);
}

static void test_code_names_round_trip(void **state)
{
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
                assert_string_equal(space_error_code_name(names[i].code), names[i].name);
                assert_int_equal(space_error_code_from_name(names[i].name), names[i].code);
        }
        /* The table above covers every code. */
        assert_int_equal(sizeof(names) / sizeof(names[0]), SPACE_E_BAD_GATEWAY + 1);
}

static void test_unknown_codes_and_names(void **state)
{
        assert_string_equal(space_error_code_name((enum space_error_code)999), "internal");
        assert_string_equal(space_error_code_name((enum space_error_code) - 1), "internal");
        assert_int_equal(space_error_code_from_name("no_such_code"), SPACE_E_INTERNAL);
        assert_int_equal(space_error_code_from_name(""), SPACE_E_INTERNAL);
        assert_int_equal(space_error_code_from_name("NOT_FOUND"), SPACE_E_INTERNAL);
        assert_int_equal(space_error_code_from_name("not_found "), SPACE_E_INTERNAL);
        assert_int_equal(space_error_code_from_name(NULL), SPACE_E_INTERNAL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_set),
                cmocka_unit_test(test_set_truncates),
                cmocka_unit_test(test_errno),
                cmocka_unit_test(test_wrap),
                cmocka_unit_test(test_code_names_round_trip),
                cmocka_unit_test(test_unknown_codes_and_names),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
