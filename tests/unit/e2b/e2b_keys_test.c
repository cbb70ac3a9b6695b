/* Unit tests of e2b_keys: the E2B form of keys, the token secret, envd access tokens. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "e2b/e2b_keys.h"

static void test_space_form(void **state)
{
        char buf[64];
        assert_int_equal(e2b_keys_space_form("e2b_0123456789abcdef0123456789abcdef01234567", buf, sizeof(buf)), 0);
        assert_string_equal(buf, "space_0123456789abcdef0123456789abcdef01234567");
        assert_int_equal(e2b_keys_space_form("space_abc", buf, sizeof(buf)), 0);
        assert_string_equal(buf, "space_abc");
        char tiny[8];
        assert_true(e2b_keys_space_form("e2b_0123456789", tiny, sizeof(tiny)) < 0);
}

static void test_secret_is_made_once_and_kept(void **state)
{
        char dir[] = "/tmp/e2b-keys-test-XXXXXX";
        assert_non_null(mkdtemp(dir));
        unsigned char a[E2B_TOKEN_SECRET_SIZE], b[E2B_TOKEN_SECRET_SIZE];
        assert_int_equal(e2b_keys_load_secret(dir, a), 0);
        assert_int_equal(e2b_keys_load_secret(dir, b), 0);
        assert_memory_equal(a, b, sizeof(a));
        char path[256];
        snprintf(path, sizeof(path), "%s/e2b-token.key", dir);
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
        assert_int_equal(st.st_size, E2B_TOKEN_SECRET_SIZE);
        unlink(path);
        rmdir(dir);
}

static void test_tokens_name_their_sandbox_and_check(void **state)
{
        unsigned char secret[E2B_TOKEN_SECRET_SIZE], other[E2B_TOKEN_SECRET_SIZE];
        memset(secret, 7, sizeof(secret));
        memset(other, 8, sizeof(other));
        char tok[E2B_ENVD_TOKEN_SIZE], id[32];
        assert_int_equal(e2b_keys_envd_token(secret, "sb-0123456789abcdef", tok, sizeof(tok)), 0);
        assert_int_equal(strlen(tok), strlen("sb-0123456789abcdef") + 1 + 64);
        assert_int_equal(e2b_keys_envd_token_sandbox(tok, id, sizeof(id)), 0);
        assert_string_equal(id, "sb-0123456789abcdef");
        assert_true(e2b_keys_envd_token_ok(secret, "sb-0123456789abcdef", tok));
        assert_false(e2b_keys_envd_token_ok(other, "sb-0123456789abcdef", tok));
        assert_false(e2b_keys_envd_token_ok(secret, "sb-0123456789abcdee", tok));
        tok[strlen(tok) - 1] ^= 1;
        assert_false(e2b_keys_envd_token_ok(secret, "sb-0123456789abcdef", tok));
        assert_false(e2b_keys_envd_token_ok(secret, "sb-0123456789abcdef", NULL));
        assert_true(e2b_keys_envd_token_sandbox("no-dot-here", id, sizeof(id)) < 0);
        assert_true(e2b_keys_envd_token_sandbox(".abc", id, sizeof(id)) < 0);
}

/* The traffic token: 64 hex digits, of its sandbox and secret only, never the envd token. */
static void test_traffic_tokens(void **state)
{
        (void)state;
        unsigned char secret[E2B_TOKEN_SECRET_SIZE], other[E2B_TOKEN_SECRET_SIZE];
        memset(secret, 7, sizeof(secret));
        memset(other, 8, sizeof(other));
        char tok[E2B_TRAFFIC_TOKEN_SIZE], envd[E2B_ENVD_TOKEN_SIZE];
        assert_int_equal(e2b_keys_traffic_token(secret, "sb-0123456789abcdef", tok, sizeof(tok)), 0);
        assert_int_equal(strlen(tok), 64);
        assert_int_equal(strspn(tok, "0123456789abcdef"), 64);
        assert_true(e2b_keys_traffic_token_ok(secret, "sb-0123456789abcdef", tok));
        assert_false(e2b_keys_traffic_token_ok(other, "sb-0123456789abcdef", tok));
        assert_false(e2b_keys_traffic_token_ok(secret, "sb-0123456789abcdee", tok));
        assert_false(e2b_keys_traffic_token_ok(secret, "sb-0123456789abcdef", NULL));
        assert_false(e2b_keys_traffic_token_ok(secret, "sb-0123456789abcdef", ""));
        assert_int_equal(e2b_keys_envd_token(secret, "sb-0123456789abcdef", envd, sizeof(envd)), 0);
        assert_false(e2b_keys_traffic_token_ok(secret, "sb-0123456789abcdef", envd));
        assert_null(strstr(envd, tok));
        tok[10] ^= 1;
        assert_false(e2b_keys_traffic_token_ok(secret, "sb-0123456789abcdef", tok));
        assert_true(e2b_keys_traffic_token(secret, "sb-0123456789abcdef", tok, 64) < 0); /* no room for the NUL */
}

static void test_file_signature_as_sdks_make_it(void **state)
{
        char sig[64];
        assert_int_equal(e2b_keys_file_signature("/home/user/a.txt", "read", "", "tok", NULL, sig, sizeof(sig)), 0);
        assert_string_equal(sig, "v1_Zkbb3914oLJLvMBzCAHQhm2ydBLxbSx2eQUR/kLdvIY");
        assert_int_equal(e2b_keys_file_signature("/x", "write", "user", "tok", "1700000000", sig, sizeof(sig)), 0);
        assert_string_equal(sig, "v1_+qQx61F+QDfJ8q6uf+CZF8FkAV0HSQiAOGtD0Ux84tE");
        char tiny[16];
        assert_true(e2b_keys_file_signature("/x", "read", "", "tok", NULL, tiny, sizeof(tiny)) < 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_space_form),
                cmocka_unit_test(test_secret_is_made_once_and_kept),
                cmocka_unit_test(test_tokens_name_their_sandbox_and_check),
                cmocka_unit_test(test_traffic_tokens),
                cmocka_unit_test(test_file_signature_as_sdks_make_it),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
