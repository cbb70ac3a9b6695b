#include "service/snapshot_service.h"

#include <stdlib.h>
#include <string.h>

#include "service/project_service.h"
#include "spaced/spaced_context.h"

int snapshot_service_list(struct spaced_context *ctx, const struct principal *p, const char *project, const char *sandbox_id,
                          const struct store_page *page, struct snapshot **ret, size_t *ret_n, struct space_error *err)
{
        const char *scope;
        if (project_service_scope(ctx, p, project, &scope, err) < 0)
                return -1;
        int r = STORE(ctx, snapshot_list, sandbox_id, scope, page, ret, ret_n);
        return r < 0 ? space_error_errno(err, r, "list snapshots") : 0;
}

int snapshot_service_by_label(struct spaced_context *ctx, const struct principal *p, const char *label, struct snapshot *ret,
                              struct space_error *err)
{
        struct snapshot *all = NULL;
        size_t n = 0;
        if (snapshot_service_list(ctx, p, NULL, NULL, NULL, &all, &n, err) < 0)
                return -1;
        int found = -1;
        for (size_t i = n; i-- > 0 && found < 0;)
                if (strcmp(all[i].label, label) == 0 && strcmp(all[i].state, "ready") == 0)
                        found = (int)i;
        if (found >= 0)
                *ret = all[found];
        free(all);
        return found >= 0 ? 0 : space_error_set(err, SPACE_E_NOT_FOUND, "snapshot %.127s not found", label);
}

bool snapshot_service_id_taken(struct spaced_context *ctx, const char *id)
{
        struct snapshot existing;
        return STORE(ctx, snapshot_get, id, &existing) == 0;
}

int snapshot_service_add_imported(struct spaced_context *ctx, const struct principal *p, const struct snapshot *snap,
                                  struct space_error *err)
{
        if (!principal_sees_project(p, snap->project_id))
                return space_error_set(err, SPACE_E_NOT_FOUND, "project %.64s not found", snap->project_id);
        int r = STORE(ctx, insert_batch, NULL, 0, snap, 1, NULL);
        return r < 0 ? space_error_errno(err, r, "store imported snapshot") : 0;
}
