/* e2b_keys: E2B-form API keys and per-sandbox envd access tokens. */
#include "e2b/e2b_keys.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/api_auth.h"
#include "cleanup.h"
#include "spaced/spaced_context.h"

int e2b_keys_space_form(const char *key, char *buf, size_t size)
{
        int n = strncmp(key, "e2b_", 4) == 0 ? snprintf(buf, size, "space_%s", key + 4) : snprintf(buf, size, "%s", key);
        return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

int e2b_keys_authenticate(struct spaced_context *ctx, const char *key, struct principal *ret, struct space_error *err)
{
        char secret[160], header[176];
        if (!key || !*key)
                return space_error_set(err, SPACE_E_UNAUTHORIZED, "missing X-API-KEY");
        if (e2b_keys_space_form(key, secret, sizeof(secret)) < 0)
                return space_error_set(err, SPACE_E_UNAUTHORIZED, "invalid api key");
        snprintf(header, sizeof(header), "Bearer %s", secret);
        int r = api_auth_check(ctx, header, ret, err);
        explicit_bzero(secret, sizeof(secret));
        explicit_bzero(header, sizeof(header));
        return r;
}

int e2b_keys_load_secret(const char *state_dir, unsigned char ret_secret[E2B_TOKEN_SECRET_SIZE])
{
        char path[PATH_MAX];
        unsigned char secret[E2B_TOKEN_SECRET_SIZE];
        snprintf(path, sizeof(path), "%s/e2b-token.key", state_dir);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd >= 0) {
                ssize_t n = read(fd, secret, sizeof(secret));
                if (n != (ssize_t)sizeof(secret))
                        return n < 0 ? -errno : -EIO;
                memcpy(ret_secret, secret, sizeof(secret));
                explicit_bzero(secret, sizeof(secret));
                return 0;
        }
        if (errno != ENOENT)
                return -errno;
        if (RAND_bytes(secret, sizeof(secret)) != 1)
                return -EIO;
        char tmp[PATH_MAX + 8];
        snprintf(tmp, sizeof(tmp), "%s.tmp", path);
        _cleanup_close_ int out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        bool ok = out >= 0 && write(out, secret, sizeof(secret)) == (ssize_t)sizeof(secret) && fsync(out) == 0 &&
                rename(tmp, path) == 0;
        int r = ok ? 0 : -errno;
        if (ok)
                memcpy(ret_secret, secret, sizeof(secret));
        explicit_bzero(secret, sizeof(secret));
        return r;
}

int e2b_keys_envd_token(const unsigned char secret[E2B_TOKEN_SECRET_SIZE], const char *sandbox_id, char *buf, size_t size)
{
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned len = 0;
        if (!HMAC(EVP_sha256(), secret, E2B_TOKEN_SECRET_SIZE, (const unsigned char *)sandbox_id, strlen(sandbox_id), md, &len))
                return -EIO;
        size_t id_len = strlen(sandbox_id);
        if (id_len + 1 + 2 * len + 1 > size)
                return -ENAMETOOLONG;
        memcpy(buf, sandbox_id, id_len);
        buf[id_len] = '.';
        for (unsigned i = 0; i < len; i++)
                snprintf(buf + id_len + 1 + 2 * i, 3, "%02x", md[i]);
        explicit_bzero(md, sizeof(md));
        return 0;
}

int e2b_keys_envd_token_sandbox(const char *token, char *buf, size_t size)
{
        const char *dot = token ? strchr(token, '.') : NULL;
        if (!dot || dot == token || (size_t)(dot - token) >= size)
                return -EINVAL;
        snprintf(buf, size, "%.*s", (int)(dot - token), token);
        return 0;
}

bool e2b_keys_envd_token_ok(const unsigned char secret[E2B_TOKEN_SECRET_SIZE], const char *sandbox_id, const char *token)
{
        char want[E2B_ENVD_TOKEN_SIZE];
        if (!token || e2b_keys_envd_token(secret, sandbox_id, want, sizeof(want)) < 0)
                return false;
        size_t n = strlen(want);
        bool ok = strlen(token) == n && CRYPTO_memcmp(want, token, n) == 0;
        explicit_bzero(want, sizeof(want));
        return ok;
}

int e2b_keys_traffic_token(const unsigned char secret[E2B_TOKEN_SECRET_SIZE], const char *sandbox_id, char *buf, size_t size)
{
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned len = 0;
        char msg[96];
        int n = snprintf(msg, sizeof(msg), "traffic:%s", sandbox_id);
        if (n < 0 || (size_t)n >= sizeof(msg))
                return -ENAMETOOLONG;
        if (!HMAC(EVP_sha256(), secret, E2B_TOKEN_SECRET_SIZE, (const unsigned char *)msg, (size_t)n, md, &len))
                return -EIO;
        if (2 * len + 1 > size)
                return -ENAMETOOLONG;
        for (unsigned i = 0; i < len; i++)
                snprintf(buf + 2 * i, 3, "%02x", md[i]);
        explicit_bzero(md, sizeof(md));
        return 0;
}

bool e2b_keys_traffic_token_ok(const unsigned char secret[E2B_TOKEN_SECRET_SIZE], const char *sandbox_id, const char *token)
{
        char want[E2B_TRAFFIC_TOKEN_SIZE];
        if (!token || e2b_keys_traffic_token(secret, sandbox_id, want, sizeof(want)) < 0)
                return false;
        size_t n = strlen(want);
        bool ok = strlen(token) == n && CRYPTO_memcmp(want, token, n) == 0;
        explicit_bzero(want, sizeof(want));
        return ok;
}

int e2b_keys_file_signature(const char *path, const char *operation, const char *user, const char *token, const char *expiration,
                            char *buf, size_t size)
{
        char *raw = NULL;
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned len = 0;
        int n = expiration && *expiration ? asprintf(&raw, "%s:%s:%s:%s:%s", path, operation, user, token, expiration)
                                          : asprintf(&raw, "%s:%s:%s:%s", path, operation, user, token);
        if (n < 0)
                return -ENOMEM;
        int ok = EVP_Digest(raw, (size_t)n, md, &len, EVP_sha256(), NULL);
        explicit_bzero(raw, (size_t)n);
        free(raw);
        if (ok != 1 || size < 3 + 4 * ((len + 2) / 3) + 1)
                return -EINVAL;
        memcpy(buf, "v1_", 3);
        int m = EVP_EncodeBlock((unsigned char *)buf + 3, md, (int)len);
        while (m > 0 && buf[3 + m - 1] == '=')
                m--;
        buf[3 + m] = '\0';
        return 0;
}
