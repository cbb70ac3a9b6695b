/* Unit tests of cli_cell (src/cli/cli_cell.c): ages, times, short digests, cutting text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "cli/cli_cell.h"

static void assert_shape(const char *in, enum cli_cell_kind kind, size_t max, const char *want)
{
        char *text = strdup(in);
        assert_non_null(text);
        assert_int_equal(cli_cell_shape(&text, kind, max), 0);
        assert_string_equal(text, want);
        free(text);
}

static void rfc3339(time_t t, char *buf, size_t size)
{
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(buf, size, "%Y-%m-%dT%H:%M:%S.123Z", &tm);
}

static void test_age(void **state)
{
        char buf[64];
        time_t now = time(NULL);
        rfc3339(now - 86400 * 9, buf, sizeof(buf));
        assert_shape(buf, CLI_CELL_AGE, 0, "9d");
        rfc3339(now - 3600 * 5, buf, sizeof(buf));
        assert_shape(buf, CLI_CELL_AGE, 0, "5h");
        rfc3339(now - 60 * 30, buf, sizeof(buf));
        assert_shape(buf, CLI_CELL_AGE, 0, "30m");
        rfc3339(now + 86400 * 29 + 60, buf, sizeof(buf));
        assert_shape(buf, CLI_CELL_AGE, 0, "in 29d");
        assert_shape("-", CLI_CELL_AGE, 0, "-");
        assert_shape("not a time", CLI_CELL_AGE, 0, "not a time");
        assert_shape("2026-12-02", CLI_CELL_AGE, 0, "2026-12-02");
}

static void test_time_and_digest(void **state)
{
        assert_shape("2026-12-02T03:38:23.423Z", CLI_CELL_TIME, 0, "2026-12-02 03:38:23");
        assert_shape("2026-12-02T03:38:23Z", CLI_CELL_TIME, 0, "2026-12-02 03:38:23");
        assert_shape("yesterday", CLI_CELL_TIME, 0, "yesterday");
        assert_shape("sha256:3077636e3e9672d99513cf57ee5e8dbea2cbebb7", CLI_CELL_DIGEST, 0, "3077636e3e96");
        assert_shape("abc", CLI_CELL_DIGEST, 0, "abc");
}

static void test_cut(void **state)
{
        assert_shape("short", CLI_CELL_TEXT, 5, "short");
        assert_shape("longer", CLI_CELL_TEXT, 5, "long\xe2\x80\xa6");
        assert_shape("abc", CLI_CELL_TEXT, 0, "abc");
        /* code points, not bytes: é is two bytes, kept whole */
        assert_shape("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", CLI_CELL_TEXT, 3, "\xc3\xa9\xc3\xa9\xe2\x80\xa6");
        assert_shape("\xc3\xa9\xc3\xa9\xc3\xa9", CLI_CELL_TEXT, 3, "\xc3\xa9\xc3\xa9\xc3\xa9");
        assert_shape("ab", CLI_CELL_TEXT, 1, "\xe2\x80\xa6");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_age),
                cmocka_unit_test(test_time_and_digest),
                cmocka_unit_test(test_cut),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
