#include "service/sandbox_access.h"

#include <errno.h>

#include "spaced/spaced_context.h"

int sandbox_access_load(struct spaced_context *ctx, const struct principal *p, const char *id, struct sandbox *ret,
                        struct space_error *err)
{
        struct sandbox sb;
        int r = STORE(ctx, sandbox_get, id, &sb);
        if (r == 0 && !principal_sees_project(p, sb.project_id)) {
                sandbox_release(&sb);
                r = -ENOENT;
        }
        if (r == -ENOENT)
                return space_error_set(err, SPACE_E_NOT_FOUND, "sandbox %.64s not found", id);
        if (r < 0)
                return space_error_errno(err, r, "load sandbox %s", id);
        *ret = sb;
        return 0;
}
