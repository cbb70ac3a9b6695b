/* e2b_metrics: usage samples of sandboxes for E2B's GET /sandboxes/{id}/metrics.
 *
 * A sampler thread takes one sample of every running sandbox every E2B_METRICS_INTERVAL_S
 * seconds and keeps the last E2B_METRICS_RING of each (a few KiB per sandbox); a request
 * adds a sample taken there and then. A sample is the sandbox's cgroup (memory used, its
 * page cache, the memory limit, CPU time since the previous sample over the sandbox's CPUs)
 * and the btrfs pool that holds its root filesystem (statvfs: sandboxes share the pool and
 * have no disk quota, so disk figures are the pool's). */
#pragma once

#include <jansson.h>
#include <stdint.h>

#define E2B_METRICS_INTERVAL_S 5
#define E2B_METRICS_RING 60

struct spaced_context;
struct sandbox;
struct e2b_metrics;

/* Starts the sampler. Returns 0 or -errno. */
int e2b_metrics_start(struct spaced_context *ctx, struct e2b_metrics **ret);
/* Stops the sampler and frees everything; accepts NULL. */
void e2b_metrics_free(struct e2b_metrics *m);
/* The samples of sb taken between start_s and end_s (unix seconds, 0: unbounded), oldest
 * first, in E2B's form; a running sandbox gets one taken now when end_s does not exclude it. */
json_t *e2b_metrics_series(struct e2b_metrics *m, const struct sandbox *sb, int64_t start_s, int64_t end_s);
