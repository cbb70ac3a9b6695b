/* Unit tests of console_session: the web console's sign-ins, on an in-memory SQLite store
 * with real keys (docs/console.md). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "service/console_session.h"
#include "service/key_service.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

struct fixture {
        struct spaced_context ctx;
        struct api_key key;
        char secret[KEY_SECRET_SIZE];
};

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));
        struct space_error err;
        if (!f)
                return -1;
        f->ctx.store.ops = &state_store_sqlite;
        if (f->ctx.store.ops->open(":memory:", &f->ctx.store.st) < 0 || console_sessions_new(&f->ctx.console_sessions) < 0)
                return -1;
        struct key_spec spec = { .name = "dev", .project_id = PROJECT_DEFAULT, .role = ROLE_DEVELOPER };
        if (key_service_mint(&f->ctx, &spec, &f->key, f->secret, sizeof(f->secret), &err) < 0)
                return -1;
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;
        console_sessions_free(f->ctx.console_sessions);
        f->ctx.store.ops->close(f->ctx.store.st);
        free(f);
        return 0;
}

static void test_open_then_authenticate(void **state)
{
        struct fixture *f = *state;
        struct space_error err = { 0 };
        struct principal p, again;
        struct console_session s, s2;
        char token[CONSOLE_TOKEN_SIZE];
        assert_int_equal(console_session_open(&f->ctx, f->secret, 3600, &p, &s, token, &err), 0);
        assert_string_equal(p.key_id, f->key.id);
        assert_int_equal(p.role, ROLE_DEVELOPER);
        assert_int_equal(strlen(token), 45);
        assert_memory_equal(token, CONSOLE_TOKEN_PREFIX, 5);
        assert_int_equal(strspn(token + 5, "0123456789abcdef"), 40);
        assert_int_equal(strlen(s.csrf), 40);
        assert_memory_equal(s.id, "cs-", 3);
        assert_true(s.expires_at_ms > wallclock_now_ms() + 3500 * 1000);
        assert_null(strstr(token, f->secret + 6)); /* the token is not the key */

        assert_int_equal(console_session_authenticate(&f->ctx, token, &again, &s2, &err), 0);
        assert_string_equal(again.key_id, f->key.id);
        assert_int_equal(again.permissions, p.permissions);
        assert_string_equal(s2.csrf, s.csrf);
        assert_string_equal(s2.id, s.id);

        /* a second sign-in is another session, with another token */
        char token2[CONSOLE_TOKEN_SIZE];
        assert_int_equal(console_session_open(&f->ctx, f->secret, 3600, &p, &s2, token2, &err), 0);
        assert_string_not_equal(token, token2);
        assert_string_not_equal(s.csrf, s2.csrf);
}

static void test_refusals(void **state)
{
        struct fixture *f = *state;
        struct space_error err = { 0 };
        struct principal p;
        struct console_session s;
        char token[CONSOLE_TOKEN_SIZE] = "untouched";
        static const char *const bad[] = { "", "space_0000000000000000000000000000000000000000", "x" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                assert_int_equal(console_session_open(&f->ctx, bad[i], 3600, &p, &s, token, &err), -1);
                assert_int_equal(err.code, SPACE_E_UNAUTHORIZED);
                assert_string_equal(token, "untouched");
        }
        static const char *const tokens[] = { "", "spcs_0000000000000000000000000000000000000000", "space_1",
                                              "spcs_00000000000000000000000000000000000000000000000000000000000000000" };
        for (size_t i = 0; i < sizeof(tokens) / sizeof(tokens[0]); i++) {
                assert_int_equal(console_session_authenticate(&f->ctx, tokens[i], &p, &s, &err), -1);
                assert_int_equal(err.code, SPACE_E_UNAUTHORIZED);
        }
        struct spaced_context none = f->ctx;
        none.console_sessions = NULL;
        assert_int_equal(console_session_open(&none, f->secret, 3600, &p, &s, token, &err), -1);
        assert_int_equal(err.code, SPACE_E_UNAVAILABLE);
}

