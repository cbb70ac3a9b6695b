/* Unit tests of e2b_multipart: parts found whatever the pieces the body arrives in. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "e2b/e2b_multipart.h"

struct seen {
        char names[4][64];
        char data[4][256];
        size_t len[4];
        int parts, ended;
        int fail_at_part; /* 1-based; 0 never */
};

static int on_begin(void *cls, const char *headers, size_t len)
{
        struct seen *s = cls;
        if (s->parts == 4)
                return -1;
        e2b_multipart_filename(headers, len, s->names[s->parts], sizeof(s->names[0]));
        s->parts++;
        return s->fail_at_part == s->parts ? -1 : 0;
}

static int on_data(void *cls, const char *data, size_t len)
{
        struct seen *s = cls;
        size_t *n = &s->len[s->parts - 1];
        assert_true(*n + len < sizeof(s->data[0]));
        memcpy(s->data[s->parts - 1] + *n, data, len);
        *n += len;
        return 0;
}

static int on_end(void *cls)
{
        ((struct seen *)cls)->ended++;
        return 0;
}

static const struct e2b_multipart_ops ops = { on_begin, on_data, on_end };

static const char body[] =
        "--XyZ\r\n"
        "Content-Disposition: form-data; name=\"file\"; filename=\"/home/user/a.txt\"\r\n"
        "Content-Type: application/octet-stream\r\n\r\n"
        "first--XyZ inline\r\n-XyZ\r\n--Xy\r\n"
        "--XyZ\r\n"
        "Content-Disposition: form-data; name=\"file\"; filename=\"b.bin\"\r\n\r\n"
        "\r\n\r\n"
        "--XyZ--\r\nepilogue";

/* Feeds body in pieces of step bytes. */
static void parse_in_steps(size_t step, struct seen *s)
{
        struct e2b_multipart *m;
        memset(s, 0, sizeof(*s));
        assert_int_equal(e2b_multipart_new("multipart/form-data; boundary=XyZ", &ops, s, &m), 0);
        size_t len = sizeof(body) - 1;
        for (size_t off = 0; off < len; off += step)
                assert_int_equal(e2b_multipart_feed(m, body + off, off + step > len ? len - off : step), 0);
        assert_int_equal(e2b_multipart_finish(m), 0);
        e2b_multipart_free(m);
}

static void test_parts_in_any_pieces(void **state)
{
        for (size_t step = 1; step <= sizeof(body); step++) {
                struct seen s;
                parse_in_steps(step, &s);
                assert_int_equal(s.parts, 2);
                assert_int_equal(s.ended, 2);
                assert_string_equal(s.names[0], "/home/user/a.txt");
                assert_string_equal(s.names[1], "b.bin");
                const char want0[] = "first--XyZ inline\r\n-XyZ\r\n--Xy";
                assert_int_equal(s.len[0], sizeof(want0) - 1);
                assert_memory_equal(s.data[0], want0, sizeof(want0) - 1);
                assert_int_equal(s.len[1], 2);
                assert_memory_equal(s.data[1], "\r\n", 2);
        }
}

static void test_quoted_boundary_and_no_boundary(void **state)
{
        struct e2b_multipart *m;
        struct seen s = { 0 };
        assert_int_equal(e2b_multipart_new("multipart/form-data", &ops, &s, &m), -EINVAL);
        assert_int_equal(e2b_multipart_new("multipart/form-data; boundary=\"a b\"", &ops, &s, &m), 0);
        const char b[] = "preamble\r\n--a b\r\n\r\nxyz\r\n--a b--";
        assert_int_equal(e2b_multipart_feed(m, b, sizeof(b) - 1), 0);
        assert_int_equal(e2b_multipart_finish(m), 0);
        assert_int_equal(s.parts, 1);
        assert_int_equal(s.len[0], 3);
        e2b_multipart_free(m);
}

static void test_truncated_and_malformed(void **state)
{
        struct e2b_multipart *m;
        struct seen s = { 0 };
        assert_int_equal(e2b_multipart_new("multipart/form-data; boundary=XyZ", &ops, &s, &m), 0);
        assert_int_equal(e2b_multipart_feed(m, body, 100), 0);
        assert_int_equal(e2b_multipart_finish(m), -EBADMSG); /* no closing boundary */
        e2b_multipart_free(m);
        memset(&s, 0, sizeof(s));
        assert_int_equal(e2b_multipart_new("multipart/form-data; boundary=XyZ", &ops, &s, &m), 0);
        assert_int_equal(e2b_multipart_feed(m, "--XyZ!!", 7), -EBADMSG);
        assert_int_equal(e2b_multipart_feed(m, "more", 4), -EBADMSG);
        e2b_multipart_free(m);
}

static void test_callback_stops_it(void **state)
{
        struct e2b_multipart *m;
        struct seen s = { .fail_at_part = 2 };
        assert_int_equal(e2b_multipart_new("multipart/form-data; boundary=XyZ", &ops, &s, &m), 0);
        assert_int_equal(e2b_multipart_feed(m, body, sizeof(body) - 1), -ECANCELED);
        assert_int_equal(s.ended, 1);
        e2b_multipart_free(m);
}

static void test_headers_too_long(void **state)
{
        struct e2b_multipart *m;
        struct seen s = { 0 };
        assert_int_equal(e2b_multipart_new("multipart/form-data; boundary=XyZ", &ops, &s, &m), 0);
        assert_int_equal(e2b_multipart_feed(m, "--XyZ\r\n", 7), 0);
        char *junk = malloc(E2B_MULTIPART_HEADERS_MAX + 2);
        memset(junk, 'h', E2B_MULTIPART_HEADERS_MAX + 2);
        assert_int_equal(e2b_multipart_feed(m, junk, E2B_MULTIPART_HEADERS_MAX + 2), -E2BIG);
        free(junk);
        e2b_multipart_free(m);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parts_in_any_pieces),     cmocka_unit_test(test_quoted_boundary_and_no_boundary),
                cmocka_unit_test(test_truncated_and_malformed), cmocka_unit_test(test_callback_stops_it),
                cmocka_unit_test(test_headers_too_long),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
