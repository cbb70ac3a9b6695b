/* secret_hash: the one way a secret (API key, attach token) is kept: its hex SHA-256.
 * Below both the control plane's keys (api_auth) and the data plane's attach sessions. */
#pragma once

#include <stddef.h>

#define SECRET_HASH_SIZE 65 /* 64 hex digits + NUL */

/* Hex SHA-256 of secret into buf (at least SECRET_HASH_SIZE bytes). 0 or -EINVAL. */
int secret_hash(const char *secret, char *buf, size_t size);
