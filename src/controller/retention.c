#include "controller/retention.h"

#include <string.h>

#include "spaced/log.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

#define SWEEP_EVERY_TICKS 600
#define BATCH 500

void retention_tick(struct spaced_context *ctx, unsigned tick)
{
        if (tick != 1 && tick % SWEEP_EVERY_TICKS != 0)
                return;
        int64_t before = wallclock_now_ms() - ctx->cfg.destroyed_retention_s * 1000;
        int total = 0, n = 0, r;
        /* In batches, so that the store's lock is never held long. */
        do {
                n = 0;
                r = STORE(ctx, sandbox_purge_destroyed, before, BATCH, &n);
                total += n;
        } while (r == 0 && n == BATCH && !ctx->shutting_down);
        if (r < 0)
                log_warn("retention.failed", "error=\"%s\"", strerror(-r));
        else if (total > 0)
                log_info("retention.purged", "destroyed_sandboxes=%d", total);
}
