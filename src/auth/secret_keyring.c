#include "auth/secret_keyring.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "spaced/host_command.h"

#define KEY_SIZE crypto_aead_xchacha20poly1305_ietf_KEYBYTES
#define NONCE_SIZE crypto_aead_xchacha20poly1305_ietf_NPUBBYTES
#define TAG_SIZE crypto_aead_xchacha20poly1305_ietf_ABYTES
#define B64 sodium_base64_VARIANT_ORIGINAL

struct secret_keyring {
        uint8_t *master; /* sodium_malloc'd: guarded, locked, erased when freed */
};

/* 64 hex digits, then at most whitespace. */
static int parse_hex_key(const char *text, uint8_t *key)
{
        size_t bin_len = 0;
        const char *end = NULL;
        if (sodium_hex2bin(key, KEY_SIZE, text, strlen(text), NULL, &bin_len, &end) < 0 || bin_len != KEY_SIZE)
                return -EINVAL;
        for (; *end; end++)
                if (*end != '\n' && *end != '\r' && *end != ' ' && *end != '\t')
                        return -EINVAL;
        return 0;
}

static int read_key_file(const char *path, uint8_t *key)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        char buf[160];
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        int r = n < 0 ? -errno : 0;
        if (r == 0) {
                buf[n] = '\0';
                r = parse_hex_key(buf, key);
        }
        sodium_memzero(buf, sizeof(buf));
        return r;
}

/* A new key in path: written to path.tmp (0600), synced, renamed in. A crash leaves either
 * no key file (made again at the next start: nothing was sealed with the lost one yet) or
 * the whole one. */
static int create_key_file(const char *path, uint8_t *key)
{
        char tmp[4096], hex[KEY_SIZE * 2 + 2];
        if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
                return -ENAMETOOLONG;
        randombytes_buf(key, KEY_SIZE);
        sodium_bin2hex(hex, sizeof(hex), key, KEY_SIZE);
        size_t len = strlen(hex);
        hex[len++] = '\n';
        (void)unlink(tmp);
        _cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        int r = fd < 0 ? -errno : 0;
        if (r == 0 && (write(fd, hex, len) != (ssize_t)len || fsync(fd) < 0))
                r = -EIO;
        sodium_memzero(hex, sizeof(hex));
        if (r == 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0)
                (void)unlink(tmp);
        return r;
}

static int run_key_command(const char *command, uint8_t *key)
{
        char out[512];
        char *argv[] = { "/bin/sh", "-c", (char *)command, NULL };
        int status = host_command_run(argv, NULL, out, sizeof(out), 30);
        int r = status < 0 ? status : status != 0 ? -ECHILD : parse_hex_key(out, key);
        sodium_memzero(out, sizeof(out));
        return r;
}

int secret_keyring_open(const char *key_file, const char *key_command, const char *default_file, struct secret_keyring **ret,
                        struct space_error *err)
{
        if (sodium_init() < 0)
                return space_error_set(err, SPACE_E_INTERNAL, "libsodium did not initialize");
        struct secret_keyring *k = calloc(1, sizeof(*k));
        if (!k || !(k->master = sodium_malloc(KEY_SIZE))) {
                free(k);
                return space_error_errno(err, -ENOMEM, "secret master key");
        }
        int r;
        if (key_file && key_file[0]) {
                r = read_key_file(key_file, k->master);
                if (r < 0)
                        space_error_errno(err, r, "--secret-key-file %s (64 hex digits)", key_file);
        } else if (key_command && key_command[0]) {
                r = run_key_command(key_command, k->master);
                if (r < 0)
                        space_error_set(err, SPACE_E_INTERNAL,
                                        "--secret-key-command did not print a key (64 hex digits, exit status 0)");
        } else {
                r = read_key_file(default_file, k->master);
                if (r == -ENOENT)
                        r = create_key_file(default_file, k->master);
                if (r < 0)
                        space_error_errno(err, r, "secret master key %s", default_file);
        }
        if (r < 0) {
                secret_keyring_free(k);
                return -1;
        }
        *ret = k;
        return 0;
}

void secret_keyring_free(struct secret_keyring *k)
{
        if (!k)
                return;
        sodium_free(k->master);
        free(k);
}

