#include "service/template_access.h"

#include <errno.h>

#include "spaced/spaced_context.h"
#include "state_store/state_store.h"
#include "templates/template_ref.h"

bool template_access_sees(const struct principal *p, const struct template_record *t)
{
        return !t->project_id[0] || principal_sees_project(p, t->project_id);
}

int template_access_check(struct spaced_context *ctx, const struct principal *p, const char *ref, bool write,
                          struct space_error *err)
{
        struct template_record t;
        int r = template_ref_ok(ref) ? template_ref_resolve(ctx, ref, &t) : -ENOENT;
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return space_error_errno(err, r, "load template %s", ref);
        bool sees = template_access_sees(p, &t), shared = !t.project_id[0];
        template_record_release(&t);
        if (!sees)
                return space_error_set(err, SPACE_E_NOT_FOUND, "template %s not found", ref);
        if (write && shared && !principal_may(p, PERM_PLATFORM))
                return space_error_set(err, SPACE_E_FORBIDDEN, "template %s is shared: only an admin key changes it", ref);
        return 0;
}
