/* reconciler: makes the world match the rows. At start it re-queues unfinished operations,
 * reattaches to live sandboxes, settles rows whose processes died, finishes transient states
 * left by a crash, and removes host resources (rootfs, cgroups, run dirs) that no row owns.
 * While running, a controller thread enforces sandbox timeouts and notices dead sandboxes. */
#pragma once

#include <stdbool.h>

struct spaced_context;
struct reconciler;

int reconciler_startup(struct spaced_context *ctx);
int reconciler_start(struct spaced_context *ctx, struct reconciler **ret);
void reconciler_free(struct reconciler *r);
/* One pass of the periodic checks (used by the thread and by tests). */
void reconciler_tick(struct spaced_context *ctx, bool probe);
