/* Secrets: sealed at create, listed and deleted by name, scoped to the caller's project. */
#include "service/secret_service.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/secret_keyring.h"
#include "cleanup.h"
#include "operations/sandbox_network.h"
#include "service/project_service.h"
#include "spaced/log.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

bool secret_service_name_valid(const char *name)
{
        size_t n = name ? strlen(name) : 0;
        if (n == 0 || n > 63 || name[0] < 'A' || name[0] > 'Z')
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((name[i] >= 'A' && name[i] <= 'Z') || (name[i] >= '0' && name[i] <= '9') || name[i] == '_'))
                        return false;
        return true;
}

/* The project a secret of p lives in: the one asked for (the platform's ?project=), else p's own. */
static int target_project(struct spaced_context *ctx, const struct principal *p, const char *want, const char **ret,
                          struct space_error *err)
{
        const char *scope = NULL;
        if (project_service_scope(ctx, p, want, &scope, err) < 0)
                return -1;
        *ret = scope ? scope : p->project_id;
        return 0;
}

static int store_error(struct space_error *err, int r, const char *what, const char *name)
{
        if (r == -ENOENT)
                return space_error_set(err, SPACE_E_NOT_FOUND, "secret %s not found", name);
        return space_error_errno(err, r, "cannot %s secret %s", what, name);
}

int secret_service_create(struct spaced_context *ctx, const struct principal *p, const char *project, const char *name,
                          const char *value, size_t len, struct secret_record *ret, struct space_error *err)
{
        const char *project_id;
        if (target_project(ctx, p, project, &project_id, err) < 0)
                return -1;
        if (!secret_service_name_valid(name))
                return space_error_set(err, SPACE_E_INVALID_REQUEST,
                                       "name: 1 to 63 of A-Z, 0-9 and _, starting with a letter (the sandbox sees "
                                       "SPACE_SECRET_<NAME>)");
        if (!value || len == 0 || len > SECRET_VALUE_MAX)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "value: 1 to %d bytes", SECRET_VALUE_MAX);
        if (memchr(value, '\0', len) || memchr(value, '\r', len) || memchr(value, '\n', len))
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "value: no NUL, CR or LF (it is sent in a header)");
        if (!ctx->keyring)
                return space_error_set(err, SPACE_E_UNAVAILABLE, "this spaced has no secret store key");
        /* The project's data key: made once, the first stored one wins a race. */
        _cleanup_free_ char *candidate = NULL, *data_key = NULL;
        int r = secret_keyring_new_data_key(ctx->keyring, project_id, &candidate);
        if (r == 0)
                r = STORE(ctx, secret_data_key, project_id, candidate, &data_key);
        if (r < 0)
                return space_error_errno(err, r, "cannot make the data key of project %s", project_id);
        struct secret_record rec = { .created_at_ms = wallclock_now_ms() };
        random_id("sec-", 8, rec.id, sizeof(rec.id));
        snprintf(rec.project_id, sizeof(rec.project_id), "%s", project_id);
        snprintf(rec.name, sizeof(rec.name), "%s", name);
        r = secret_keyring_seal(ctx->keyring, data_key, project_id, name, (const uint8_t *)value, len, &rec.sealed);
        if (r < 0)
                return space_error_errno(err, r, "cannot seal secret %s", name);
        r = STORE(ctx, secret_insert, &rec);
        if (r == -EEXIST) {
                secret_record_release(&rec);
                return space_error_set(err, SPACE_E_ALREADY_EXISTS,
                                       "project %s has a secret named %s (delete it first to replace its value)", project_id,
                                       name);
        }
        if (r < 0) {
                secret_record_release(&rec);
                return store_error(err, r, "store", name);
        }
        log_info("secret.created", "secret=%s name=%s project=%s key_id=%s", rec.id, rec.name, rec.project_id,
                 p->key_id[0] ? p->key_id : "-");
        secret_service_refresh(ctx, project_id, NULL);
        *ret = rec;
        return 0;
}

int secret_service_get(struct spaced_context *ctx, const struct principal *p, const char *project, const char *name,
                       struct secret_record *ret, struct space_error *err)
{
        const char *project_id;
        if (target_project(ctx, p, project, &project_id, err) < 0)
                return -1;
        int r = secret_service_name_valid(name) ? STORE(ctx, secret_get, project_id, name, ret) : -ENOENT;
        return r < 0 ? store_error(err, r, "read", name) : 0;
}

int secret_service_list(struct spaced_context *ctx, const struct principal *p, const char *project, struct secret_record **ret,
                        size_t *ret_n, struct space_error *err)
{
        const char *project_id;
        if (target_project(ctx, p, project, &project_id, err) < 0)
                return -1;
        int r = STORE(ctx, secret_list, project_id, ret, ret_n);
        return r < 0 ? space_error_errno(err, r, "cannot list secrets") : 0;
}

int secret_service_delete(struct spaced_context *ctx, const struct principal *p, const char *project, const char *name,
                          struct space_error *err)
{
        const char *project_id;
        if (target_project(ctx, p, project, &project_id, err) < 0)
                return -1;
        int r = secret_service_name_valid(name) ? STORE(ctx, secret_delete, project_id, name) : -ENOENT;
        if (r < 0)
                return store_error(err, r, "delete", name);
        log_info("secret.deleted", "name=%s project=%s key_id=%s", name, project_id, p->key_id[0] ? p->key_id : "-");
        secret_service_refresh(ctx, project_id, NULL);
        return 0;
}

void secret_service_refresh(struct spaced_context *ctx, const char *project_id, const char *sandbox_id)
{
        struct sandbox *all = NULL;
        size_t n = 0;
        if (STORE(ctx, sandbox_list, -1, project_id, NULL, &all, &n) < 0) {
                log_warn("secret.refresh_failed", "project=%s effect=\"running sandboxes keep the credentials they had\"",
                         project_id);
                return;
        }
        for (size_t i = 0; i < n; i++) {
                struct space_error e = { 0 };
                if (sandbox_id && strcmp(all[i].id, sandbox_id) != 0)
                        continue;
                if (sandbox_network_update(ctx, &all[i], &e) < 0)
                        log_warn("secret.refresh_failed", "sandbox=%s error=\"%s\"", all[i].id, LOG_ESC(e.message));
        }
        sandbox_array_free(all, n);
}
