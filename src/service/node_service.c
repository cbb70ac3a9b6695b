#include "service/node_service.h"

#include <stdlib.h>
#include <string.h>

#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

int node_service_list(struct spaced_context *ctx, const struct principal *p, struct node_record **ret, size_t *ret_n,
                      struct space_error *err)
{
        if (!principal_may(p, PERM_PLATFORM))
                return space_error_set(err, SPACE_E_FORBIDDEN, "the nodes are the platform's");
        int r = STORE(ctx, node_list, ret, ret_n);
        return r < 0 ? space_error_errno(err, r, "list nodes") : 0;
}

int node_service_locate(struct spaced_context *ctx, const char *sandbox_id, struct node_record *ret, struct space_error *err)
{
        if (!ctx->cfg.database[0])
                return 0;
        struct sandbox sb;
        if (STORE(ctx, sandbox_get, sandbox_id, &sb) < 0 || !sb.node_id[0] || strcmp(sb.node_id, ctx->node_id) == 0)
                return 0;
        struct node_record *all = NULL;
        size_t n = 0;
        int r = STORE(ctx, node_list, &all, &n);
        if (r < 0)
                return space_error_errno(err, r, "list nodes");
        int found = -1;
        for (size_t i = 0; i < n && found < 0; i++)
                if (strcmp(all[i].id, sb.node_id) == 0)
                        found = (int)i;
        int64_t live_after = wallclock_now_ms() - ctx->cfg.claim_lease_s * 1000;
        if (found < 0)
                r = space_error_set(err, SPACE_E_NODE_UNAVAILABLE, "sandbox %s is on node %s, which is not in the fleet",
                                    sandbox_id, sb.node_id);
        else if (strcmp(all[found].state, "ready") != 0 || all[found].heartbeat_at_ms < live_after)
                r = space_error_set(err, SPACE_E_NODE_UNAVAILABLE,
                                    "sandbox %s is on node %s, which is %s (no heartbeat for %lld s)", sandbox_id, sb.node_id,
                                    strcmp(all[found].state, "ready") != 0 ? all[found].state : "silent",
                                    (long long)((wallclock_now_ms() - all[found].heartbeat_at_ms) / 1000));
        else {
                *ret = all[found];
                r = 1;
        }
        free(all);
        return r;
}
