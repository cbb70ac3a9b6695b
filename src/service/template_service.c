#include "service/template_service.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "operations/operation_queue.h"
#include "service/project_service.h"
#include "service/template_access.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

int template_service_get(struct spaced_context *ctx, const struct principal *p, const char *name, struct template_record *ret,
                         struct space_error *err)
{
        struct template_record t;
        int r = STORE(ctx, template_get, name, &t);
        if (r == 0 && !template_access_sees(p, &t)) {
                template_record_release(&t);
                r = -ENOENT;
        }
        if (r == -ENOENT)
                return space_error_set(err, SPACE_E_NOT_FOUND, "template %.160s not found", name);
        if (r < 0)
                return space_error_errno(err, r, "read template %s", name);
        *ret = t;
        return 0;
}

int template_service_list(struct spaced_context *ctx, const struct principal *p, const char *project,
                          const struct store_page *page, struct template_record **ret, size_t *ret_n, struct space_error *err)
{
        const char *scope;
        if (project_service_scope(ctx, p, project, &scope, err) < 0)
                return -1;
        int r = STORE(ctx, template_list, scope, page, ret, ret_n);
        return r < 0 ? space_error_errno(err, r, "read templates") : 0;
}

int template_service_tags(struct spaced_context *ctx, const struct principal *p, const char *name, struct template_record **ret,
                          size_t *ret_n, struct space_error *err)
{
        struct template_record *all = NULL;
        size_t n = 0, kept = 0, len = strlen(name);
        int r = STORE(ctx, template_list, NULL, NULL, &all, &n);
        if (r < 0)
                return space_error_errno(err, r, "read templates");
        for (size_t i = 0; i < n; i++) {
                if (strncmp(all[i].name, name, len) == 0 && all[i].name[len] == ':' && template_access_sees(p, &all[i]))
                        all[kept++] = all[i];
                else
                        template_record_release(&all[i]);
        }
        *ret = all;
        *ret_n = kept;
        return 0;
}

int template_service_submit_build(struct spaced_context *ctx, const struct principal *p, const struct operation *op,
                                  struct space_error *err)
{
        struct template_record t;
        const char *name = op->target;
        int r = STORE(ctx, template_get, name, &t);
        if (r == 0) {
                bool building = strcmp(t.state, "building") == 0;
                template_record_release(&t);
                if (building)
                        return space_error_set(err, SPACE_E_INVALID_STATE, "template %s is already being built", name);
        } else if (r == -ENOENT) {
                struct template_record nt = { .environment = json_object(), .updated_at_ms = wallclock_now_ms() };
                snprintf(nt.name, sizeof(nt.name), "%s", name);
                snprintf(nt.project_id, sizeof(nt.project_id), "%s", p->project_id);
                snprintf(nt.state, sizeof(nt.state), "building");
                r = nt.environment ? STORE(ctx, template_upsert, &nt) : -ENOMEM;
                json_decref(nt.environment);
        }
        if (r == 0)
                r = STORE(ctx, operation_insert, op);
        if (r < 0)
                return space_error_errno(err, r, "store build of %s", name);
        operation_queue_submit(ctx->queue, op->id);
        return 0;
}
