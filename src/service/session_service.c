#include "service/session_service.h"

#include "service/sandbox_access.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

int session_service_list(struct spaced_context *ctx, const struct principal *p, const char *sandbox_id,
                         const struct store_page *page, struct attach_session **ret, size_t *ret_n, struct space_error *err)
{
        struct sandbox sb;
        if (sandbox_access_load(ctx, p, sandbox_id, &sb, err) < 0)
                return -1;
        sandbox_release(&sb);
        int r = STORE(ctx, session_list, sandbox_id, page, ret, ret_n);
        return r < 0 ? space_error_errno(err, r, "list sessions") : 0;
}

bool session_service_active(struct spaced_context *ctx, const char *id)
{
        struct attach_session s;
        return STORE(ctx, session_get, id, &s) == 0 && !s.revoked_at_ms && s.expires_at_ms > wallclock_now_ms();
}
