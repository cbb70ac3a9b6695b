#include "service/operation_service.h"

#include <string.h>

#include "service/operation_access.h"
#include "service/project_service.h"
#include "spaced/spaced_context.h"

int operation_service_list(struct spaced_context *ctx, const struct principal *p, const char *project, const char *target,
                           int state, const struct store_page *page, struct operation **ret, size_t *ret_n,
                           struct space_error *err)
{
        const char *scope;
        if (project_service_scope(ctx, p, project, &scope, err) < 0)
                return -1;
        int r = STORE(ctx, operation_list, target, state, false, scope, page, ret, ret_n);
        return r < 0 ? space_error_errno(err, r, "read operations") : 0;
}

int operation_service_get_build(struct spaced_context *ctx, const struct principal *p, const char *id, struct operation *ret,
                                struct space_error *err)
{
        struct operation op;
        if (operation_access_load(ctx, p, id, &op, err) < 0) {
                if (err->code == SPACE_E_NOT_FOUND)
                        space_error_set(err, SPACE_E_NOT_FOUND, "build %.64s not found", id);
                return -1;
        }
        if (strcmp(op.kind, "template.build") != 0)
                return space_error_set(err, SPACE_E_NOT_FOUND, "build %.64s not found", id);
        *ret = op;
        return 0;
}

bool operation_service_over(struct spaced_context *ctx, const struct principal *p, const char *id, struct operation *ret)
{
        struct space_error ignored;
        memset(ret, 0, sizeof(*ret));
        if (operation_access_load(ctx, p, id, ret, &ignored) < 0)
                return true;
        return ret->state == OPERATION_SUCCEEDED || ret->state == OPERATION_FAILED;
}
