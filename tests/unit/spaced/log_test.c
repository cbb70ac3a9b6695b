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
#include <jansson.h>

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

/* What log lines go to stderr between capture_begin() and capture_end(). */
struct capture {
        char path[32];
        int fd, saved;
};

static void capture_begin(struct capture *c)
{
        snprintf(c->path, sizeof(c->path), "/tmp/space-log-test-XXXXXX");
        c->fd = mkstemp(c->path);
        assert_true(c->fd >= 0);
        fflush(stderr);
        c->saved = dup(2);
        dup2(c->fd, 2);
}

/* The captured text (NUL-terminated) into buf; asserts there was some. */
static void capture_end(struct capture *c, char *buf, size_t size)
{
        fflush(stderr);
        dup2(c->saved, 2);
        close(c->saved);
        ssize_t n = pread(c->fd, buf, size - 1, 0);
        close(c->fd);
        unlink(c->path);
        assert_true(n > 0);
        buf[n] = '\0';
}

static void test_event_is_one_line(void **state)
{
        struct capture c;
        capture_begin(&c);
        log_event(LOG_INFO, "test.event", "raw=%s quoted=\"%s\"",
                  "a\nb\x01"
                  "c",
                  LOG_ESC("x\"y\nz"));
        char text[512] = "";
        capture_end(&c, text, sizeof(text));
        char *nl = strchr(text, '\n');
        assert_non_null(nl);
        assert_string_equal(nl + 1, ""); /* one line */
        assert_non_null(strstr(text, "event=test.event raw=a b c quoted=\"x\\\"y\\x0az\"\n"));
}

static void test_fields_json(void **state)
{
        char out[512];
        assert_int_equal(log_fields_json("a=1 b=-7 c=007 d=x1 e=\"q \\\" \\\\ \\x0a\\xff\" f=", out, sizeof(out)), 0);
        assert_string_equal(out, "\"a\":1,\"b\":-7,\"c\":\"007\",\"d\":\"x1\",\"e\":\"q \\\" \\\\ \\u000a\\u00ff\",\"f\":\"\"");
        assert_int_equal(log_fields_json("", out, sizeof(out)), 0);
        assert_string_equal(out, "");
        /* not key=value text */
        assert_int_equal(log_fields_json("free text", out, sizeof(out)), -1);
        assert_int_equal(log_fields_json("a=\"unterminated", out, sizeof(out)), -1);
        assert_int_equal(log_fields_json("A=1", out, sizeof(out)), -1);
        assert_int_equal(log_fields_json("a=1  b=2", out, sizeof(out)), -1);
}

/* In JSON format every line is one object a JSON parser reads, whatever the values held. */
static void test_json_lines_parse(void **state)
{
        struct capture c;
        capture_begin(&c);
        log_set_format(LOG_FORMAT_JSON);
        log_event(LOG_INFO, "test.json", "n=%d quoted=\"%s\" raw=%s", 42, LOG_ESC("x\"y\nz\\\xc3\xa9\"}"), "a\"b{");
        log_event(LOG_WARN, "test.text", "not key value at all \"");
        log_set_format(LOG_FORMAT_TEXT);
        char text[2048] = "";
        capture_end(&c, text, sizeof(text));
        char *second = strchr(text, '\n');
        assert_non_null(second);
        *second++ = '\0';
        json_error_t jerr;
        json_t *a = json_loads(text, 0, &jerr);
        if (!a)
                fail_msg("not JSON: %s (%s)", text, jerr.text);
        assert_string_equal(json_string_value(json_object_get(a, "event")), "test.json");
        assert_string_equal(json_string_value(json_object_get(a, "level")), "info");
        assert_int_equal(json_integer_value(json_object_get(a, "n")), 42);
        assert_string_equal(json_string_value(json_object_get(a, "quoted")), "x\"y\nz\\\u00c3\u00a9\"}");
        assert_string_equal(json_string_value(json_object_get(a, "raw")), "a\"b{");
        assert_non_null(json_string_value(json_object_get(a, "ts")));
        json_decref(a);
        json_t *b = json_loads(second, JSON_DISABLE_EOF_CHECK, &jerr);
        if (!b)
                fail_msg("not JSON: %s (%s)", second, jerr.text);
        assert_string_equal(json_string_value(json_object_get(b, "text")), "not key value at all \"");
        json_decref(b);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_escape),      cmocka_unit_test(test_escape_forgery),
                cmocka_unit_test(test_escape_cut),  cmocka_unit_test(test_event_is_one_line),
                cmocka_unit_test(test_fields_json), cmocka_unit_test(test_json_lines_parse),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
