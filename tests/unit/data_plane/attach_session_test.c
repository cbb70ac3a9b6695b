/* Unit tests of attach_session: data-plane tokens (src/data_plane/attach_session.c), on a
 * SQLite store in a temporary file. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../spaced/store_fixture.h"
#include "api/api_auth.h"
#include "auth/secret_hash.h"
#include "data_plane/attach_session.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

#define SB "sb-0123456789abcdef"
#define OTHER_SB "sb-fedcba9876543210"

static int setup(void **state)
{
        struct spaced_context *ctx = calloc(1, sizeof(*ctx));
        char path[PATH_MAX + 16];
        if (!ctx)
                return -1;
        store_fixture_tmpdir(ctx->cfg.state_dir, sizeof(ctx->cfg.state_dir));
        snprintf(path, sizeof(path), "%s/state.db", ctx->cfg.state_dir);
        ctx->store.ops = &state_store_sqlite;
        if (ctx->store.ops->open(path, &ctx->store.st) < 0)
                return -1;
        ctx->cfg.session_ttl_s = 3600;
        *state = ctx;
        return 0;
}

static int teardown(void **state)
{
        struct spaced_context *ctx = *state;
        ctx->store.ops->close(ctx->store.st);
        store_fixture_rmdir(ctx->cfg.state_dir);
        free(ctx);
        return 0;
}

static void create_by(struct spaced_context *ctx, const char *sandbox_id, const char *key_id, int64_t ttl_s,
                      struct attach_session *s, char token[ATTACH_TOKEN_SIZE])
{
        struct space_error err = { 0 };
        if (attach_session_create(ctx, sandbox_id, key_id, ttl_s, s, token, &err) < 0)
                fail_msg("create: %s", err.message);
}

static void create(struct spaced_context *ctx, const char *sandbox_id, int64_t ttl_s, struct attach_session *s,
                   char token[ATTACH_TOKEN_SIZE])
{
        create_by(ctx, sandbox_id, "key-opener", ttl_s, s, token);
}

static enum space_error_code check(struct spaced_context *ctx, const char *token, const char *sandbox_id, char session_id[32])
{
        struct space_error err = { 0 };
        if (attach_session_check(ctx, token, sandbox_id, session_id, &err) < 0)
                return err.code;
        return SPACE_OK;
}

static void test_create_then_check(void **state)
{
        struct spaced_context *ctx = *state;
        struct attach_session s;
        char token[ATTACH_TOKEN_SIZE], sid[32] = "";
        int64_t before = wallclock_now_ms();
        create(ctx, SB, 0, &s, token);
        assert_int_equal(strlen(token), strlen(ATTACH_TOKEN_PREFIX) + 40);
        assert_memory_equal(token, ATTACH_TOKEN_PREFIX, strlen(ATTACH_TOKEN_PREFIX));
        assert_int_equal(strncmp(s.id, "ses-", 4), 0);
        assert_int_equal(strlen(s.id), 4 + 16);
        assert_string_equal(s.sandbox_id, SB);
        assert_true(s.created_at_ms >= before);
        assert_int_equal(s.expires_at_ms, s.created_at_ms + 3600 * 1000); /* the server default */
        assert_int_equal(s.revoked_at_ms, 0);

        /* Only the token's hash is stored. */
        char hash[65];
        assert_int_equal(secret_hash(token, hash, sizeof(hash)), 0);
        assert_string_equal(s.token_hash, hash);
        struct attach_session stored;
        assert_int_equal(STORE(ctx, session_get, s.id, &stored), 0);
        assert_string_equal(stored.token_hash, hash);
        assert_null(strstr(stored.token_hash, token + strlen(ATTACH_TOKEN_PREFIX)));

        assert_int_equal(check(ctx, token, SB, sid), SPACE_OK);
        assert_string_equal(sid, s.id);

        struct attach_session s2;
        char token2[ATTACH_TOKEN_SIZE];
        create(ctx, SB, 60, &s2, token2);
        assert_int_equal(s2.expires_at_ms, s2.created_at_ms + 60 * 1000);
        assert_string_not_equal(token, token2);
        assert_string_not_equal(s.id, s2.id);
        assert_int_equal(check(ctx, token2, SB, sid), SPACE_OK);
        assert_string_equal(sid, s2.id);

        struct attach_session *all = NULL;
        size_t n = 0;
        assert_int_equal(STORE(ctx, session_list, SB, NULL, &all, &n), 0);
        assert_int_equal(n, 2);
        free(all);
}

static void test_ttl_over_the_limit(void **state)
{
        struct spaced_context *ctx = *state;
        struct attach_session s;
        char token[ATTACH_TOKEN_SIZE];
        struct space_error err = { 0 };
        assert_int_equal(attach_session_create(ctx, SB, "key-opener", 604801, &s, token, &err), -1);
        assert_int_equal(err.code, SPACE_E_INVALID_REQUEST);
        create(ctx, SB, 604800, &s, token);
}

