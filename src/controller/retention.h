/* retention: the controller's sweep of rows kept past their use: sandboxes destroyed more
 * than --destroyed-retention seconds ago (with their commands, sessions and operations), and
 * audit log rows older than --audit-retention, and operations finished more than
 * --operation-retention seconds ago (not the newest of a live sandbox or template). */
#pragma once

struct spaced_context;

/* Called once a second by the controller thread; sweeps at the first call and every 10 min. */
void retention_tick(struct spaced_context *ctx, unsigned tick);