static int seal(const uint8_t *key, const char *ad, const uint8_t *plain, size_t len, char **ret)
{
        size_t raw_len = NONCE_SIZE + len + TAG_SIZE;
        _cleanup_free_ uint8_t *raw = malloc(raw_len);
        if (!raw)
                return -ENOMEM;
        randombytes_buf(raw, NONCE_SIZE);
        crypto_aead_xchacha20poly1305_ietf_encrypt(raw + NONCE_SIZE, NULL, plain, len, (const uint8_t *)ad, strlen(ad), NULL, raw,
                                                   key);
        size_t text_len = sodium_base64_ENCODED_LEN(raw_len, B64);
        char *text = malloc(text_len);
        if (!text)
                return -ENOMEM;
        sodium_bin2base64(text, text_len, raw, raw_len, B64);
        *ret = text;
        return 0;
}

/* Opens into a sodium_malloc'd buffer of *ret_len bytes + NUL (freed with sodium_free). */
static int unseal(const uint8_t *key, const char *ad, const char *sealed, uint8_t **ret, size_t *ret_len)
{
        size_t text_len = strlen(sealed), raw_len = 0;
        _cleanup_free_ uint8_t *raw = malloc(text_len);
        if (!raw)
                return -ENOMEM;
        if (sodium_base642bin(raw, text_len, sealed, text_len, NULL, &raw_len, NULL, B64) < 0 || raw_len < NONCE_SIZE + TAG_SIZE)
                return -EBADMSG;
        size_t len = raw_len - NONCE_SIZE - TAG_SIZE;
        uint8_t *plain = sodium_malloc(len + 1);
        if (!plain)
                return -ENOMEM;
        unsigned long long out_len = 0;
        if (crypto_aead_xchacha20poly1305_ietf_decrypt(plain, &out_len, NULL, raw + NONCE_SIZE, raw_len - NONCE_SIZE,
                                                       (const uint8_t *)ad, strlen(ad), raw, key) < 0) {
                sodium_free(plain);
                return -EBADMSG;
        }
        plain[out_len] = 0;
        *ret = plain;
        *ret_len = (size_t)out_len;
        return 0;
}

int secret_keyring_new_data_key(const struct secret_keyring *k, const char *project_id, char **ret)
{
        uint8_t dk[KEY_SIZE];
        crypto_aead_xchacha20poly1305_ietf_keygen(dk);
        int r = seal(k->master, project_id, dk, sizeof(dk), ret);
        sodium_memzero(dk, sizeof(dk));
        return r;
}

static int open_data_key(const struct secret_keyring *k, const char *sealed_data_key, const char *project_id, uint8_t **ret)
{
        size_t len = 0;
        int r = unseal(k->master, project_id, sealed_data_key, ret, &len);
        if (r == 0 && len != KEY_SIZE) {
                sodium_free(*ret);
                return -EBADMSG;
        }
        return r;
}

static int value_ad(const char *project_id, const char *name, char *buf, size_t size)
{
        return snprintf(buf, size, "%s/%s", project_id, name) < (int)size ? 0 : -ENAMETOOLONG;
}

int secret_keyring_seal(const struct secret_keyring *k, const char *sealed_data_key, const char *project_id, const char *name,
                        const uint8_t *value, size_t len, char **ret)
{
        char ad[256];
        uint8_t *dk = NULL;
        int r = value_ad(project_id, name, ad, sizeof(ad));
        if (r == 0)
                r = open_data_key(k, sealed_data_key, project_id, &dk);
        if (r < 0)
                return r;
        r = seal(dk, ad, value, len, ret);
        sodium_free(dk);
        return r;
}

int secret_keyring_unseal(const struct secret_keyring *k, const char *sealed_data_key, const char *project_id, const char *name,
                          const char *sealed, char **ret, size_t *ret_len)
{
        char ad[256];
        uint8_t *dk = NULL, *plain = NULL;
        size_t len = 0;
        int r = value_ad(project_id, name, ad, sizeof(ad));
        if (r == 0)
                r = open_data_key(k, sealed_data_key, project_id, &dk);
        if (r < 0)
                return r;
        r = unseal(dk, ad, sealed, &plain, &len);
        sodium_free(dk);
        if (r < 0)
                return r;
        char *out = malloc(len + 1);
        if (out) {
                memcpy(out, plain, len + 1);
                *ret = out;
                *ret_len = len;
        }
        sodium_free(plain);
        return out ? 0 : -ENOMEM;
}