static void test_close_and_revoke(void **state)
{
        struct fixture *f = *state;
        struct space_error err = { 0 };
        struct principal p;
        struct console_session s;
        char a[CONSOLE_TOKEN_SIZE], b[CONSOLE_TOKEN_SIZE];
        assert_int_equal(console_session_open(&f->ctx, f->secret, 3600, &p, &s, a, &err), 0);
        assert_int_equal(console_session_open(&f->ctx, f->secret, 3600, &p, &s, b, &err), 0);
        assert_int_equal(console_session_close(&f->ctx, a, &err), 0);
        assert_int_equal(console_session_authenticate(&f->ctx, a, &p, &s, &err), -1);
        assert_int_equal(err.code, SPACE_E_UNAUTHORIZED);
        assert_int_equal(console_session_close(&f->ctx, a, &err), -1);
        assert_int_equal(err.code, SPACE_E_NOT_FOUND);
        assert_int_equal(console_session_authenticate(&f->ctx, b, &p, &s, &err), 0); /* the other one lives on */
        /* the key goes: its sessions go with it */
        assert_int_equal(key_service_forget(&f->ctx, f->key.id, &err), 0);
        assert_int_equal(console_session_authenticate(&f->ctx, b, &p, &s, &err), -1);
        assert_int_equal(err.code, SPACE_E_UNAUTHORIZED);
}

static void test_expiry(void **state)
{
        struct fixture *f = *state;
        struct space_error err = { 0 };
        struct principal p;
        struct console_session s;
        char token[CONSOLE_TOKEN_SIZE], secret[KEY_SECRET_SIZE];
        struct api_key k;
        /* never beyond the key's expiry */
        int64_t until = wallclock_now_ms() + 60000;
        struct key_spec spec = { .name = "short", .project_id = PROJECT_DEFAULT, .role = ROLE_VIEWER, .expires_at_ms = until };
        assert_int_equal(key_service_mint(&f->ctx, &spec, &k, secret, sizeof(secret), &err), 0);
        assert_int_equal(console_session_open(&f->ctx, secret, 3600, &p, &s, token, &err), 0);
        assert_int_equal(s.expires_at_ms, until);
        /* a session past its end is gone */
        assert_int_equal(console_session_open(&f->ctx, f->secret, 1, &p, &s, token, &err), 0);
        usleep(1100 * 1000);
        assert_int_equal(console_session_authenticate(&f->ctx, token, &p, &s, &err), -1);
        assert_int_equal(err.code, SPACE_E_UNAUTHORIZED);
}

static void test_full(void **state)
{
        struct fixture *f = *state;
        struct space_error err = { 0 };
        struct principal p;
        struct console_session s;
        char token[CONSOLE_TOKEN_SIZE], first[CONSOLE_TOKEN_SIZE];
        for (int i = 0; i < CONSOLE_SESSIONS_MAX; i++) {
                assert_int_equal(console_session_open(&f->ctx, f->secret, 3600, &p, &s, token, &err), 0);
                if (i == 0)
                        memcpy(first, token, sizeof(first));
        }
        assert_int_equal(console_session_open(&f->ctx, f->secret, 3600, &p, &s, token, &err), -1);
        assert_int_equal(err.code, SPACE_E_UNAVAILABLE);
        /* signing one out makes room */
        assert_int_equal(console_session_close(&f->ctx, first, &err), 0);
        assert_int_equal(console_session_open(&f->ctx, f->secret, 3600, &p, &s, token, &err), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_open_then_authenticate, setup, teardown),
                cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
                cmocka_unit_test_setup_teardown(test_close_and_revoke, setup, teardown),
                cmocka_unit_test_setup_teardown(test_expiry, setup, teardown),
                cmocka_unit_test_setup_teardown(test_full, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
