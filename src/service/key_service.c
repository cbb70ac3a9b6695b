#include "service/key_service.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "auth/secret_hash.h"
#include "service/project_service.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

uint32_t key_service_permissions(const struct api_key *k)
{
        enum principal_role role = ROLE_NONE;
        if (principal_role_from_name(k->role, &role) < 0)
                return 0;
        return principal_role_permissions(role) & k->permissions;
}

int key_service_mint(struct spaced_context *ctx, const struct key_spec *spec, struct api_key *ret_key, char *ret_secret,
                     size_t secret_size, struct space_error *err)
{
        struct api_key k = { 0 };
        int r = random_id("space_", 20, ret_secret, secret_size);
        if (r == 0)
                r = random_id("key-", 8, k.id, sizeof(k.id));
        if (r < 0)
                return space_error_errno(err, r, "random key");
        snprintf(k.name, sizeof(k.name), "%s", spec->name);
        snprintf(k.project_id, sizeof(k.project_id), "%s", spec->project_id);
        snprintf(k.role, sizeof(k.role), "%s", principal_role_name(spec->role));
        k.permissions = spec->permissions ? spec->permissions : PERM_ALL;
        k.expires_at_ms = spec->expires_at_ms;
        secret_hash(ret_secret, k.hash, sizeof(k.hash));
        k.created_at_ms = wallclock_now_ms();
        r = STORE(ctx, key_insert, &k);
        if (r < 0) {
                explicit_bzero(ret_secret, secret_size);
                return space_error_errno(err, r, "store key");
        }
        *ret_key = k;
        return 0;
}

int key_service_create(struct spaced_context *ctx, const struct principal *p, const struct key_spec *spec,
                       struct api_key *ret_key, char *ret_secret, size_t secret_size, struct space_error *err)
{
        struct key_spec s = *spec;
        struct project pr;
        char why[256];
        if (!s.project_id || !*s.project_id)
                s.project_id = p->project_id;
        if (project_service_get(ctx, p, s.project_id, &pr, err) < 0)
                return -1;
        if (s.role == ROLE_NONE && !s.permissions && p->permissions != principal_role_permissions(p->role))
                s.permissions = p->permissions; /* a copy of a narrowed caller is narrowed alike */
        if (s.role == ROLE_NONE)
                s.role = p->role;
        uint32_t effective = principal_role_permissions(s.role) & (s.permissions ? s.permissions : PERM_ALL);
        if (s.permissions & ~principal_role_permissions(s.role)) {
                char extra[256];
                permission_format(s.permissions & ~principal_role_permissions(s.role), ", ", extra, sizeof(extra));
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "role %s does not have: %s", principal_role_name(s.role),
                                       extra);
        }
        if (!s.expires_at_ms)
                s.expires_at_ms = p->expires_at_ms;
        if (!principal_may_grant(p, s.project_id, s.role, effective, s.expires_at_ms, why, sizeof(why)))
                return space_error_set(err, SPACE_E_FORBIDDEN, "%s", why);
        s.permissions = s.permissions ? effective : 0;
        return key_service_mint(ctx, &s, ret_key, ret_secret, secret_size, err);
}

int key_service_load(struct spaced_context *ctx, const struct principal *p, const char *id, struct api_key *ret,
                     struct space_error *err)
{
        struct api_key k;
        int r = STORE(ctx, key_get, id, &k);
        if (r == 0 && !principal_sees_project(p, k.project_id))
                r = -ENOENT;
        if (r == -ENOENT)
                return space_error_set(err, SPACE_E_NOT_FOUND, "key %.64s not found", id);
        if (r < 0)
                return space_error_errno(err, r, "load key %s", id);
        *ret = k;
        return 0;
}

int key_service_revoke(struct spaced_context *ctx, const struct principal *p, const char *id, struct space_error *err)
{
        struct api_key k;
        enum principal_role role = ROLE_ADMIN;
        char why[256];
        if (key_service_load(ctx, p, id, &k, err) < 0)
                return -1;
        principal_role_from_name(k.role, &role);
        /* Expiry is no power over the key being revoked: only what it can do counts. */
        if (!principal_may_grant(p, k.project_id, role, key_service_permissions(&k), p->expires_at_ms, why, sizeof(why)))
                return space_error_set(err, SPACE_E_FORBIDDEN, "%s", why);
        int r = STORE(ctx, key_delete, id, wallclock_now_ms());
        if (r == -ENOENT)
                return space_error_set(err, SPACE_E_NOT_FOUND, "key %.64s not found", id);
        return r < 0 ? space_error_errno(err, r, "delete key %s", id) : 0;
}

int key_service_list(struct spaced_context *ctx, const struct principal *p, const char *project, const struct store_page *page,
                     struct api_key **ret, size_t *ret_n, struct space_error *err)
{
        const char *scope;
        if (project_service_scope(ctx, p, project, &scope, err) < 0)
                return -1;
        int r = STORE(ctx, key_list, scope, page, ret, ret_n);
        return r < 0 ? space_error_errno(err, r, "read keys") : 0;
}

int key_service_authenticate(struct spaced_context *ctx, const char *secret, struct principal *ret, struct space_error *err)
{
        char hash[SECRET_HASH_SIZE];
        if (!*secret || strlen(secret) > 128 || secret_hash(secret, hash, sizeof(hash)) < 0)
                return space_error_set(err, SPACE_E_UNAUTHORIZED, "invalid api key");
        return key_service_authenticate_hash(ctx, hash, ret, err);
}

int key_service_authenticate_hash(struct spaced_context *ctx, const char *hash, struct principal *ret, struct space_error *err)
{
        struct api_key k;
        enum principal_role role;
        int r = STORE(ctx, key_authenticate, hash, &k);
        if (r == -ENOENT)
                return space_error_set(err, SPACE_E_UNAUTHORIZED, "invalid api key");
        if (r < 0)
                return space_error_errno(err, r, "look up key");
        if (k.expires_at_ms && k.expires_at_ms <= wallclock_now_ms())
                return space_error_set(err, SPACE_E_UNAUTHORIZED, "api key %s has expired", k.id);
        if (principal_role_from_name(k.role, &role) < 0)
                return space_error_set(err, SPACE_E_UNAUTHORIZED, "api key %s has no valid role", k.id);
        snprintf(ret->key_id, sizeof(ret->key_id), "%s", k.id);
        snprintf(ret->project_id, sizeof(ret->project_id), "%s", k.project_id);
        ret->role = role;
        ret->permissions = key_service_permissions(&k);
        ret->expires_at_ms = k.expires_at_ms;
        return 0;
}

int key_service_count(struct spaced_context *ctx, int64_t *ret, struct space_error *err)
{
        int r = STORE(ctx, key_count, ret);
        return r < 0 ? space_error_errno(err, r, "count keys") : 0;
}

int key_service_forget(struct spaced_context *ctx, const char *id, struct space_error *err)
{
        int r = STORE(ctx, key_delete, id, wallclock_now_ms());
        return r < 0 ? space_error_errno(err, r, "delete key %s", id) : 0;
}
