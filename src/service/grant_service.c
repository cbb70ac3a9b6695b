/* Grants: sandbox-scoped binding rows with a deadline, and the thread that ends them. */
#include "service/grant_service.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "service/audit_service.h"
#include "service/sandbox_access.h"
#include "service/secret_service.h"
#include "spaced/log.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

static const json_t *grant_of(const struct binding_record *b)
{
        return json_object_get(b->spec, "grant");
}

static int64_t deadline_of(const struct binding_record *b)
{
        return (int64_t)json_integer_value(json_object_get(grant_of(b), "expires_at_ms"));
}

int grant_service_create(struct spaced_context *ctx, const struct principal *p, const char *sandbox_id, const char *binding,
                         int64_t ttl_s, struct binding_record *ret, struct space_error *err)
{
        if (ttl_s < 1 || ttl_s > GRANT_TTL_MAX_S)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "ttl_s: 1 to %d seconds", GRANT_TTL_MAX_S);
        if (!binding)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "binding: the id of one of the project's bindings");
        struct sandbox sb = { 0 };
        if (sandbox_access_load(ctx, p, sandbox_id, &sb, err) < 0)
                return -1;
        struct binding_record *all = NULL, *from = NULL;
        size_t n = 0;
        int r = STORE(ctx, binding_list, sb.project_id, NULL, &all, &n);
        for (size_t i = 0; r == 0 && i < n && !from; i++)
                if (strcmp(all[i].id, binding) == 0 && !grant_of(&all[i]) &&
                    (!all[i].sandbox_id[0] || strcmp(all[i].sandbox_id, sb.id) == 0))
                        from = &all[i];
        if (r < 0 || !from) {
                binding_record_array_free(all, n);
                sandbox_release(&sb);
                return r < 0 ? space_error_errno(err, r, "cannot read the bindings")
                             : space_error_set(err, SPACE_E_INVALID_REQUEST,
                                               "binding: no binding %s for sandbox %s in its project", binding, sandbox_id);
        }
        struct binding_record g = { .created_at_ms = wallclock_now_ms() };
        random_id("bnd-", 8, g.id, sizeof(g.id));
        snprintf(g.project_id, sizeof(g.project_id), "%s", sb.project_id);
        snprintf(g.sandbox_id, sizeof(g.sandbox_id), "%s", sb.id);
        snprintf(g.secret_name, sizeof(g.secret_name), "%s", from->secret_name);
        g.spec = json_deep_copy(from->spec);
        if (g.spec) {
                json_object_del(g.spec, "grant_only");
                json_object_set_new(
                        g.spec, "grant",
                        json_pack("{s:s, s:I}", "of", from->id, "expires_at_ms", (json_int_t)(g.created_at_ms + ttl_s * 1000)));
        }
        binding_record_array_free(all, n);
        sandbox_release(&sb);
        r = g.spec ? STORE(ctx, binding_insert, &g) : -ENOMEM;
        if (r < 0) {
                binding_record_release(&g);
                return space_error_errno(err, r, "cannot store the grant");
        }
        log_info("secret.granted", "grant=%s binding=%s sandbox=%s ttl_s=%lld key_id=%s", g.id, binding, g.sandbox_id,
                 (long long)ttl_s, p->key_id[0] ? p->key_id : "-");
        secret_service_refresh(ctx, g.project_id, g.sandbox_id);
        *ret = g;
        return 0;
}

int grant_service_list(struct spaced_context *ctx, const struct principal *p, const char *sandbox_id, struct binding_record **ret,
                       size_t *ret_n, struct space_error *err)
{
        struct sandbox sb = { 0 };
        if (sandbox_access_load(ctx, p, sandbox_id, &sb, err) < 0)
                return -1;
        struct binding_record *all = NULL;
        size_t n = 0, k = 0;
        int r = STORE(ctx, binding_list, sb.project_id, sb.id, &all, &n);
        sandbox_release(&sb);
        if (r < 0)
                return space_error_errno(err, r, "cannot read the grants");
        int64_t now = wallclock_now_ms();
        for (size_t i = 0; i < n; i++) {
                if (grant_of(&all[i]) && all[i].sandbox_id[0] && deadline_of(&all[i]) > now)
                        all[k++] = all[i];
                else
                        binding_record_release(&all[i]);
        }
        *ret = all;
        *ret_n = k;
        return 0;
}

int grant_service_revoke(struct spaced_context *ctx, const struct principal *p, const char *sandbox_id, const char *grant_id,
                         struct space_error *err)
{
        struct binding_record *all = NULL;
        size_t n = 0;
        if (grant_service_list(ctx, p, sandbox_id, &all, &n, err) < 0)
                return -1;
        const struct binding_record *g = NULL;
        for (size_t i = 0; i < n && !g; i++)
                if (strcmp(all[i].id, grant_id) == 0)
                        g = &all[i];
        int r = g ? STORE(ctx, binding_delete, g->project_id, g->id) : -ENOENT;
        if (r == 0) {
                log_info("secret.grant_revoked", "grant=%s sandbox=%s key_id=%s", g->id, g->sandbox_id,
                         p->key_id[0] ? p->key_id : "-");
                secret_service_refresh(ctx, g->project_id, g->sandbox_id);
        }
        binding_record_array_free(all, n);
        if (r == -ENOENT)
                return space_error_set(err, SPACE_E_NOT_FOUND, "grant %s not found", grant_id);
        return r < 0 ? space_error_errno(err, r, "cannot revoke grant %s", grant_id) : 0;
}

void grant_service_expire(struct spaced_context *ctx)
{
        struct binding_record *all = NULL;
        size_t n = 0;
        if (STORE(ctx, binding_list, NULL, NULL, &all, &n) < 0)
                return;
        int64_t now = wallclock_now_ms();
        for (size_t i = 0; i < n; i++) {
                const struct binding_record *g = &all[i];
                if (!grant_of(g) || deadline_of(g) > now)
                        continue;
                /* The row first, then its removal: a crash between them writes it again, never
                 * loses it. The gateway already stopped using the grant at its deadline. */
                struct audit_record a = { .created_at_ms = now };
                random_id("aud-", 12, a.id, sizeof(a.id));
                snprintf(a.action, sizeof(a.action), "secret.grant_expired");
                snprintf(a.target, sizeof(a.target), "%s", g->sandbox_id);
                snprintf(a.project, sizeof(a.project), "%s", g->project_id);
                snprintf(a.detail, sizeof(a.detail), "{\"grant\":\"%s\",\"binding\":\"%s\",\"secret\":\"%s\"}", g->id,
                         json_string_value(json_object_get(grant_of(g), "of")) ?: "", g->secret_name);
                struct space_error err = { 0 };
                if (audit_service_record(ctx, &a, &err) < 0 || STORE(ctx, binding_delete, g->project_id, g->id) < 0) {
                        log_warn("secret.grant_expiry_failed", "grant=%s note=\"tried again in a second\"", g->id);
                        continue;
                }
                log_info("secret.grant_expired", "grant=%s sandbox=%s", g->id, g->sandbox_id);
                secret_service_refresh(ctx, g->project_id, g->sandbox_id);
        }
        binding_record_array_free(all, n);
}
