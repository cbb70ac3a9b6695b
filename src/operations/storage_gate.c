#include "operations/storage_gate.h"

#include "spaced/spaced_context.h"
#include "storage/pool_health.h"

int storage_gate_check(struct spaced_context *ctx, enum storage_need need, struct space_error *err)
{
        struct pool_health h;
        pool_monitor_get(&ctx->pool_health, &h);
        if (h.condition == POOL_OK || (h.condition == POOL_LOW_SPACE && need == STORAGE_WRITES))
                return 0;
        return space_error_set(err, SPACE_E_UNAVAILABLE, "storage is %s: %s", pool_condition_name(h.condition), h.reason);
}
