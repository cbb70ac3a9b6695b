#include "service/audit_service.h"

#include "service/project_service.h"
#include "spaced/spaced_context.h"

int audit_service_record(struct spaced_context *ctx, const struct audit_record *a, struct space_error *err)
{
        int r = STORE(ctx, audit_insert, a);
        return r < 0 ? space_error_errno(err, r, "write the audit log") : 0;
}

int audit_service_list(struct spaced_context *ctx, const struct principal *p, struct audit_filter *f,
                       const struct store_page *page, struct audit_record **ret, size_t *ret_n, struct space_error *err)
{
        if (project_service_scope(ctx, p, f->project, &f->project, err) < 0)
                return -1;
        int r = STORE(ctx, audit_list, f, page, ret, ret_n);
        return r < 0 ? space_error_errno(err, r, "read the audit log") : 0;
}
