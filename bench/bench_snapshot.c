#include "bench_snapshot.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h" /* _cleanup_json_ */

int bench_snaps_add(struct bench_snaps *l, const char *id)
{
        if (strlen(id) >= BENCH_ID_MAX)
                return -ENAMETOOLONG;
        if (l->n == l->cap) {
                size_t cap = l->cap ? l->cap * 2 : 64;
                char(*grown)[BENCH_ID_MAX] = realloc(l->ids, cap * sizeof(*grown));
                if (!grown)
                        return -ENOMEM;
                l->ids = grown;
                l->cap = cap;
        }
        snprintf(l->ids[l->n++], BENCH_ID_MAX, "%s", id);
        return 0;
}

void bench_snaps_remove(struct bench_snaps *l, const char *id)
{
        for (size_t i = 0; i < l->n; i++)
                if (strcmp(l->ids[i], id) == 0) {
                        memmove(l->ids[i], l->ids[i + 1], (l->n - i - 1) * sizeof(*l->ids));
                        l->n--;
                        return;
                }
}

void bench_snaps_release(struct bench_snaps *l)
{
        free(l->ids);
        l->ids = NULL;
        l->n = l->cap = 0;
}

int bench_snapshot_take(struct bench_client *c, struct bench_snaps *l, const char *sandbox_id, double *ret_ms,
                        double *ret_pause_ms, char *ret_snap)
{
        char path[128];
        long status;
        _cleanup_json_ json_t *answer = NULL;
        snprintf(path, sizeof(path), "/v1/sandboxes/%s/snapshots?wait=true&timeout_s=600", sandbox_id);
        double t0 = bench_now_ms();
        int r = bench_client_call(c, "POST", path, "{}", &status, &answer);
        double t1 = bench_now_ms();
        if (r < 0)
                return r;
        json_t *snap = json_object_get(answer, "snapshot");
        const char *snap_id = json_string_value(json_object_get(snap, "id"));
        if (snap_id && bench_snaps_add(l, snap_id) < 0)
                fprintf(stderr, "space-bench: cannot remember snapshot %s: delete it yourself\n", snap_id);
        const char *state = json_string_value(json_object_get(snap, "state"));
        if (status != 200 || !snap_id || !state || strcmp(state, "ready") != 0 || !json_is_number(json_object_get(snap, "pause_ms"))) {
                bench_client_set_error(c, status, answer);
                return -EPROTO;
        }
        *ret_ms = t1 - t0;
        *ret_pause_ms = json_number_value(json_object_get(snap, "pause_ms"));
        if (ret_snap)
                snprintf(ret_snap, BENCH_ID_MAX, "%s", snap_id);
        return 0;
}

int bench_snapshot_delete(struct bench_client *c, const char *snap_id)
{
        char path[128];
        long status;
        _cleanup_json_ json_t *answer = NULL;
        snprintf(path, sizeof(path), "/v1/snapshots/%s", snap_id);
        int r = bench_client_call(c, "DELETE", path, NULL, &status, &answer);
        if (r < 0)
                return r;
        if (status != 204 && status != 404) {
                bench_client_set_error(c, status, answer);
                return -EPROTO;
        }
        return 0;
}

size_t bench_snapshot_delete_all(struct bench_client *c, struct bench_snaps *l, struct bench_stats *timed)
{
        size_t kept = 0;
        for (size_t i = 0; i < l->n; i++) {
                double t0 = bench_now_ms();
                if (bench_snapshot_delete(c, l->ids[i]) < 0) {
                        if (kept == 0)
                                fprintf(stderr, "space-bench: snapshot delete %s: %s\n", l->ids[i], bench_client_error(c));
                        if (timed)
                                bench_stats_error(timed);
                        memmove(l->ids[kept++], l->ids[i], BENCH_ID_MAX);
                        continue;
                }
                if (timed)
                        bench_stats_add(timed, bench_now_ms() - t0);
        }
        size_t failed = kept;
        l->n = kept;
        return failed;
}
