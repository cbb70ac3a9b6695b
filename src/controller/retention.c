#include "controller/retention.h"

#include <string.h>

#include "spaced/log.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

#define SWEEP_EVERY_TICKS 600
#define BATCH 500

/* A store purge: deletes up to limit rows older than before_ms, *ret_n how many. */
typedef int (*purge_fn)(struct state_store *st, int64_t before_ms, int limit, int *ret_n);

/* Purges what is older than retention_s, in batches so that the store's lock is never held
 * long; logs what went as `what`. */
static void sweep(struct spaced_context *ctx, purge_fn purge, int64_t retention_s, const char *what)
{
        int64_t before = wallclock_now_ms() - retention_s * 1000;
        int total = 0, n = 0, r;
        do {
                n = 0;
                r = purge(ctx->store.st, before, BATCH, &n);
                total += n;
        } while (r == 0 && n == BATCH && !ctx->shutting_down);
        if (r < 0)
                log_warn("retention.failed", "rows=%s error=\"%s\"", what, strerror(-r));
        else if (total > 0)
                log_info("retention.purged", "%s=%d", what, total);
}

void retention_tick(struct spaced_context *ctx, unsigned tick)
{
        if (tick != 1 && tick % SWEEP_EVERY_TICKS != 0)
                return;
        sweep(ctx, ctx->store.ops->sandbox_purge_destroyed, ctx->cfg.destroyed_retention_s, "destroyed_sandboxes");
        sweep(ctx, ctx->store.ops->audit_purge, ctx->cfg.audit_retention_s, "audit_rows");
        sweep(ctx, ctx->store.ops->operation_purge_finished, ctx->cfg.operation_retention_s, "finished_operations");
}
