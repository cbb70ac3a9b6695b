/* attach_session: short-lived, sandbox-scoped tokens for the data plane.
 *
 * A control-plane caller opens a session for one sandbox and gets a token
 * ("spat_" + 40 hex digits) that authorises that sandbox's data-plane routes only, until it
 * expires (renewable) or is revoked. Only the token's SHA-256 is stored; the token is shown
 * once. Functions fill a struct space_error and return -1 on failure. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "spaced/space_error.h"
#include "state_store/state_store.h"

struct spaced_context;

#define ATTACH_TOKEN_PREFIX "spat_"
#define ATTACH_TOKEN_SIZE 48 /* prefix + 40 hex + NUL, rounded */

/* ttl_s <= 0: the server default. */
int attach_session_create(struct spaced_context *ctx, const char *sandbox_id, const char *key_id, int64_t ttl_s,
                          struct attach_session *ret, char ret_token[ATTACH_TOKEN_SIZE], struct space_error *err);
/* Moves the expiry to now + ttl_s; a revoked or expired session cannot be renewed. */
int attach_session_renew(struct spaced_context *ctx, const char *sandbox_id, const char *session_id, int64_t ttl_s,
                         struct attach_session *ret, struct space_error *err);
int attach_session_revoke(struct spaced_context *ctx, const char *sandbox_id, const char *session_id, struct space_error *err);
/* Checks an attach token for sandbox_id: unauthorized when unknown, expired or revoked,
 * forbidden when it belongs to another sandbox. Fills ret_session_id (32 bytes). */
int attach_session_check(struct spaced_context *ctx, const char *token, const char *sandbox_id, char *ret_session_id,
                         struct space_error *err);
/* As attach_session_check, filling the whole session row (its project too). */
int attach_session_authenticate(struct spaced_context *ctx, const char *token, const char *sandbox_id, struct attach_session *ret,
                                struct space_error *err);
