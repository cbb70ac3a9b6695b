/* snapshot_sizer: fills in each snapshot's bytes_exclusive in the background — the data it
 * holds beyond its parent, measured as the size of the incremental btrfs send stream against
 * the parent (the full stream for a snapshot without one). It grows with what changed between
 * the two, not with the size of the filesystem. */
#pragma once

struct spaced_context;
struct snapshot_sizer;

int snapshot_sizer_start(struct spaced_context *ctx, struct snapshot_sizer **ret);
void snapshot_sizer_free(struct snapshot_sizer *s);
/* Stops a measurement that reads snapshot id (as the snapshot or as its parent) and waits
 * for it to end, so that the snapshot can be deleted. */
void snapshot_sizer_release(const char *id);
/* Measures up to max unmeasured snapshots now; returns how many were measured. */
int snapshot_sizer_pass(struct spaced_context *ctx, int max);
