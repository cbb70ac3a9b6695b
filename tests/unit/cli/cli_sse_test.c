/* Unit tests of cli_sse, the CLI's incremental text/event-stream parser (src/cli/cli_sse.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/cli_sse.h"

#define MAX_EVENTS 16

struct seen_event {
        char id[64];
        char event[64];
        char *data;
        size_t len;
};

struct seen {
        struct seen_event ev[MAX_EVENTS];
        size_t n;
        size_t stop_after; /* return -ECANCELED from this event on (0: never) */
};

static int record(void *userdata, const char *id, const char *event, const char *data, size_t len)
{
        struct seen *s = userdata;
        assert_true(s->n < MAX_EVENTS);
        assert_int_equal(data[len], '\0');
        struct seen_event *e = &s->ev[s->n++];
        snprintf(e->id, sizeof(e->id), "%s", id);
        snprintf(e->event, sizeof(e->event), "%s", event);
        e->data = malloc(len + 1);
        assert_non_null(e->data);
        memcpy(e->data, data, len + 1);
        e->len = len;
        return s->stop_after && s->n >= s->stop_after ? -ECANCELED : 0;
}

static void seen_release(struct seen *s)
{
        for (size_t i = 0; i < s->n; i++)
                free(s->ev[i].data);
        s->n = 0;
}

/* Feeds text in chunks of chunk bytes (0: all at once). */
static int feed(struct seen *s, const char *text, size_t chunk)
{
        struct cli_sse p;
        cli_sse_init(&p, record, s);
        size_t len = strlen(text);
        int r = 0;
        if (chunk == 0)
                chunk = len ? len : 1;
        for (size_t off = 0; off < len && r == 0; off += chunk)
                r = cli_sse_feed(&p, text + off, len - off < chunk ? len - off : chunk);
        cli_sse_release(&p);
        return r;
}

static void assert_event(const struct seen *s, size_t i, const char *id, const char *event, const char *data)
{
        assert_true(i < s->n);
        assert_string_equal(s->ev[i].id, id);
        assert_string_equal(s->ev[i].event, event);
        assert_int_equal(s->ev[i].len, strlen(data));
        assert_memory_equal(s->ev[i].data, data, strlen(data));
}

static const char stream[] =
        ": hello\n"
        "id: 1\n"
        "event: stdout\n"
        "data: {\"data\":\"aGVsbG8K\"}\n"
        "\n"
        ": keepalive\n"
        "\n"
        "id: 2\n"
        "event: stderr\n"
        "data: {\"data\":\"\"}\n"
        "\n"
        "id: 3\n"
        "event: exit\n"
        "data: {\"exit_code\":0}\n"
        "\n";

static void assert_stream_events(const struct seen *s)
{
        assert_int_equal(s->n, 3);
        assert_event(s, 0, "1", "stdout", "{\"data\":\"aGVsbG8K\"}");
        assert_event(s, 1, "2", "stderr", "{\"data\":\"\"}");
        assert_event(s, 2, "3", "exit", "{\"exit_code\":0}");
}

static void test_whole_and_byte_by_byte_agree(void **state)
{
        for (size_t chunk = 0; chunk <= sizeof(stream); chunk++) {
                struct seen s = { 0 };
                assert_int_equal(feed(&s, stream, chunk), 0);
                assert_stream_events(&s);
                seen_release(&s);
        }
}

static void test_incomplete_event_waits_for_blank_line(void **state)
{
        struct seen s = { 0 };
        struct cli_sse p;
        cli_sse_init(&p, record, &s);
        const char *part = "id: 7\nevent: stdout\ndata: abc";
        assert_int_equal(cli_sse_feed(&p, part, strlen(part)), 0);
        assert_int_equal(s.n, 0);
        assert_int_equal(cli_sse_feed(&p, "def\n", 4), 0);
        assert_int_equal(s.n, 0);
        assert_int_equal(cli_sse_feed(&p, "\n", 1), 0);
        assert_int_equal(s.n, 1);
        assert_event(&s, 0, "7", "stdout", "abcdef");
        cli_sse_release(&p);
        seen_release(&s);
}

static void test_multi_line_data_joined_with_newline(void **state)
{
        struct seen s = { 0 };
        assert_int_equal(feed(&s, "data: one\ndata:two\ndata\ndata:  four\n\n", 0), 0);
        assert_int_equal(s.n, 1);
        /* One space after the colon is dropped, only one; "data" alone is an empty line. */
        assert_event(&s, 0, "", "message", "one\ntwo\n\n four");
        seen_release(&s);
}

static void test_empty_data_line_is_an_event(void **state)
{
        struct seen s = { 0 };
        assert_int_equal(feed(&s, "data:\n\n", 0), 0);
        assert_int_equal(s.n, 1);
        assert_event(&s, 0, "", "message", "");
        seen_release(&s);
}

static void test_comments_and_unknown_fields_ignored(void **state)
{
        struct seen s = { 0 };
        assert_int_equal(feed(&s, ":\n: keepalive\n:data: no\nretry: 10\nfoo: bar\ndata: yes\n: more\n\n", 0), 0);
        assert_int_equal(s.n, 1);
        assert_event(&s, 0, "", "message", "yes");
        seen_release(&s);
}

/* Comments are counted (a keepalive tells `space logs` the stream is idle), also when split. */
static void test_comments_counted(void **state)
{
        struct seen s = { 0 };
        struct cli_sse p;
        cli_sse_init(&p, record, &s);
        assert_int_equal(cli_sse_feed(&p, "data: a\n\n", 9), 0);
        assert_int_equal(p.comments, 0);
        assert_int_equal(cli_sse_feed(&p, ": keep", 6), 0);
        assert_int_equal(p.comments, 0);
        assert_int_equal(cli_sse_feed(&p, "alive\n\n", 7), 0);
        assert_int_equal(p.comments, 1);
        assert_int_equal(s.n, 1);
        cli_sse_release(&p);
        seen_release(&s);
}