static void test_wrong_sandbox_is_forbidden(void **state)
{
        struct spaced_context *ctx = *state;
        struct attach_session s;
        char token[ATTACH_TOKEN_SIZE], sid[32] = "";
        create(ctx, SB, 0, &s, token);
        assert_int_equal(check(ctx, token, OTHER_SB, sid), SPACE_E_FORBIDDEN);
        assert_string_equal(sid, "");
}

static void test_bad_tokens_are_unauthorized(void **state)
{
        struct spaced_context *ctx = *state;
        struct attach_session s;
        char token[ATTACH_TOKEN_SIZE], sid[32] = "";
        create(ctx, SB, 0, &s, token);
        /* An API key, a token that was never issued, a changed one, an empty one, a long one. */
        char other[ATTACH_TOKEN_SIZE];
        snprintf(other, sizeof(other), "%s", token);
        other[strlen(other) - 1] = other[strlen(other) - 1] == '0' ? '1' : '0';
        char longtok[200];
        memset(longtok, 'a', sizeof(longtok) - 1);
        memcpy(longtok, ATTACH_TOKEN_PREFIX, strlen(ATTACH_TOKEN_PREFIX));
        longtok[sizeof(longtok) - 1] = '\0';
        const char *bad[] = { "space_0123456789012345678901234567890123456789",
                              "spat_0123456789012345678901234567890123456789",
                              other,
                              "",
                              "spat_",
                              longtok };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_int_equal(check(ctx, bad[i], SB, sid), SPACE_E_UNAUTHORIZED);
        assert_string_equal(sid, "");
        /* An unknown token is unauthorized for any sandbox, never forbidden. */
        assert_int_equal(check(ctx, other, OTHER_SB, sid), SPACE_E_UNAUTHORIZED);
}

static void test_revoked_is_unauthorized(void **state)
{
        struct spaced_context *ctx = *state;
        struct attach_session s, kept;
        char token[ATTACH_TOKEN_SIZE], token_kept[ATTACH_TOKEN_SIZE], sid[32];
        struct space_error err = { 0 };
        create(ctx, SB, 0, &s, token);
        create(ctx, SB, 0, &kept, token_kept);
        assert_int_equal(attach_session_revoke(ctx, SB, s.id, &err), 0);
        assert_int_equal(check(ctx, token, SB, sid), SPACE_E_UNAUTHORIZED);
        assert_int_equal(check(ctx, token_kept, SB, sid), SPACE_OK); /* only that session */
        struct attach_session stored;
        assert_int_equal(STORE(ctx, session_get, s.id, &stored), 0);
        assert_true(stored.revoked_at_ms > 0);
        /* Revoking again is fine and keeps the first time. */
        assert_int_equal(attach_session_revoke(ctx, SB, s.id, &err), 0);
        struct attach_session again;
        assert_int_equal(STORE(ctx, session_get, s.id, &again), 0);
        assert_int_equal(again.revoked_at_ms, stored.revoked_at_ms);
        /* A revoked session cannot be renewed. */
        struct attach_session renewed;
        assert_int_equal(attach_session_renew(ctx, SB, s.id, 60, &renewed, &err), -1);
        assert_int_equal(err.code, SPACE_E_INVALID_STATE);
        /* Nor revoked through another sandbox, nor an unknown one. */
        assert_int_equal(attach_session_revoke(ctx, OTHER_SB, kept.id, &err), -1);
        assert_int_equal(err.code, SPACE_E_NOT_FOUND);
        assert_int_equal(check(ctx, token_kept, SB, sid), SPACE_OK);
        assert_int_equal(attach_session_revoke(ctx, SB, "ses-0000000000000000", &err), -1);
        assert_int_equal(err.code, SPACE_E_NOT_FOUND);
}

/* Revoking an API key revokes, in the same transaction, the sessions that key opened and
 * no other; the stored session names its key. */
static void test_key_revocation_revokes_its_sessions(void **state)
{
        struct spaced_context *ctx = *state;
        struct attach_session a1, a2, b;
        char ta1[ATTACH_TOKEN_SIZE], ta2[ATTACH_TOKEN_SIZE], tb[ATTACH_TOKEN_SIZE], sid[32];
        struct api_key ka = { .id = "key-a", .name = "a", .project_id = "default", .role = "developer" },
                       kb = { .id = "key-b", .name = "b", .project_id = "default", .role = "developer" };
        memset(ka.hash, 'a', 64);
        memset(kb.hash, 'b', 64);
        assert_int_equal(STORE(ctx, key_insert, &ka), 0);
        assert_int_equal(STORE(ctx, key_insert, &kb), 0);
        create_by(ctx, SB, "key-a", 0, &a1, ta1);
        create_by(ctx, OTHER_SB, "key-a", 0, &a2, ta2);
        create_by(ctx, SB, "key-b", 0, &b, tb);
        struct attach_session stored;
        assert_int_equal(STORE(ctx, session_get, a1.id, &stored), 0);
        assert_string_equal(stored.key_id, "key-a");

        assert_int_equal(STORE(ctx, key_delete, "key-a", 4242), 0);
        assert_int_equal(check(ctx, ta1, SB, sid), SPACE_E_UNAUTHORIZED);
        assert_int_equal(check(ctx, ta2, OTHER_SB, sid), SPACE_E_UNAUTHORIZED);
        assert_int_equal(check(ctx, tb, SB, sid), SPACE_OK);
        assert_int_equal(STORE(ctx, session_get, a2.id, &stored), 0);
        assert_int_equal(stored.revoked_at_ms, 4242);
        /* An unknown key revokes nothing and says so. */
        assert_int_equal(STORE(ctx, key_delete, "key-never", 5000), -ENOENT);
        assert_int_equal(check(ctx, tb, SB, sid), SPACE_OK);
}

