/* rolling_snapshots: the controller's schedule of automatic snapshots. A sandbox with a
 * policy {interval_s, retain_s, max_count} gets a snapshot every interval_s while it runs
 * and changes (paused, stopped and unchanged sandboxes are skipped); rolling snapshots
 * older than retain_s, or beyond the newest max_count, are deleted. */
#pragma once

struct spaced_context;

void rolling_snapshots_tick(struct spaced_context *ctx);
