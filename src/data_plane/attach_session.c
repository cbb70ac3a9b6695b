#include "data_plane/attach_session.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "auth/secret_hash.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

#define TTL_MAX_S 604800

static int ttl_resolve(const struct spaced_context *ctx, int64_t ttl_s, int64_t *ret, struct space_error *err)
{
        if (ttl_s <= 0)
                ttl_s = ctx->cfg.session_ttl_s;
        if (ttl_s > TTL_MAX_S)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "ttl_s must be at most %d (7 days)", TTL_MAX_S);
        *ret = ttl_s;
        return 0;
}

int attach_session_create(struct spaced_context *ctx, const char *sandbox_id, const char *key_id, int64_t ttl_s,
                          struct attach_session *ret, char ret_token[ATTACH_TOKEN_SIZE], struct space_error *err)
{
        struct attach_session s = { 0 };
        char token[ATTACH_TOKEN_SIZE];
        if (ttl_resolve(ctx, ttl_s, &ttl_s, err) < 0)
                return -1;
        int r = random_id(ATTACH_TOKEN_PREFIX, 20, token, sizeof(token));
        if (r == 0)
                r = random_id("ses-", 8, s.id, sizeof(s.id));
        if (r < 0)
                return space_error_errno(err, r, "random token");
        snprintf(s.sandbox_id, sizeof(s.sandbox_id), "%s", sandbox_id);
        snprintf(s.key_id, sizeof(s.key_id), "%s", key_id ? key_id : "");
        secret_hash(token, s.token_hash, sizeof(s.token_hash));
        s.created_at_ms = wallclock_now_ms();
        s.expires_at_ms = s.created_at_ms + ttl_s * 1000;
        r = STORE(ctx, session_insert, &s);
        if (r < 0) {
                explicit_bzero(token, sizeof(token));
                return space_error_errno(err, r, "store session");
        }
        memcpy(ret_token, token, ATTACH_TOKEN_SIZE);
        explicit_bzero(token, sizeof(token));
        *ret = s;
        return 0;
}

/* The session of this sandbox with this id. */
static int session_load(struct spaced_context *ctx, const char *sandbox_id, const char *session_id, struct attach_session *ret,
                        struct space_error *err)
{
        int r = STORE(ctx, session_get, session_id, ret);
        if (r == -ENOENT || (r == 0 && strcmp(ret->sandbox_id, sandbox_id) != 0))
                return space_error_set(err, SPACE_E_NOT_FOUND, "sandbox %s has no session %s", sandbox_id, session_id);
        if (r < 0)
                return space_error_errno(err, r, "load session");
        return 0;
}

int attach_session_renew(struct spaced_context *ctx, const char *sandbox_id, const char *session_id, int64_t ttl_s,
                         struct attach_session *ret, struct space_error *err)
{
        struct attach_session s;
        if (ttl_resolve(ctx, ttl_s, &ttl_s, err) < 0 || session_load(ctx, sandbox_id, session_id, &s, err) < 0)
                return -1;
        int64_t now = wallclock_now_ms();
        if (s.revoked_at_ms)
                return space_error_set(err, SPACE_E_INVALID_STATE, "session %s was revoked", session_id);
        if (s.expires_at_ms <= now)
                return space_error_set(err, SPACE_E_INVALID_STATE, "session %s has expired; open a new one", session_id);
        s.expires_at_ms = now + ttl_s * 1000;
        int r = STORE(ctx, session_update, &s);
        if (r < 0)
                return space_error_errno(err, r, "renew session");
        *ret = s;
        return 0;
}

int attach_session_revoke(struct spaced_context *ctx, const char *sandbox_id, const char *session_id, struct space_error *err)
{
        struct attach_session s;
        if (session_load(ctx, sandbox_id, session_id, &s, err) < 0)
                return -1;
        if (s.revoked_at_ms)
                return 0;
        s.revoked_at_ms = wallclock_now_ms();
        int r = STORE(ctx, session_update, &s);
        return r < 0 ? space_error_errno(err, r, "revoke session") : 0;
}

int attach_session_check(struct spaced_context *ctx, const char *token, const char *sandbox_id, char *ret_session_id,
                         struct space_error *err)
{
        struct attach_session s;
        if (attach_session_authenticate(ctx, token, sandbox_id, &s, err) < 0)
                return -1;
        snprintf(ret_session_id, 32, "%s", s.id);
        return 0;
}

int attach_session_authenticate(struct spaced_context *ctx, const char *token, const char *sandbox_id, struct attach_session *ret,
                                struct space_error *err)
{
        char hash[65];
        struct attach_session s;
        size_t plen = strlen(ATTACH_TOKEN_PREFIX);
        if (strncmp(token, ATTACH_TOKEN_PREFIX, plen) != 0 || strlen(token) > 128)
                return space_error_set(err, SPACE_E_UNAUTHORIZED,
                                       "data-plane routes take an attach token (POST /v1/sandboxes/{id}/sessions)");
        if (secret_hash(token, hash, sizeof(hash)) < 0)
                return space_error_set(err, SPACE_E_UNAUTHORIZED, "invalid attach token");
        int r = STORE(ctx, session_find_by_hash, hash, &s);
        if (r == -ENOENT)
                return space_error_set(err, SPACE_E_UNAUTHORIZED, "invalid attach token");
        if (r < 0)
                return space_error_errno(err, r, "look up session");
        if (s.revoked_at_ms)
                return space_error_set(err, SPACE_E_UNAUTHORIZED, "attach token revoked");
        if (s.expires_at_ms <= wallclock_now_ms())
                return space_error_set(err, SPACE_E_UNAUTHORIZED, "attach token expired");
        if (strcmp(s.sandbox_id, sandbox_id) != 0)
                return space_error_set(err, SPACE_E_FORBIDDEN, "this attach token is for another sandbox");
        *ret = s;
        return 0;
}
