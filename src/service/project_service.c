#include "service/project_service.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

static bool id_ok(const char *id)
{
        size_t n = strlen(id);
        if (n == 0 || n > 31 || id[0] == '-')
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((id[i] >= 'a' && id[i] <= 'z') || (id[i] >= '0' && id[i] <= '9') || id[i] == '-'))
                        return false;
        return true;
}

int project_service_create(struct spaced_context *ctx, const char *id, struct project *ret, struct space_error *err)
{
        if (!id || !id_ok(id))
                return space_error_set(err, SPACE_E_INVALID_REQUEST,
                                       "project id must be 1-31 of [a-z0-9-], not starting with '-'");
        struct project p = { .created_at_ms = wallclock_now_ms() };
        snprintf(p.id, sizeof(p.id), "%s", id);
        int r = STORE(ctx, project_insert, &p);
        if (r == -EEXIST)
                return space_error_set(err, SPACE_E_ALREADY_EXISTS, "project %s already exists", id);
        if (r < 0)
                return space_error_errno(err, r, "store project %s", id);
        *ret = p;
        return 0;
}

int project_service_get(struct spaced_context *ctx, const struct principal *p, const char *id, struct project *ret,
                        struct space_error *err)
{
        int r = principal_sees_project(p, id) ? STORE(ctx, project_get, id, ret) : -ENOENT;
        if (r == -ENOENT)
                return space_error_set(err, SPACE_E_NOT_FOUND, "project %.64s not found", id);
        return r < 0 ? space_error_errno(err, r, "load project %s", id) : 0;
}

int project_service_scope(struct spaced_context *ctx, const struct principal *p, const char *want, const char **ret,
                          struct space_error *err)
{
        struct project pr;
        if (want && project_service_get(ctx, p, want, &pr, err) < 0)
                return -1;
        *ret = want ? want : principal_list_project(p);
        return 0;
}

int project_service_list(struct spaced_context *ctx, const struct principal *p, const struct store_page *page,
                         struct project **ret, size_t *ret_n, struct space_error *err)
{
        int r = STORE(ctx, project_list, principal_list_project(p), page, ret, ret_n);
        return r < 0 ? space_error_errno(err, r, "list projects") : 0;
}
