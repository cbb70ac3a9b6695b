/* Credential bindings: validated, scoped to the caller's project, pushed to the gateway. */
#include "service/credential_binding_service.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "operations/credential_binding.h"
#include "service/project_service.h"
#include "service/sandbox_access.h"
#include "service/secret_service.h"
#include "spaced/log.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

static int target_project(struct spaced_context *ctx, const struct principal *p, const char *want, const char **ret,
                          struct space_error *err)
{
        const char *scope = NULL;
        if (project_service_scope(ctx, p, want, &scope, err) < 0)
                return -1;
        *ret = scope ? scope : p->project_id;
        return 0;
}

int credential_binding_service_create(struct spaced_context *ctx, const struct principal *p, const char *project,
                                      const json_t *body, struct binding_record *ret, struct space_error *err)
{
        const char *project_id;
        if (target_project(ctx, p, project, &project_id, err) < 0)
                return -1;
        _cleanup_json_ json_t *spec = credential_binding_spec_new(body, err);
        if (!spec)
                return -1;
        const char *secret = json_string_value(json_object_get(body, "secret"));
        if (!secret_service_name_valid(secret))
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "secret: the name of one of the project's secrets");
        struct secret_record s = { 0 };
        int r = STORE(ctx, secret_get, project_id, secret, &s);
        secret_record_release(&s);
        if (r == -ENOENT)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "secret: project %s has no secret %s", project_id, secret);
        if (r < 0)
                return space_error_errno(err, r, "cannot read secret %s", secret);
        struct binding_record rec = { .created_at_ms = wallclock_now_ms() };
        const json_t *sv = json_object_get(body, "sandbox_id");
        if (sv && !json_is_null(sv)) {
                struct sandbox sb = { 0 };
                const char *id = json_string_value(sv);
                if (!id || sandbox_access_load(ctx, p, id, &sb, err) < 0 || strcmp(sb.project_id, project_id) != 0) {
                        sandbox_release(&sb);
                        return space_error_set(err, SPACE_E_INVALID_REQUEST, "sandbox_id: no such sandbox in project %s",
                                               project_id);
                }
                snprintf(rec.sandbox_id, sizeof(rec.sandbox_id), "%s", sb.id);
                sandbox_release(&sb);
        }
        random_id("bnd-", 8, rec.id, sizeof(rec.id));
        snprintf(rec.project_id, sizeof(rec.project_id), "%s", project_id);
        snprintf(rec.secret_name, sizeof(rec.secret_name), "%s", secret);
        rec.spec = TAKE_PTR(spec);
        r = STORE(ctx, binding_insert, &rec);
        if (r < 0) {
                binding_record_release(&rec);
                return space_error_errno(err, r, "cannot store the binding");
        }
        log_info("secret.bound", "binding=%s secret=%s project=%s sandbox=%s destination=\"%s\" key_id=%s", rec.id,
                 rec.secret_name, rec.project_id, rec.sandbox_id[0] ? rec.sandbox_id : "-",
                 LOG_ESC(json_string_value(json_object_get(rec.spec, "destination"))), p->key_id[0] ? p->key_id : "-");
        secret_service_refresh(ctx, project_id, rec.sandbox_id[0] ? rec.sandbox_id : NULL);
        *ret = rec;
        return 0;
}

int credential_binding_service_list(struct spaced_context *ctx, const struct principal *p, const char *project,
                                    const char *sandbox_id, struct binding_record **ret, size_t *ret_n, struct space_error *err)
{
        const char *project_id;
        if (target_project(ctx, p, project, &project_id, err) < 0)
                return -1;
        int r = STORE(ctx, binding_list, project_id, sandbox_id, ret, ret_n);
        return r < 0 ? space_error_errno(err, r, "cannot list credential bindings") : 0;
}

int credential_binding_service_get(struct spaced_context *ctx, const struct principal *p, const char *project, const char *id,
                                   struct binding_record *ret, struct space_error *err)
{
        struct binding_record *all = NULL;
        size_t n = 0;
        if (!project && (p->permissions & PERM_PLATFORM)) { /* ids are unique: the platform finds one anywhere */
                int r = STORE(ctx, binding_list, NULL, NULL, &all, &n);
                if (r < 0)
                        return space_error_errno(err, r, "cannot list credential bindings");
        } else if (credential_binding_service_list(ctx, p, project, NULL, &all, &n, err) < 0) {
                return -1;
        }
        int found = -1;
        for (size_t i = 0; i < n && found < 0; i++)
                if (strcmp(all[i].id, id) == 0)
                        found = (int)i;
        if (found >= 0) {
                *ret = all[found];
                all[found].spec = NULL;
        }
        binding_record_array_free(all, n);
        return found >= 0 ? 0 : space_error_set(err, SPACE_E_NOT_FOUND, "credential binding %s not found", id);
}

int credential_binding_service_delete(struct spaced_context *ctx, const struct principal *p, const char *project, const char *id,
                                      struct space_error *err)
{
        struct binding_record rec = { 0 };
        if (credential_binding_service_get(ctx, p, project, id, &rec, err) < 0)
                return -1;
        int r = STORE(ctx, binding_delete, rec.project_id, id);
        if (r == 0) {
                log_info("secret.unbound", "binding=%s project=%s key_id=%s", id, rec.project_id, p->key_id[0] ? p->key_id : "-");
                secret_service_refresh(ctx, rec.project_id, rec.sandbox_id[0] ? rec.sandbox_id : NULL);
        }
        binding_record_release(&rec);
        if (r == -ENOENT)
                return space_error_set(err, SPACE_E_NOT_FOUND, "credential binding %s not found", id);
        return r < 0 ? space_error_errno(err, r, "cannot delete credential binding %s", id) : 0;
}
