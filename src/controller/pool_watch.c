#include "controller/pool_watch.h"

#include <string.h>

#include "spaced/log.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"
#include "storage/pool_health.h"

#define CHECK_EVERY_TICKS 5

void pool_watch_tick(struct spaced_context *ctx, unsigned tick)
{
        if (tick % CHECK_EVERY_TICKS != 0)
                return;
        struct pool_health before, now;
        pool_monitor_get(&ctx->pool_health, &before);
        now = before;
        int64_t at = wallclock_now_ms();
        if (ctx->pool.image[0] && ctx->cfg.pool_trim_interval_s > 0 && before.condition != POOL_READ_ONLY &&
            at - before.trimmed_at_ms >= ctx->cfg.pool_trim_interval_s * 1000) {
                int64_t trimmed = pool_health_trim(&ctx->pool);
                now.trimmed_at_ms = at;
                if (trimmed >= 0) {
                        now.trimmed_bytes = (uint64_t)trimmed;
                        log_debug("pool.trimmed", "bytes=%lld", (long long)trimmed);
                } else {
                        log_warn("pool.trim_failed", "error=\"%s\"", strerror((int)-trimmed));
                }
        }
        pool_health_check(&ctx->pool, ctx->cfg.pool_low_space_bytes, &now);
        pool_monitor_set(&ctx->pool_health, &now);
        if (now.condition == before.condition)
                return;
        if (now.condition == POOL_OK)
                log_info("pool.healthy", "was=%s", pool_condition_name(before.condition));
        else
                log_error("pool.unhealthy", "condition=%s was=%s reason=\"%s\"", pool_condition_name(now.condition),
                          pool_condition_name(before.condition), now.reason);
}
