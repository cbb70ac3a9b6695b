/* bench_snapshot: the snapshot API calls of the history and storage measures, and the list of
 * snapshots a measure took and has not deleted yet (so that it deletes exactly those). */
#pragma once

#include <stddef.h>

#include "bench_client.h"
#include "bench_sandbox.h"
#include "bench_stats.h"

struct bench_snaps {
        char (*ids)[BENCH_ID_MAX];
        size_t n, cap;
};

/* Not thread-safe: one list per measuring thread. add returns 0 or -ENOMEM / -ENAMETOOLONG. */
int bench_snaps_add(struct bench_snaps *l, const char *id);
void bench_snaps_remove(struct bench_snaps *l, const char *id);
void bench_snaps_release(struct bench_snaps *l);

/* POST /v1/sandboxes/{id}/snapshots?wait=true {}. The snapshot joins `l` as soon as the answer
 * names it. Returns 0 when it is ready, with the call's wall time, its pause_ms and (when
 * ret_snap is not NULL, BENCH_ID_MAX bytes) its id; -EPROTO (reason in bench_client_error())
 * or -EIO otherwise. */
int bench_snapshot_take(struct bench_client *c, struct bench_snaps *l, const char *sandbox_id, double *ret_ms,
                        double *ret_pause_ms, char *ret_snap);

/* DELETE /v1/snapshots/{id}; a snapshot already gone counts as deleted. Returns 0, -EPROTO
 * or -EIO. */
int bench_snapshot_delete(struct bench_client *c, const char *snap_id);

/* Deletes every snapshot in `l`, timing each into `timed` (NULL: untimed); those that could
 * not be deleted stay in `l`, and the first failure is printed. Returns how many failed. */
size_t bench_snapshot_delete_all(struct bench_client *c, struct bench_snaps *l, struct bench_stats *timed);
