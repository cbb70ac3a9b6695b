/* Unit tests of api_cursor: a cursor decodes to the row it was made for, only for its own
 * list, and any change to it (a byte, its length, its spelling) is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/evp.h>

#include "api/api_cursor.h"

static void test_round_trip(void **state)
{
        static const struct {
                const char *list, *id;
                int64_t ms;
        } rows[] = {
                { "sandboxes", "sb-0123456789abcdef", 1764633600123 },
                { "templates", "python:3.12", 0 },
                { "operations", "op-ffffffffffffffff", 999999999999999999 },
                { "keys", "k", 1 },
        };
        for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
                char token[512], id[128];
                int64_t ms = -1;
                assert_int_equal(api_cursor_encode(rows[i].list, rows[i].ms, rows[i].id, token, sizeof(token)), 0);
                for (const char *c = token; *c; c++)
                        assert_non_null(strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", *c));
                assert_int_equal(api_cursor_decode(rows[i].list, token, &ms, id, sizeof(id)), 0);
                assert_true(ms == rows[i].ms);
                assert_string_equal(id, rows[i].id);
        }
}

static void test_refuses_what_it_did_not_make(void **state)
{
        char token[512], bad[520], id[128] = "untouched";
        int64_t ms = 7;
        assert_int_equal(api_cursor_encode("sandboxes", 1764633600123, "sb-0123456789abcdef", token, sizeof(token)), 0);
        size_t len = strlen(token);
        /* another list */
        assert_int_equal(api_cursor_decode("snapshots", token, &ms, id, sizeof(id)), -1);
        assert_int_equal(api_cursor_decode("sandboxe", token, &ms, id, sizeof(id)), -1);
        /* every single character changed, in turn */
        for (size_t i = 0; i < len; i++) {
                snprintf(bad, sizeof(bad), "%s", token);
                bad[i] = bad[i] == 'A' ? 'B' : 'A';
                assert_int_equal(api_cursor_decode("sandboxes", bad, &ms, id, sizeof(id)), -1);
        }
        /* shorter, longer, padded, other alphabet, empty, whitespace */
        for (size_t cut = 1; cut < len; cut++) {
                snprintf(bad, sizeof(bad), "%.*s", (int)cut, token);
                assert_int_equal(api_cursor_decode("sandboxes", bad, &ms, id, sizeof(id)), -1);
        }
        snprintf(bad, sizeof(bad), "%sA", token);
        assert_int_equal(api_cursor_decode("sandboxes", bad, &ms, id, sizeof(id)), -1);
        snprintf(bad, sizeof(bad), "%s=", token);
        assert_int_equal(api_cursor_decode("sandboxes", bad, &ms, id, sizeof(id)), -1);
        snprintf(bad, sizeof(bad), " %s", token);
        assert_int_equal(api_cursor_decode("sandboxes", bad, &ms, id, sizeof(id)), -1);
        assert_int_equal(api_cursor_decode("sandboxes", "", &ms, id, sizeof(id)), -1);
        assert_int_equal(api_cursor_decode("sandboxes", "+/+/", &ms, id, sizeof(id)), -1);
        /* a well-formed token over a payload not made here (no valid digest) */
        char forged[512];
        int n = EVP_EncodeBlock((unsigned char *)forged, (const unsigned char *)"AAAAAAAAsandboxes:1:sb-1", 24);
        forged[n] = '\0';
        assert_int_equal(api_cursor_decode("sandboxes", forged, &ms, id, sizeof(id)), -1);
        /* untouched on failure */
        assert_true(ms == 7);
        assert_string_equal(id, "untouched");
        /* an id that does not fit the caller's buffer */
        char small[8];
        assert_int_equal(api_cursor_decode("sandboxes", token, &ms, small, sizeof(small)), -1);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_round_trip),
                cmocka_unit_test(test_refuses_what_it_did_not_make),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
