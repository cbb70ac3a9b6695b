/* Unit tests of request_id: which client ids are kept, and the shape of made ones. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "api/request_id.h"

static void test_valid(void **state)
{
        static const char *const good[] = { "a", "Z", "0", "abc-123", "A.b_c-D", "-", ".", "_", "req.2026-12-01_x" };
        for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
                assert_true(request_id_valid(good[i]));
        char max[REQUEST_ID_MAX + 2];
        memset(max, 'x', REQUEST_ID_MAX);
        max[REQUEST_ID_MAX] = '\0';
        assert_true(request_id_valid(max));
        max[REQUEST_ID_MAX] = 'x';
        max[REQUEST_ID_MAX + 1] = '\0';
        assert_false(request_id_valid(max)); /* 65 characters */
}

static void test_invalid(void **state)
{
        static const char *const bad[] = { "",    "a b", "a\"b",        "a\\b", "a\nb",  "a\rb",     "a\tb", "a=b", "a;b",
                                           "a/b", "a:b", "caf\xc3\xa9", "\x7f", "a\x01", "key_id=x", "{}",   "a,b" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                if (request_id_valid(bad[i]))
                        fail_msg("accepted %s", bad[i]);
        assert_false(request_id_valid(NULL));
}

static bool is_made(const char *s)
{
        if (strlen(s) != 32)
                return false;
        for (const char *p = s; *p; p++)
                if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
                        return false;
        return true;
}

static void test_take(void **state)
{
        char buf[REQUEST_ID_SIZE];
        request_id_take("client.id-1", buf);
        assert_string_equal(buf, "client.id-1");
        request_id_take(NULL, buf);
        assert_true(is_made(buf));
        char other[REQUEST_ID_SIZE];
        request_id_take("has space", other);
        assert_true(is_made(other));
        assert_string_not_equal(buf, other);
        request_id_take("", other);
        assert_true(is_made(other));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_valid),
                cmocka_unit_test(test_invalid),
                cmocka_unit_test(test_take),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
