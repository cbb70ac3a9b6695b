#include "service/operation_access.h"

#include <errno.h>

#include "spaced/spaced_context.h"

int operation_access_load(struct spaced_context *ctx, const struct principal *p, const char *id, struct operation *ret,
                          struct space_error *err)
{
        struct operation op;
        int r = STORE(ctx, operation_get, id, &op);
        if (r == 0 && !principal_sees_project(p, op.project_id))
                r = -ENOENT;
        if (r == -ENOENT)
                return space_error_set(err, SPACE_E_NOT_FOUND, "operation %.64s not found", id);
        if (r < 0)
                return space_error_errno(err, r, "load operation %s", id);
        *ret = op;
        return 0;
}