static void test_blank_lines_alone_dispatch_nothing(void **state)
{
        struct seen s = { 0 };
        assert_int_equal(feed(&s, "\n\n\r\n: keepalive\n\n\n", 1), 0);
        assert_int_equal(s.n, 0);
        seen_release(&s);
}

static void test_event_without_data_is_not_dispatched(void **state)
{
        /* An event type with no data line is discarded, and does not leak into the next event. */
        struct seen s = { 0 };
        assert_int_equal(feed(&s, "event: exit\n\ndata: x\n\n", 0), 0);
        assert_int_equal(s.n, 1);
        assert_event(&s, 0, "", "message", "x");
        seen_release(&s);
}

static void test_crlf_lines(void **state)
{
        static const char crlf[] = "id: 4\r\nevent: pty\r\ndata: a\r\ndata: b\r\n\r\nid: 5\r\ndata: c\r\n\r\n";
        for (size_t chunk = 0; chunk <= 3; chunk++) {
                struct seen s = { 0 };
                assert_int_equal(feed(&s, crlf, chunk), 0);
                assert_int_equal(s.n, 2);
                assert_event(&s, 0, "4", "pty", "a\nb");
                assert_event(&s, 1, "5", "message", "c");
                seen_release(&s);
        }
}

static void test_id_persists_and_event_resets(void **state)
{
        /* The last event id stays until another id line changes it; the event type is reset
         * to "message" after each event; an empty id line clears the id. */
        struct seen s = { 0 };
        assert_int_equal(feed(&s, "id: 9\nevent: stdout\ndata: a\n\ndata: b\n\nid\ndata: c\n\nid: 10\ndata: d\n\n", 0), 0);
        assert_int_equal(s.n, 4);
        assert_event(&s, 0, "9", "stdout", "a");
        assert_event(&s, 1, "9", "message", "b");
        assert_event(&s, 2, "", "message", "c");
        assert_event(&s, 3, "10", "message", "d");
        seen_release(&s);
}

static void test_long_fields_truncated_not_overflowed(void **state)
{
        char text[512];
        char longname[200];
        memset(longname, 'x', sizeof(longname) - 1);
        longname[sizeof(longname) - 1] = '\0';
        snprintf(text, sizeof(text), "id: %s\nevent: %s\ndata: z\n\n", longname, longname);
        struct seen s = { 0 };
        assert_int_equal(feed(&s, text, 7), 0);
        assert_int_equal(s.n, 1);
        assert_int_equal(strlen(s.ev[0].id), 63);
        assert_int_equal(strlen(s.ev[0].event), 63);
        assert_event(&s, 0, s.ev[0].id, s.ev[0].event, "z");
        seen_release(&s);
}

static void test_large_data_across_chunks(void **state)
{
        size_t big = 300000;
        char *text = malloc(big + 32);
        assert_non_null(text);
        memcpy(text, "data: ", 6);
        for (size_t i = 0; i < big; i++)
                text[6 + i] = (char)('a' + i % 26);
        memcpy(text + 6 + big, "\n\n", 3);
        struct seen s = { 0 };
        assert_int_equal(feed(&s, text, 4093), 0);
        assert_int_equal(s.n, 1);
        assert_int_equal(s.ev[0].len, big);
        assert_memory_equal(s.ev[0].data, text + 6, big);
        seen_release(&s);
        free(text);
}

static void test_negative_callback_return_stops(void **state)
{
        struct seen s = { .stop_after = 2 };
        struct cli_sse p;
        cli_sse_init(&p, record, &s);
        /* Everything in one call: the parser stops at the second event. */
        assert_int_equal(cli_sse_feed(&p, stream, strlen(stream)), -ECANCELED);
        assert_int_equal(s.n, 2);
        cli_sse_release(&p);
        seen_release(&s);

        /* Byte by byte: the error comes from the byte that ends the second event. */
        s = (struct seen){ .stop_after = 1 };
        cli_sse_init(&p, record, &s);
        int r = 0;
        size_t i = 0;
        for (; i < strlen(stream) && r == 0; i++)
                r = cli_sse_feed(&p, stream + i, 1);
        assert_int_equal(r, -ECANCELED);
        assert_int_equal(s.n, 1);
        assert_int_equal(stream[i - 1], '\n');
        assert_int_equal(stream[i - 2], '\n');
        cli_sse_release(&p);
        seen_release(&s);
}

static void test_release_is_idempotent(void **state)
{
        struct cli_sse p;
        cli_sse_init(&p, record, NULL);
        cli_sse_release(&p);
        cli_sse_release(&p);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_whole_and_byte_by_byte_agree),
                cmocka_unit_test(test_incomplete_event_waits_for_blank_line),
                cmocka_unit_test(test_multi_line_data_joined_with_newline),
                cmocka_unit_test(test_comments_counted),
                cmocka_unit_test(test_empty_data_line_is_an_event),
                cmocka_unit_test(test_comments_and_unknown_fields_ignored),
                cmocka_unit_test(test_blank_lines_alone_dispatch_nothing),
                cmocka_unit_test(test_event_without_data_is_not_dispatched),
                cmocka_unit_test(test_crlf_lines),
                cmocka_unit_test(test_id_persists_and_event_resets),
                cmocka_unit_test(test_long_fields_truncated_not_overflowed),
                cmocka_unit_test(test_large_data_across_chunks),
                cmocka_unit_test(test_negative_callback_return_stops),
                cmocka_unit_test(test_release_is_idempotent),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
