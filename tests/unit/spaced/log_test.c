/* Unit tests of log: values are escaped so that none can end its quotes or its line, and
 * an event is always one line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "spaced/log.h"

static void test_escape(void **state)
{
        char buf[128];
        assert_string_equal(log_escape("plain /v1/x", buf, sizeof(buf)), "plain /v1/x");
        assert_string_equal(log_escape("a\"b", buf, sizeof(buf)), "a\\\"b");
        assert_string_equal(log_escape("a\\b", buf, sizeof(buf)), "a\\\\b");
        assert_string_equal(log_escape("a\nb\rc\td", buf, sizeof(buf)), "a\\x0ab\\x0dc\\x09d");
        assert_string_equal(log_escape("\x01\x1f\x7f", buf, sizeof(buf)), "\\x01\\x1f\\x7f");
        assert_string_equal(log_escape("caf\xc3\xa9", buf, sizeof(buf)), "caf\\xc3\\xa9");
        assert_string_equal(log_escape(NULL, buf, sizeof(buf)), "");
        assert_string_equal(log_escape("", buf, sizeof(buf)), "");
}

static void test_escape_forgery(void **state)
{
        /* A path that tries to close its value and add pairs, or a second line. */
        char buf[256];
        log_escape("/v1/x\" status=200 key_id=key-admin\nts=now level=error event=forged", buf, sizeof(buf));
        for (const char *p = buf; *p; p++) {
                assert_true((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f);
                if (*p == '"')
                        assert_int_equal(p[-1], '\\'); /* every quote is escaped */
        }
        assert_null(strchr(buf, '\n'));
}

static void test_escape_cut(void **state)
{
        char buf[16];
        log_escape("0123456789abcdefghij", buf, sizeof(buf));
        assert_string_equal(buf, "0123456789ab...");
        /* what fits exactly is not cut */
        log_escape("0123456789abcde", buf, sizeof(buf));
        assert_string_equal(buf, "0123456789abcde");
        char eight[8];
        assert_string_equal(log_escape("DELETE", eight, sizeof(eight)), "DELETE");
        assert_string_equal(log_escape("OPTIONS", eight, sizeof(eight)), "OPTIONS");
        assert_string_equal(log_escape("PROPFIND", eight, sizeof(eight)), "PROP...");
        /* An escape is never cut in half. */
        log_escape("0123456789\n\n\n", buf, sizeof(buf));
        assert_string_equal(buf, "0123456789...");
        char tiny[4] = "###";
        log_escape("abc", tiny, sizeof(tiny));
        assert_string_equal(tiny, "");
}

static void test_event_is_one_line(void **state)
{
        char path[] = "/tmp/space-log-test-XXXXXX";
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        fflush(stderr);
        int saved = dup(2);
        dup2(fd, 2);
        log_event(LOG_INFO, "test.event", "raw=%s quoted=\"%s\"",
                  "a\nb\x01"
                  "c",
                  LOG_ESC("x\"y\nz"));
        fflush(stderr);
        dup2(saved, 2);
        close(saved);
        char text[512] = "";
        ssize_t n = pread(fd, text, sizeof(text) - 1, 0);
        close(fd);
        unlink(path);
        assert_true(n > 0);
        text[n] = '\0';
        char *nl = strchr(text, '\n');
        assert_non_null(nl);
        assert_string_equal(nl + 1, ""); /* one line */
        assert_non_null(strstr(text, "event=test.event raw=a b c quoted=\"x\\\"y\\x0az\"\n"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_escape),
                cmocka_unit_test(test_escape_forgery),
                cmocka_unit_test(test_escape_cut),
                cmocka_unit_test(test_event_is_one_line),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
