/* Unit tests of wallclock: timestamps and their RFC 3339 form, random ids. */
#include <ctype.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "spaced/wallclock.h"

static void test_format_known_instants(void **state)
{
        static const struct {
                int64_t ms;
                const char *text;
        } cases[] = {
                { 0, "1970-01-01T00:00:00.000Z" },
                { 1, "1970-01-01T00:00:00.001Z" },
                { 999, "1970-01-01T00:00:00.999Z" },
                { 1000, "1970-01-01T00:00:01.000Z" },
                { 951782400999, "2000-02-29T00:00:00.999Z" },
                { 1764439200123, "2025-11-29T18:00:00.123Z" },
                { 4102444799999, "2099-12-31T23:59:59.999Z" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char buf[25];
                wallclock_format(cases[i].ms, buf, sizeof(buf));
                assert_string_equal(buf, cases[i].text);
        }
}

static void test_format_small_buffer(void **state)
{
        char buf[12];
        memset(buf, '#', sizeof(buf));
        wallclock_format(1764439200123, buf, 11);
        assert_string_equal(buf, "2025-11-29");
        assert_int_equal(buf[11], '#');
}

static void test_now(void **state)
{
        int64_t before = (int64_t)time(NULL) * 1000;
        int64_t now = wallclock_now_ms();
        int64_t after = (int64_t)time(NULL) * 1000 + 1000;
        assert_true(now >= before && now <= after);
        int64_t m1 = monotonic_now_us(), m2 = monotonic_now_us();
        assert_true(m1 > 0);
        assert_true(m2 >= m1);
}

static void assert_id(const char *id, const char *prefix, size_t hex_digits)
{
        size_t p = strlen(prefix);
        assert_int_equal(strlen(id), p + hex_digits);
        assert_memory_equal(id, prefix, p);
        for (size_t i = p; id[i]; i++)
                if (!isxdigit((unsigned char)id[i]) || isupper((unsigned char)id[i]))
                        fail_msg("id %s has a character that is not lowercase hex", id);
}

static void test_random_id_shape(void **state)
{
        char a[32], b[32], key[80];
        assert_int_equal(random_id("sb-", 8, a, sizeof(a)), 0);
        assert_id(a, "sb-", 16);
        assert_int_equal(random_id("sb-", 8, b, sizeof(b)), 0);
        assert_id(b, "sb-", 16);
        assert_string_not_equal(a, b);
        assert_int_equal(random_id("space_", 20, key, sizeof(key)), 0);
        assert_id(key, "space_", 40);
        assert_int_equal(random_id("", 32, key, sizeof(key)), 0);
        assert_id(key, "", 64);
        assert_int_equal(random_id("op-", 0, a, sizeof(a)), 0);
        assert_string_equal(a, "op-");
}

static void test_random_id_limits(void **state)
{
        char buf[80];
        memset(buf, '#', sizeof(buf));
        assert_int_equal(random_id("x", 33, buf, sizeof(buf)), -EINVAL);
        assert_int_equal(buf[0], '#'); /* untouched on failure */

        /* A short buffer gets whole hex pairs only, terminated, and nothing past it. */
        memset(buf, '#', sizeof(buf));
        assert_int_equal(random_id("sb-", 8, buf, 8), 0);
        assert_int_equal(strlen(buf), 7);
        assert_id(buf, "sb-", 4);
        assert_int_equal(buf[8], '#');

        memset(buf, '#', sizeof(buf));
        assert_int_equal(random_id("long-prefix-", 8, buf, 5), 0);
        assert_string_equal(buf, "long");
        assert_int_equal(buf[5], '#');
}

static void test_random_ids_do_not_repeat(void **state)
{
        enum { N = 2000 };
        static char ids[N][24];
        for (int i = 0; i < N; i++)
                assert_int_equal(random_id("op-", 8, ids[i], sizeof(ids[i])), 0);
        for (int i = 0; i < N; i++)
                for (int j = i + 1; j < N; j++)
                        if (strcmp(ids[i], ids[j]) == 0)
                                fail_msg("random_id repeated %s", ids[i]);
}

static void test_parse(void **state)
{
        int64_t ms = 0;
        assert_int_equal(wallclock_parse("2025-11-29T18:00:00.123Z", &ms), 0);
        assert_int_equal(ms, 1764439200123);
        assert_int_equal(wallclock_parse("2025-11-29T18:00:00Z", &ms), 0);
        assert_int_equal(ms, 1764439200000);
        assert_int_equal(wallclock_parse("2025-11-29T20:00:00.5+02:00", &ms), 0);
        assert_int_equal(ms, 1764439200500);
        assert_int_equal(wallclock_parse("2025-11-29T17:00:00.123456789-01:00", &ms), 0);
        assert_int_equal(ms, 1764439200123);
        /* round trip with wallclock_format */
        char buf[32];
        wallclock_format(1764439200123, buf, sizeof(buf));
        assert_int_equal(wallclock_parse(buf, &ms), 0);
        assert_int_equal(ms, 1764439200123);
        static const char *const bad[] = { "",
                                           "yesterday",
                                           "2025-11-29",
                                           "2025-11-29T18:00:00",
                                           "2025-11-29 18:00:00Z",
                                           "2025-02-30T00:00:00Z",
                                           "2025-13-01T00:00:00Z",
                                           "2025-11-29T24:00:00Z",
                                           "2025-11-29T18:00:00.Z",
                                           "2025-11-29T18:00:00Zjunk",
                                           "1969-12-31T23:59:59Z",
                                           "2025-11-29T18:00:00+2:00",
                                           "+2025-11-29T18:00:00Z",
                                           "1764439200123" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                ms = 42;
                if (wallclock_parse(bad[i], &ms) != -EINVAL)
                        fail_msg("accepted %s", bad[i]);
                assert_int_equal(ms, 42);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_format_known_instants),
                cmocka_unit_test(test_format_small_buffer),
                cmocka_unit_test(test_now),
                cmocka_unit_test(test_random_id_shape),
                cmocka_unit_test(test_random_id_limits),
                cmocka_unit_test(test_random_ids_do_not_repeat),
                cmocka_unit_test(test_parse),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
