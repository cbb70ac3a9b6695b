/* pool_watch: the controller's look at the pool every few seconds (pool_health_check), a
 * log line when its condition changes, and a periodic trim of an image-backed pool. */
#pragma once

struct spaced_context;

/* Called once a second by the controller thread. */
void pool_watch_tick(struct spaced_context *ctx, unsigned tick);
