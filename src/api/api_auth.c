#include "api/api_auth.h"

#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "api/api_request.h"
#include "cleanup.h"
#include "data_plane/attach_session.h"
#include "spaced/log.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

int api_auth_hash(const char *secret, char *buf, size_t size)
{
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned len = 0;
        if (size < 65 || EVP_Digest(secret, strlen(secret), md, &len, EVP_sha256(), NULL) != 1)
                return -EINVAL;
        for (unsigned i = 0; i < len; i++)
                snprintf(buf + 2 * i, 3, "%02x", md[i]);
        return 0;
}

int api_auth_create_key(struct spaced_context *ctx, const char *name, struct api_key *ret_key, char *ret_secret,
                        size_t secret_size, struct space_error *err)
{
        struct api_key k = { 0 };
        int r = random_id("space_", 20, ret_secret, secret_size);
        if (r < 0)
                return space_error_errno(err, r, "random key");
        random_id("key-", 8, k.id, sizeof(k.id));
        snprintf(k.name, sizeof(k.name), "%s", name);
        api_auth_hash(ret_secret, k.hash, sizeof(k.hash));
        k.created_at_ms = wallclock_now_ms();
        r = STORE(ctx, key_insert, &k);
        if (r < 0) {
                explicit_bzero(ret_secret, secret_size);
                return space_error_errno(err, r, "store key");
        }
        *ret_key = k;
        return 0;
}

int api_auth_bootstrap(struct spaced_context *ctx, struct space_error *err)
{
        int64_t count = 0;
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/admin.key", ctx->cfg.state_dir);
        int r = STORE(ctx, key_count, &count);
        if (r < 0)
                return space_error_errno(err, r, "count keys");
        if (count > 0 && access(path, F_OK) == 0)
                return 0;
        if (count > 0) {
                log_warn("auth.admin_key_missing", "path=%s keys=%lld hint=\"create a key with an existing one\"", path,
                         (long long)count);
                return 0;
        }
        struct api_key k;
        char secret[64];
        if (api_auth_create_key(ctx, "admin", &k, secret, sizeof(secret), err) < 0)
                return -1;
        char tmp[PATH_MAX + 8];
        snprintf(tmp, sizeof(tmp), "%s.tmp", path);
        _cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        size_t len = strlen(secret);
        bool ok = fd >= 0 && write(fd, secret, len) == (ssize_t)len && write(fd, "\n", 1) == 1 && fsync(fd) == 0 &&
                  rename(tmp, path) == 0;
        explicit_bzero(secret, sizeof(secret));
        if (!ok) {
                int saved = errno, d = STORE(ctx, key_delete, k.id);
                if (d < 0)
                        log_error("auth.admin_key_delete_failed", "key_id=%s error=\"%s\"", k.id, strerror(-d));
                return space_error_errno(err, saved, "write %s", path);
        }
        log_info("auth.admin_key_created", "path=%s key_id=%s", path, k.id);
        return 0;
}

int api_auth_check(struct spaced_context *ctx, const char *header, char *ret_key_id, size_t id_size, struct space_error *err)
{
        if (!header)
                return space_error_set(err, SPACE_E_UNAUTHORIZED, "missing Authorization: Bearer <api key>");
        if (strncasecmp(header, "Bearer ", 7) != 0)
                return space_error_set(err, SPACE_E_UNAUTHORIZED, "Authorization must be \"Bearer <api key>\"");
        const char *secret = header + 7;
        while (*secret == ' ')
                secret++;
        char hash[65];
        struct api_key k;
        if (!*secret || strlen(secret) > 128 || api_auth_hash(secret, hash, sizeof(hash)) < 0)
                return space_error_set(err, SPACE_E_UNAUTHORIZED, "invalid api key");
        int r = STORE(ctx, key_authenticate, hash, &k);
        if (r == -ENOENT)
                return space_error_set(err, SPACE_E_UNAUTHORIZED, "invalid api key");
        if (r < 0)
                return space_error_errno(err, r, "look up key");
        snprintf(ret_key_id, id_size, "%s", k.id);
        return 0;
}

int api_auth_request(struct api_request *req, enum api_auth_kind kind, struct space_error *err)
{
        const char *header = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
        switch (kind) {
        case API_AUTH_NONE:
                return 0;
        case API_AUTH_CONTROL:
                return api_auth_check(req->ctx, header, req->key_id, sizeof(req->key_id), err);
        case API_AUTH_DATA:
                break;
        }
        if (!header || strncasecmp(header, "Bearer ", 7) != 0)
                return space_error_set(err, SPACE_E_UNAUTHORIZED, "missing Authorization: Bearer <attach token>");
        const char *token = header + 7;
        while (*token == ' ')
                token++;
        if (req->nsegments < 3)
                return space_error_set(err, SPACE_E_FORBIDDEN, "data-plane route without a sandbox");
        return attach_session_check(req->ctx, token, req->segments[2], req->session_id, err);
}
