/* secret_keyring: envelope encryption of the platform-held secrets (docs/network.md,
 * "Platform-held credentials"). A master key (32 bytes, read from a file or printed by an
 * operator's command, so it can live in a KMS) seals one data key per project; a project's
 * data key seals each of its secret values. Both are XChaCha20-Poly1305 (libsodium) with
 * what the sealed bytes belong to as associated data (the project; the project and the
 * secret's name), so a row copied to another project or name does not open. Sealed forms are
 * text: base64 of nonce || ciphertext. Plaintext is erased (sodium_memzero) after use. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "spaced/space_error.h"

#define SECRET_VALUE_MAX 8192

struct secret_keyring;

/* The master key: from key_file (64 hex digits, a newline allowed), else from the output of
 * key_command (run by /bin/sh -c, the same 64 hex digits), else from default_file, made with
 * a new random key (mode 0600, written beside and renamed in) when it does not exist yet. */
int secret_keyring_open(const char *key_file, const char *key_command, const char *default_file, struct secret_keyring **ret,
                        struct space_error *err);
void secret_keyring_free(struct secret_keyring *k);

/* A new random data key for project_id, sealed under the master key: *ret (malloc'd text). */
int secret_keyring_new_data_key(const struct secret_keyring *k, const char *project_id, char **ret);
/* Seals value under the project's data key (as secret_keyring_new_data_key made it): *ret. */
int secret_keyring_seal(const struct secret_keyring *k, const char *sealed_data_key, const char *project_id, const char *name,
                        const uint8_t *value, size_t len, char **ret);
/* Opens a sealed value: *ret (malloc'd, NUL-terminated, len bytes; the caller erases it,
 * erase_and_free). -EBADMSG when it does not open (another key, project or name). */
int secret_keyring_unseal(const struct secret_keyring *k, const char *sealed_data_key, const char *project_id, const char *name,
                          const char *sealed, char **ret, size_t *ret_len);
