/* Unit tests of output_encoding: lossy UTF-8 and base64 views of command output. */
#include <openssl/evp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/output_encoding.h"

#define FFFD "\xef\xbf\xbd"

static void assert_utf8(const char *in, size_t in_len, const char *want, size_t want_len)
{
        json_t *s = output_encoding_utf8((const uint8_t *)in, in_len);
        assert_non_null(s);
        if (json_string_length(s) != want_len || memcmp(json_string_value(s), want, want_len) != 0)
                fail_msg("encoding %zu bytes gave %zu bytes, want %zu", in_len, json_string_length(s), want_len);
        json_decref(s);
}

#define UTF8(in, want) assert_utf8(in, sizeof(in) - 1, want, sizeof(want) - 1)

static void test_valid_text_is_kept(void **state)
{
        UTF8("", "");
        UTF8("hello\n", "hello\n");
        UTF8("\xc3\xa9", "\xc3\xa9");                 /* U+00E9, 2 bytes */
        UTF8("\xe2\x82\xac", "\xe2\x82\xac");         /* U+20AC, 3 bytes */
        UTF8("\xf0\x9d\x84\x9e", "\xf0\x9d\x84\x9e"); /* U+1D11E, 4 bytes */
        UTF8("\xed\x9f\xbf", "\xed\x9f\xbf");         /* U+D7FF, just below the surrogates */
        UTF8("\xee\x80\x80", "\xee\x80\x80");         /* U+E000, just above */
        UTF8("\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf"); /* U+10FFFF, the last code point */
        UTF8("\xef\xbb\xbf"
             "bom",
             "\xef\xbb\xbf"
             "bom");
}

static void test_nul_is_kept(void **state)
{
        UTF8("a\0b", "a\0b");
        UTF8("\0", "\0");
        json_t *s = output_encoding_utf8((const uint8_t *)"\0\0\0", 3);
        assert_int_equal(json_string_length(s), 3);
        /* And it survives serialisation as an escape. */
        char *text = json_dumps(s, JSON_ENCODE_ANY);
        assert_string_equal(text, "\"\\u0000\\u0000\\u0000\"");
        free(text);
        json_decref(s);
}

static void test_invalid_bytes_become_replacement(void **state)
{
        UTF8("\x80", FFFD); /* lone continuation */
        UTF8("\xbf", FFFD);
        UTF8("\xff", FFFD); /* never valid */
        UTF8("\xfe\xff", FFFD FFFD);
        UTF8("a\xffz", "a" FFFD "z");
        UTF8("\xf8\x88\x80\x80\x80", FFFD FFFD FFFD FFFD FFFD); /* old 5-byte form */
        UTF8("\xe2\x82", FFFD FFFD);                            /* truncated at the end */
        UTF8("\xe2\x82"
             "A",
             FFFD FFFD "A"); /* truncated, ASCII after it is kept */
        UTF8("\xc3"
             "(",
             FFFD "(");
        UTF8("\xf0\x9d\x84", FFFD FFFD FFFD);
}

static void test_overlong_and_surrogates_are_rejected(void **state)
{
        UTF8("\xc0\xaf", FFFD FFFD);                                     /* overlong '/' */
        UTF8("\xc1\xbf", FFFD FFFD);                                     /* overlong U+007F */
        UTF8("\xe0\x80\xaf", FFFD FFFD FFFD);                            /* overlong '/', 3 bytes */
        UTF8("\xe0\x9f\xbf", FFFD FFFD FFFD);                            /* overlong U+07FF */
        UTF8("\xf0\x80\x80\xaf", FFFD FFFD FFFD FFFD);                   /* overlong '/', 4 bytes */
        UTF8("\xf0\x8f\xbf\xbf", FFFD FFFD FFFD FFFD);                   /* overlong U+FFFF */
        UTF8("\xc0\x80", FFFD FFFD);                                     /* "modified UTF-8" NUL */
        UTF8("\xed\xa0\x80", FFFD FFFD FFFD);                            /* U+D800 */
        UTF8("\xed\xbf\xbf", FFFD FFFD FFFD);                            /* U+DFFF */
        UTF8("\xed\xa0\xbd\xed\xb2\xa9", FFFD FFFD FFFD FFFD FFFD FFFD); /* CESU-8 pair */
        UTF8("\xf4\x90\x80\x80", FFFD FFFD FFFD FFFD);                   /* U+110000 */
        UTF8("\xf7\xbf\xbf\xbf", FFFD FFFD FFFD FFFD);
}

