/* e2b_keys: the credentials of the E2B front door.
 *
 * API keys: an E2B SDK sends X-API-KEY, and some SDK versions insist that it looks like
 * "e2b_" + 40 hex digits. A space key is "space_" + 40 hex digits, so the E2B form of a
 * space key is the same digits after "e2b_": both name the same stored key (only its
 * SHA-256 is kept). Nothing new is stored.
 *
 * envd access tokens: each sandbox has one, "<sandbox id>.<64 hex>", the hex being an
 * HMAC-SHA256 of the sandbox id under a secret of this spaced (<state>/e2b-token.key,
 * made on first start, 0600). A token names its sandbox, so requests that carry only the
 * token (older SDKs) can be routed by it. Functions return 0 or -errno / -1 with err. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "auth/principal.h"
#include "spaced/space_error.h"

struct spaced_context;

#define E2B_TOKEN_SECRET_SIZE 32
#define E2B_ENVD_TOKEN_SIZE 128

/* The space form of an E2B key ("e2b_…" -> "space_…"); other values are copied as they are. */
int e2b_keys_space_form(const char *key, char *buf, size_t size);
/* Checks an X-API-KEY value (an ordinary key, with its project and role); fills *ret. -1
 * with unauthorized when it is not a key. */
int e2b_keys_authenticate(struct spaced_context *ctx, const char *key, struct principal *ret, struct space_error *err);

/* Reads (making it the first time) the token secret under state_dir. */
int e2b_keys_load_secret(const char *state_dir, unsigned char ret_secret[E2B_TOKEN_SECRET_SIZE]);
/* The envd access token of a sandbox. */
int e2b_keys_envd_token(const unsigned char secret[E2B_TOKEN_SECRET_SIZE], const char *sandbox_id, char *buf, size_t size);
/* The sandbox a token names (not checked), or -EINVAL when it is not shaped like one. */
int e2b_keys_envd_token_sandbox(const char *token, char *buf, size_t size);
/* A signed /files URL's signature: "v1_" + base64(sha256("<path>:<read|write>:<user>:<token>"
 * [":<expiration>"])) without '=' padding, as SDKs make it. expiration NULL or "": none. */
int e2b_keys_file_signature(const char *path, const char *operation, const char *user, const char *token, const char *expiration,
                            char *buf, size_t size);
/* Whether token is the sandbox's (compared in constant time). */
bool e2b_keys_envd_token_ok(const unsigned char secret[E2B_TOKEN_SECRET_SIZE], const char *sandbox_id, const char *token);
/* The traffic access token of a sandbox with private ports (E2B's allowPublicTraffic false):
 * hex HMAC-SHA256 of "traffic:<id>" under the same secret, so it is not its envd token and
 * needs no storage. buf holds E2B_TRAFFIC_TOKEN_SIZE. */
#define E2B_TRAFFIC_TOKEN_SIZE 65
int e2b_keys_traffic_token(const unsigned char secret[E2B_TOKEN_SECRET_SIZE], const char *sandbox_id, char *buf, size_t size);
/* Whether token is the sandbox's traffic access token (compared in constant time). */
bool e2b_keys_traffic_token_ok(const unsigned char secret[E2B_TOKEN_SECRET_SIZE], const char *sandbox_id, const char *token);
