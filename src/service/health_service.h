/* health_service: whether spaced is well (GET /v1/health) and ready for work
 * (GET /v1/ready), from what the controller measured: the pool (storage/pool_health.h),
 * the state store's write probe and the controller's own tick (controller/daemon_health.h),
 * and the operation workers (operations/operation_queue.h).
 *
 * failed   — spaced cannot do its work: the pool cannot take writes, the store refuses
 *            writes, or the controller has not ticked for CONTROLLER_STALL_S;
 * degraded — it works, with a caveat: the pool is low on space (creates are refused), or
 *            every worker has been on one operation for over WORKERS_STUCK_S while others wait;
 * ok       — otherwise. Ready = not failed and not stopping. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "controller/daemon_health.h"
#include "operations/operation_queue.h"
#include "storage/pool_health.h"

struct spaced_context;

#define CONTROLLER_STALL_S 30
#define WORKERS_STUCK_S 300

enum health_status { HEALTH_OK, HEALTH_DEGRADED, HEALTH_FAILED };

struct health_report {
        enum health_status status;
        bool stopping;
        struct pool_health pool;
        enum health_status pool_status;
        struct daemon_health_view daemon;
        enum health_status store_status, controller_status;
        struct operation_queue_status workers;
        enum health_status workers_status;
        char reason[256]; /* the first check that is not ok, in words; "" when all are */
};

void health_service_report(struct spaced_context *ctx, struct health_report *ret);
const char *health_status_name(enum health_status s); /* ok | degraded | failed */