/* Moves a session's expiry into the past, as if its ttl had run out. */
static void expire(struct spaced_context *ctx, const char *session_id)
{
        struct attach_session s;
        assert_int_equal(STORE(ctx, session_get, session_id, &s), 0);
        s.expires_at_ms = wallclock_now_ms() - 1000;
        assert_int_equal(STORE(ctx, session_update, &s), 0);
}

static void test_expired_is_unauthorized(void **state)
{
        struct spaced_context *ctx = *state;
        struct attach_session s;
        char token[ATTACH_TOKEN_SIZE], sid[32];
        struct space_error err = { 0 };
        create(ctx, SB, 1, &s, token);
        assert_int_equal(check(ctx, token, SB, sid), SPACE_OK);
        expire(ctx, s.id);
        assert_int_equal(check(ctx, token, SB, sid), SPACE_E_UNAUTHORIZED);
        /* Expired comes before the sandbox check: no hint that the token was real. */
        assert_int_equal(check(ctx, token, OTHER_SB, sid), SPACE_E_UNAUTHORIZED);
        struct attach_session renewed;
        assert_int_equal(attach_session_renew(ctx, SB, s.id, 60, &renewed, &err), -1);
        assert_int_equal(err.code, SPACE_E_INVALID_STATE);
}

static void test_renew(void **state)
{
        struct spaced_context *ctx = *state;
        struct attach_session s, renewed, stored;
        char token[ATTACH_TOKEN_SIZE], sid[32];
        struct space_error err = { 0 };
        create(ctx, SB, 5, &s, token);
        int64_t before = wallclock_now_ms();
        assert_int_equal(attach_session_renew(ctx, SB, s.id, 7200, &renewed, &err), 0);
        assert_string_equal(renewed.id, s.id);
        assert_true(renewed.expires_at_ms >= before + 7200 * 1000);
        assert_true(renewed.expires_at_ms <= wallclock_now_ms() + 7200 * 1000);
        assert_int_equal(renewed.created_at_ms, s.created_at_ms);
        assert_int_equal(STORE(ctx, session_get, s.id, &stored), 0);
        assert_int_equal(stored.expires_at_ms, renewed.expires_at_ms);
        assert_int_equal(check(ctx, token, SB, sid), SPACE_OK);

        /* ttl 0: the server default. */
        assert_int_equal(attach_session_renew(ctx, SB, s.id, 0, &renewed, &err), 0);
        assert_true(renewed.expires_at_ms >= before + 3600 * 1000);
        assert_true(renewed.expires_at_ms <= wallclock_now_ms() + 3600 * 1000);

        /* Renewing can bring the expiry forward, too. */
        assert_int_equal(attach_session_renew(ctx, SB, s.id, 1, &renewed, &err), 0);
        assert_true(renewed.expires_at_ms <= wallclock_now_ms() + 1000);

        assert_int_equal(attach_session_renew(ctx, SB, s.id, 604801, &renewed, &err), -1);
        assert_int_equal(err.code, SPACE_E_INVALID_REQUEST);
        assert_int_equal(attach_session_renew(ctx, OTHER_SB, s.id, 60, &renewed, &err), -1);
        assert_int_equal(err.code, SPACE_E_NOT_FOUND);
        assert_int_equal(attach_session_renew(ctx, SB, "ses-0000000000000000", 60, &renewed, &err), -1);
        assert_int_equal(err.code, SPACE_E_NOT_FOUND);
}

static void test_survives_reopening_the_store(void **state)
{
        struct spaced_context *ctx = *state;
        struct attach_session s;
        char token[ATTACH_TOKEN_SIZE], sid[32], path[PATH_MAX + 16];
        create(ctx, SB, 0, &s, token);
        ctx->store.ops->close(ctx->store.st);
        snprintf(path, sizeof(path), "%s/state.db", ctx->cfg.state_dir);
        assert_int_equal(ctx->store.ops->open(path, &ctx->store.st), 0);
        assert_int_equal(check(ctx, token, SB, sid), SPACE_OK);
        assert_string_equal(sid, s.id);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
        const struct CMUnitTest tests[] = {
                T(test_create_then_check),
                T(test_ttl_over_the_limit),
                T(test_wrong_sandbox_is_forbidden),
                T(test_bad_tokens_are_unauthorized),
                T(test_revoked_is_unauthorized),
                T(test_key_revocation_revokes_its_sessions),
                T(test_expired_is_unauthorized),
                T(test_renew),
                T(test_survives_reopening_the_store),
        };
#undef T
        return cmocka_run_group_tests(tests, NULL, NULL);
}
