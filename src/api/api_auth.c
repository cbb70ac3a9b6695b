#include "api/api_auth.h"

#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "api/api_request.h"
#include "api/node_forward.h"
#include "auth/node_credential.h"
#include "cleanup.h"
#include "data_plane/attach_session.h"
#include "service/console_session.h"
#include "service/key_service.h"
#include "spaced/log.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

int api_auth_create_key(struct spaced_context *ctx, const char *name, struct api_key *ret_key, char *ret_secret,
                        size_t secret_size, struct space_error *err)
{
        struct key_spec spec = { .name = name, .project_id = PROJECT_DEFAULT, .role = ROLE_ADMIN };
        return key_service_mint(ctx, &spec, ret_key, ret_secret, secret_size, err);
}

int api_auth_bootstrap(struct spaced_context *ctx, struct space_error *err)
{
        int64_t count = 0;
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/admin.key", ctx->cfg.state_dir);
        if (key_service_count(ctx, &count, err) < 0)
                return -1;
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
                int saved = errno;
                struct space_error derr;
                if (key_service_forget(ctx, k.id, &derr) < 0)
                        log_error("auth.admin_key_delete_failed", "key_id=%s error=\"%s\"", k.id, LOG_ESC(derr.message));
                return space_error_errno(err, saved, "write %s", path);
        }
        log_info("auth.admin_key_created", "path=%s key_id=%s", path, k.id);
        return 0;
}

int api_auth_check(struct spaced_context *ctx, const char *header, struct principal *ret, struct space_error *err)
{
        if (!header)
                return space_error_set(err, SPACE_E_UNAUTHORIZED, "missing Authorization: Bearer <api key>");
        if (strncasecmp(header, "Bearer ", 7) != 0)
                return space_error_set(err, SPACE_E_UNAUTHORIZED, "Authorization must be \"Bearer <api key>\"");
        const char *secret = header + 7;
        while (*secret == ' ')
                secret++;
        /* request_id is the caller's to fill; everything else comes from the key */
        return key_service_authenticate(ctx, secret, ret, err);
}

int api_auth_authorize(struct spaced_context *ctx, const struct principal *p, uint32_t permission, enum object_kind kind,
                       const char *object_id, struct space_error *err)
{
        if (!permission) /* a control route the table gives no permission: fail closed */
                return space_error_set(err, SPACE_E_FORBIDDEN, "this route has no permission in the route table");
        if (!principal_may(p, permission)) {
                char need[256];
                permission_format(permission & ~p->permissions, ", ", need, sizeof(need));
                return space_error_set(err, SPACE_E_FORBIDDEN, "this %s key may not do this: it lacks permission %s",
                                       principal_role_name(p->role), need);
        }
        bool write = permission &
                (PERM_SANDBOX_WRITE | PERM_SNAPSHOT_WRITE | PERM_TEMPLATE_WRITE | PERM_OPERATION_WRITE | PERM_KEY_WRITE |
                 PERM_SANDBOX_EXEC);
        return object_id ? object_access_check(ctx, p, kind, object_id, write, err) : 0;
}

/* Constant time: a CSRF token is a secret. */
static bool tokens_equal(const char *a, const char *b)
{
        size_t n = strlen(b);
        if (strlen(a) != n)
                return false;
        unsigned char diff = 0;
        for (size_t i = 0; i < n; i++)
                diff |= (unsigned char)a[i] ^ (unsigned char)b[i];
        return diff == 0;
}

/* A request without Authorization: the console's session cookie, if any (docs/console.md).
 * A request that may change something must also carry the session's CSRF token in
 * X-Space-CSRF, which only the console's own page can read and send. */
static int api_auth_console(struct api_request *req, const char *cookie, struct space_error *err)
{
        if (console_session_authenticate(req->ctx, cookie, &req->principal, &req->console, err) < 0)
                return -1;
        if (strcmp(req->method, "GET") == 0 || strcmp(req->method, "HEAD") == 0)
                return 0;
        const char *csrf = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, API_CONSOLE_CSRF_HEADER);
        if (!csrf || !tokens_equal(csrf, req->console.csrf))
                return space_error_set(err, SPACE_E_FORBIDDEN,
                                       "a request with the console's cookie that changes something needs the session's "
                                       "token in " API_CONSOLE_CSRF_HEADER);
        return 0;
}

int api_auth_request(struct api_request *req, enum api_auth_kind kind, struct space_error *err)
{
        const char *header = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
        const char *cookie;
        const char *hop =
                kind == API_AUTH_NONE ? NULL : MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, NODE_CREDENTIAL_HEADER);
        if (hop) /* passed on by another node, which checked the caller (api/node_forward.h) */
                return node_forward_authenticate(req, hop, err);
        switch (kind) {
        case API_AUTH_NONE:
                return 0;
        case API_AUTH_CONTROL:
                cookie = header ? NULL : MHD_lookup_connection_value(req->conn, MHD_COOKIE_KIND, API_CONSOLE_COOKIE);
                if (cookie ? api_auth_console(req, cookie, err) < 0 : api_auth_check(req->ctx, header, &req->principal, err) < 0)
                        return -1;
                return api_auth_authorize(
                        req->ctx, &req->principal, req->permission, req->object,
                        req->object && req->object_segment < req->nsegments ? req->segments[req->object_segment] : NULL, err);
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
        struct attach_session s;
        if (attach_session_authenticate(req->ctx, token, req->segments[2], &s, err) < 0)
                return -1;
        /* The token's bearer acts in the sandbox's project and nowhere else. */
        snprintf(req->session_id, sizeof(req->session_id), "%s", s.id);
        snprintf(req->principal.project_id, sizeof(req->principal.project_id), "%s", s.project_id);
        return 0;
}
