#include "service/snapshot_access.h"

#include <errno.h>

#include "spaced/spaced_context.h"

int snapshot_access_load(struct spaced_context *ctx, const struct principal *p, const char *id, struct snapshot *ret,
                         struct space_error *err)
{
        struct snapshot snap;
        int r = STORE(ctx, snapshot_get, id, &snap);
        if (r == 0 && !principal_sees_project(p, snap.project_id))
                r = -ENOENT;
        if (r == -ENOENT)
                return space_error_set(err, SPACE_E_NOT_FOUND, "snapshot %.64s not found", id);
        if (r < 0)
                return space_error_errno(err, r, "load snapshot %s", id);
        *ret = snap;
        return 0;
}
