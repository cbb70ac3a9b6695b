#include "service/health_service.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "spaced/spaced_context.h"

const char *health_status_name(enum health_status s)
{
        return s == HEALTH_OK ? "ok" : s == HEALTH_DEGRADED ? "degraded" : "failed";
}

/* Keeps the worst status, and the reason of the first check that made it so. */
static void weigh(struct health_report *r, enum health_status s, const char *why)
{
        if (s > r->status) {
                r->status = s;
                snprintf(r->reason, sizeof(r->reason), "%s", why);
        }
}

void health_service_report(struct spaced_context *ctx, struct health_report *ret)
{
        memset(ret, 0, sizeof(*ret));
        ret->stopping = atomic_load(&ctx->shutting_down);
        pool_monitor_get(&ctx->pool_health, &ret->pool);
        ret->pool_status = ret->pool.condition == POOL_OK ? HEALTH_OK
                : ret->pool.condition == POOL_LOW_SPACE   ? HEALTH_DEGRADED
                                                          : HEALTH_FAILED;
        char why[256];
        snprintf(why, sizeof(why), "pool: %s", ret->pool.reason[0] ? ret->pool.reason : pool_condition_name(ret->pool.condition));
        weigh(ret, ret->pool_status, why);

        daemon_health_get(ctx->health, &ret->daemon);
        ret->store_status = ret->daemon.store_ok ? HEALTH_OK : HEALTH_FAILED;
        weigh(ret, ret->store_status, ret->daemon.store_reason);
        ret->controller_status = ret->daemon.controller_idle_us > CONTROLLER_STALL_S * 1000000LL ? HEALTH_FAILED : HEALTH_OK;
        snprintf(why, sizeof(why), "the controller has not run for %lld s (timeouts, reconciliation and pool checks stopped)",
                 (long long)(ret->daemon.controller_idle_us / 1000000));
        weigh(ret, ret->controller_status, why);

        operation_queue_status(ctx->queue, &ret->workers);
        bool stuck = ret->workers.workers > 0 && ret->workers.busy == ret->workers.workers && ret->workers.queued > 0 &&
                ret->workers.longest_busy_us > WORKERS_STUCK_S * 1000000LL;
        ret->workers_status = stuck ? HEALTH_DEGRADED : HEALTH_OK;
        snprintf(why, sizeof(why), "every worker is busy and %zu operations wait (one has run for %lld s)", ret->workers.queued,
                 (long long)(ret->workers.longest_busy_us / 1000000));
        weigh(ret, ret->workers_status, why);
}
