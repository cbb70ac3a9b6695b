/* console_session: the web console's sign-in (docs/console.md). An API key is exchanged
 * once for a session token that the browser keeps in an HttpOnly cookie; the key itself is
 * not kept anywhere, only its SHA-256 (the one the keys table holds), so every request on
 * the session authenticates that key again: a revoked or expired key ends its sessions at
 * once. Each session has a CSRF token the console's page sends back in a header.
 *
 * Sessions are held in memory: a restart of spaced signs everyone out (nothing to leak,
 * nothing half written). Only the tokens' hashes are held. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "auth/principal.h"
#include "spaced/space_error.h"

struct spaced_context;
struct console_sessions;

#define CONSOLE_TOKEN_PREFIX "spcs_"
#define CONSOLE_TOKEN_SIZE 48 /* prefix + 40 hex + NUL, rounded */
#define CONSOLE_CSRF_SIZE 48
#define CONSOLE_SESSIONS_MAX 4096

struct console_session {
        char id[24]; /* "cs-" + 16 hex: what the audit log and the page may name */
        char csrf[CONSOLE_CSRF_SIZE];
        int64_t created_at_ms;
        int64_t expires_at_ms;
};

int console_sessions_new(struct console_sessions **ret);
void console_sessions_free(struct console_sessions *s);

/* Signs in with api_key: unauthorized as the key would be on the API. The session lasts
 * ttl_s seconds and never beyond the key's expiry. Fills *ret_p (the key's caller), *ret and
 * ret_token (the cookie's value, shown once). unavailable when CONSOLE_SESSIONS_MAX live
 * sessions exist. */
int console_session_open(struct spaced_context *ctx, const char *api_key, int64_t ttl_s, struct principal *ret_p,
                         struct console_session *ret, char ret_token[CONSOLE_TOKEN_SIZE], struct space_error *err);
/* The caller a session token stands for (unauthorized when unknown, expired or signed out,
 * or when its key is gone), and the session. */
int console_session_authenticate(struct spaced_context *ctx, const char *token, struct principal *ret_p,
                                 struct console_session *ret, struct space_error *err);
/* Signs out: the token no longer authenticates. not_found when it names no live session. */
int console_session_close(struct spaced_context *ctx, const char *token, struct space_error *err);