static uint32_t next_random(uint32_t *s)
{
        *s ^= *s << 13;
        *s ^= *s >> 17;
        *s ^= *s << 5;
        return *s;
}

/* Whatever the bytes, the result is a valid JSON string (jansson checks UTF-8 on creation),
 * at most 3x the input, and every ASCII byte of the input survives in order. */
static void test_random_bytes_always_give_valid_utf8(void **state)
{
        uint32_t seed = 0x2545f491;
        uint8_t in[96];
        for (int round = 0; round < 20000; round++) {
                size_t len = next_random(&seed) % sizeof(in);
                for (size_t i = 0; i < len; i++) {
                        uint32_t r = next_random(&seed);
                        in[i] = (r & 0x300) ? (uint8_t)(0x80 | (r & 0x7f)) : (uint8_t)r;
                }
                json_t *s = output_encoding_utf8(in, len);
                assert_non_null(s);
                assert_true(json_string_length(s) <= 3 * len);
                const char *out = json_string_value(s);
                size_t o = 0, out_len = json_string_length(s);
                for (size_t i = 0; i < len; i++) {
                        if (in[i] >= 0x80)
                                continue;
                        while (o < out_len && (uint8_t)out[o] != in[i])
                                o++;
                        assert_true(o < out_len);
                        o++;
                }
                json_decref(s);
        }
}

static const struct {
        const char *raw, *b64;
} rfc4648[] = {
        { "", "" },
        { "f", "Zg==" },
        { "fo", "Zm8=" },
        { "foo", "Zm9v" },
        { "foob", "Zm9vYg==" },
        { "fooba", "Zm9vYmE=" },
        { "foobar", "Zm9vYmFy" },
};

static void test_base64_known_vectors(void **state)
{
        for (size_t i = 0; i < sizeof(rfc4648) / sizeof(rfc4648[0]); i++) {
                json_t *s = output_encoding_base64((const uint8_t *)rfc4648[i].raw, strlen(rfc4648[i].raw));
                assert_non_null(s);
                assert_string_equal(json_string_value(s), rfc4648[i].b64);
                json_decref(s);
        }
}

static void test_base64_round_trip(void **state)
{
        enum { N = 3000 };
        uint8_t *in = malloc(N), *back = malloc(N + 3);
        assert_non_null(in);
        assert_non_null(back);
        for (size_t i = 0; i < N; i++)
                in[i] = (uint8_t)(i * 7 + (i >> 8));
        for (size_t len = 0; len <= N; len += (len < 300 ? 1 : 677)) {
                json_t *s = output_encoding_base64(in, len);
                assert_non_null(s);
                const char *text = json_string_value(s);
                size_t tlen = json_string_length(s);
                assert_int_equal(tlen, 4 * ((len + 2) / 3));
                assert_null(strchr(text, '\n')); /* one line, whatever the size */
                int n = EVP_DecodeBlock(back, (const unsigned char *)text, (int)tlen);
                assert_true(n >= 0);
                size_t pad = (tlen > 0 && text[tlen - 1] == '=') + (tlen > 1 && text[tlen - 2] == '=');
                assert_int_equal((size_t)n - pad, len);
                assert_memory_equal(back, in, len);
                json_decref(s);
        }
        free(in);
        free(back);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_valid_text_is_kept),
                cmocka_unit_test(test_nul_is_kept),
                cmocka_unit_test(test_invalid_bytes_become_replacement),
                cmocka_unit_test(test_overlong_and_surrogates_are_rejected),
                cmocka_unit_test(test_random_bytes_always_give_valid_utf8),
                cmocka_unit_test(test_base64_known_vectors),
                cmocka_unit_test(test_base64_round_trip),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
