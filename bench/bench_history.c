/* bench_history: snapshot, restore and fork latencies through the API, on a sandbox holding
 * a given amount of file data (written with dd inside it, then synced), once per size, to
 * show whether the cost depends on the size. For each size, one client, one at a time:
 *
 *   snapshot        POST /v1/sandboxes/{id}/snapshots?wait=true {} after a one-line write;
 *                   the pause window is the snapshot's pause_ms (cgroup frozen → thawed)
 *   snapshot dirty  the same right after overwriting dirty_mb MiB of /root/dirty, unsynced
 *                   (each such snapshot is deleted at once, untimed)
 *   restore         POST /v1/sandboxes/{id}/restore?wait=true to the first snapshot, after a
 *                   one-line write (the sandbox runs again when it answers)
 *   fork 1 / fork K POST /v1/sandboxes/{id}/fork?wait=true {"count":K} (a snapshot is taken,
 *                   K children start); the children are destroyed and the fork's snapshot
 *                   deleted after each sample, untimed
 *   snapshot delete DELETE /v1/snapshots/{id} of every snapshot of the "snapshot" measures
 *
 * Every snapshot taken is deleted before the measure returns, also after Ctrl-C. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_measure.h"
#include "bench_snapshot.h"
#include "cleanup.h"

#define SHOWN_ERRORS 5
#define WAIT "?wait=true&timeout_s=600"

static char hist_names[BENCH_HISTORY_MAX_SIZES][_BENCH_HIST_MAX][64];


struct hist_run {
        const struct bench_config *cfg;
        struct bench_sandboxes *set;
        struct bench_results *res;
        struct bench_client *c;
        struct bench_snaps snaps; /* to delete at the end */
        size_t size_index;
        size_t shown;
};

static struct bench_stats *stat_of(struct hist_run *run, enum bench_hist_stat kind)
{
        return &run->res->stats[BENCH_HIST_STAT(run->size_index, kind)];
}

static void report(struct hist_run *run, const char *what)
{
        if (run->shown++ < SHOWN_ERRORS)
                fprintf(stderr, "space-bench: %s: %s\n", what, bench_client_error(run->c));
        else if (run->shown == SHOWN_ERRORS + 1)
                fprintf(stderr, "space-bench: more history errors follow; not shown\n");
}

static int exec_shell(struct hist_run *run, const char *id, const char *script, int timeout_s)
{
        return bench_sandbox_exec_shell(run->c, id, script, timeout_s);
}

static int one_snapshot(struct hist_run *run, const char *id, size_t i, enum bench_hist_stat lat, enum bench_hist_stat pause,
                        char *ret_snap)
{
        char script[128];
        double ms, pause_ms;
        /* Something changed since the last snapshot, as in real use. */
        snprintf(script, sizeof(script), "echo %zu > /root/sample", i);
        if (exec_shell(run, id, script, 60) < 0) {
                report(run, "write before snapshot");
                bench_stats_error(stat_of(run, lat));
                return -EPROTO;
        }
        if (bench_snapshot_take(run->c, &run->snaps, id, &ms, &pause_ms, ret_snap) < 0) {
                report(run, "snapshot");
                bench_stats_error(stat_of(run, lat));
                return -EPROTO;
        }
        bench_stats_add(stat_of(run, lat), ms);
        bench_stats_add(stat_of(run, pause), pause_ms);
        return 0;
}

static void measure_snapshots(struct hist_run *run, const char *id, char *first_snap)
{
        for (size_t i = 0; i < run->cfg->history_n && !bench_stopping; i++)
                one_snapshot(run, id, i, BENCH_HIST_SNAPSHOT, BENCH_HIST_PAUSE, i == 0 ? first_snap : NULL);
        if (run->cfg->dirty_mb == 0)
                return;
        char script[160];
        snprintf(script, sizeof(script), "dd if=/dev/urandom of=/root/dirty bs=1M count=%zu conv=notrunc 2>/dev/null",
                 run->cfg->dirty_mb);
        for (size_t i = 0; i < run->cfg->history_n && !bench_stopping; i++) {
                if (exec_shell(run, id, script, 600) < 0) {
                        report(run, "dirty write");
                        bench_stats_error(stat_of(run, BENCH_HIST_SNAPSHOT_DIRTY));
                        continue;
                }
                /* Deleted at once (untimed): each one pins dirty_mb MiB of old data. */
                char snap[BENCH_ID_MAX];
                if (one_snapshot(run, id, i, BENCH_HIST_SNAPSHOT_DIRTY, BENCH_HIST_PAUSE_DIRTY, snap) == 0) {
                        if (bench_snapshot_delete(run->c, snap) < 0)
                                report(run, "delete dirty snapshot");
                        else
                                bench_snaps_remove(&run->snaps, snap);
                }
        }
}

static void measure_restores(struct hist_run *run, const char *id, const char *snap_id)
{
        char path[128], body[128];
        snprintf(path, sizeof(path), "/v1/sandboxes/%s/restore" WAIT, id);
        snprintf(body, sizeof(body), "{\"snapshot_id\":\"%s\"}", snap_id);
        struct bench_stats *s = stat_of(run, BENCH_HIST_RESTORE);
        for (size_t i = 0; i < run->cfg->history_n && !bench_stopping; i++) {
                long status;
                _cleanup_json_ json_t *answer = NULL;
                if (exec_shell(run, id, "echo drift > /root/sample", 60) < 0) {
                        report(run, "write before restore");
                        bench_stats_error(s);
                        continue;
                }
                double t0 = bench_now_ms();
                int r = bench_client_call(run->c, "POST", path, body, &status, &answer);
                double t1 = bench_now_ms();
                const char *state = json_string_value(json_object_get(json_object_get(answer, "sandbox"), "state"));
                if (r == 0 && (status != 200 || !state || strcmp(state, "running") != 0)) {
                        bench_client_set_error(run->c, status, answer);
                        r = -EPROTO;
                }
                if (r < 0) {
                        report(run, "restore");
                        bench_stats_error(s);
                        continue;
                }
                bench_stats_add(s, t1 - t0);
        }
}

/* One fork of `count` children; they are checked, destroyed, the snapshot deleted. */
static int one_fork(struct hist_run *run, const char *id, size_t count, struct bench_stats *s)
{
        char path[128], body[64];
        long status;
        _cleanup_json_ json_t *answer = NULL;
        snprintf(path, sizeof(path), "/v1/sandboxes/%s/fork" WAIT, id);
        snprintf(body, sizeof(body), "{\"count\":%zu}", count);
        double t0 = bench_now_ms();
        int r = bench_client_call(run->c, "POST", path, body, &status, &answer);
        double t1 = bench_now_ms();
        if (r < 0) {
                report(run, "fork");
                bench_stats_error(s);
                return r;
        }
        /* Remember everything it made before judging the answer. */
        json_t *result = json_object_get(json_object_get(answer, "operation"), "result");
        const char *snap_id = json_string_value(json_object_get(result, "snapshot_id"));
        if (snap_id && bench_snaps_add(&run->snaps, snap_id) < 0)
                fprintf(stderr, "space-bench: cannot remember snapshot %s: delete it yourself\n", snap_id);
        json_t *children = json_object_get(answer, "sandboxes"), *child;
        size_t i, running = 0;
        json_array_foreach(children, i, child) {
                const char *cid = json_string_value(json_object_get(child, "id"));
                const char *state = json_string_value(json_object_get(child, "state"));
                if (cid && bench_sandboxes_add(run->set, cid) < 0)
                        fprintf(stderr, "space-bench: cannot remember sandbox %s: destroy it yourself\n", cid);
                if (state && strcmp(state, "running") == 0)
                        running++;
        }
        if (status != 200 || running != count) {
                bench_client_set_error(run->c, status, answer);
                report(run, "fork");
                bench_stats_error(s);
                r = -EPROTO;
        } else {
                bench_stats_add(s, t1 - t0);
                /* A child has the parent's files (untimed check on the first). */
                const char *cid = json_string_value(json_object_get(json_array_get(children, 0), "id"));
                if (exec_shell(run, cid, "test -s /root/big", 60) < 0) {
                        report(run, "fork child check");
                        bench_stats_error(s);
                        r = -EPROTO;
                }
        }
        json_array_foreach(children, i, child) {
                const char *cid = json_string_value(json_object_get(child, "id"));
                if (cid && bench_sandbox_destroy(run->c, run->set, cid) < 0)
                        report(run, "destroy fork child");
        }
        /* The fork's own snapshot goes now; those of the snapshot measure stay until the end. */
        if (snap_id) {
                char copy[BENCH_ID_MAX];
                snprintf(copy, sizeof(copy), "%s", snap_id);
                if (bench_snapshot_delete(run->c, copy) < 0)
                        report(run, "delete fork snapshot");
                else
                        bench_snaps_remove(&run->snaps, copy);
        }
        return r;
}

static void measure_forks(struct hist_run *run, const char *id)
{
        for (size_t i = 0; i < run->cfg->history_n && !bench_stopping; i++)
                one_fork(run, id, 1, stat_of(run, BENCH_HIST_FORK1));
        if (run->cfg->fork_count > 1)
                for (size_t i = 0; i < run->cfg->history_n && !bench_stopping; i++)
                        one_fork(run, id, run->cfg->fork_count, stat_of(run, BENCH_HIST_FORKN));
}

static void name_stats(const struct bench_config *cfg, struct bench_results *res, size_t k)
{
        size_t mb = cfg->history_sizes_mb[k];
        char size[32];
        if (mb >= 1024 && mb % 1024 == 0)
                snprintf(size, sizeof(size), "%zu GiB", mb / 1024);
        else
                snprintf(size, sizeof(size), "%zu MiB", mb);
        static const char *const what[_BENCH_HIST_MAX] = {
                [BENCH_HIST_SNAPSHOT] = "snapshot (wait=true)",
                [BENCH_HIST_PAUSE] = "  pause window (pause_ms)",
                [BENCH_HIST_SNAPSHOT_DIRTY] = "snapshot, %zu MiB unsynced",
                [BENCH_HIST_PAUSE_DIRTY] = "  pause window (pause_ms)",
                [BENCH_HIST_RESTORE] = "restore (wait=true)",
                [BENCH_HIST_FORK1] = "fork count=1 (wait=true)",
                [BENCH_HIST_FORKN] = "fork count=%zu (wait=true)",
                [BENCH_HIST_DELETE] = "snapshot delete",
        };
        for (size_t j = 0; j < _BENCH_HIST_MAX; j++) {
                char w[48];
                size_t arg = j == BENCH_HIST_SNAPSHOT_DIRTY ? cfg->dirty_mb : cfg->fork_count;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
                snprintf(w, sizeof(w), what[j], arg);
#pragma GCC diagnostic pop
                snprintf(hist_names[k][j], sizeof(hist_names[k][j]), "[%s] %s", size, w);
                res->stats[BENCH_HIST_STAT(k, j)].name = hist_names[k][j];
        }
}

/* A sandbox with `mb` MiB of random data in /root/big, synced. */
static int prepare(struct hist_run *run, size_t mb, char *id)
{
        char script[200];
        fprintf(stderr, "space-bench: history: sandbox with %zu MiB of files...\n", mb);
        if (bench_sandbox_create(run->c, run->set, run->cfg->template_name, id, BENCH_ID_MAX) < 0) {
                fprintf(stderr, "space-bench: history create: %s\n", bench_client_error(run->c));
                return -EPROTO;
        }
        snprintf(script, sizeof(script), "dd if=/dev/urandom of=/root/big bs=1M count=%zu 2>/dev/null && sync", mb);
        double t0 = bench_now_ms();
        if (exec_shell(run, id, script, 3600) < 0) {
                fprintf(stderr, "space-bench: writing %zu MiB: %s\n", mb, bench_client_error(run->c));
                return -EPROTO;
        }
        fprintf(stderr, "space-bench: history: wrote %zu MiB in %.1f s\n", mb, (bench_now_ms() - t0) / 1e3);
        return 0;
}

int bench_measure_history(const struct bench_config *cfg, struct bench_sandboxes *set, struct bench_results *res)
{
        struct hist_run run = { .cfg = cfg, .set = set, .res = res };
        int r = bench_client_new(cfg->url, cfg->key, &run.c);
        if (r < 0)
                return r;
        for (size_t k = 0; k < cfg->history_nsizes && k < BENCH_HISTORY_MAX_SIZES && !bench_stopping; k++) {
                char id[BENCH_ID_MAX], first[BENCH_ID_MAX] = "";
                run.size_index = k;
                name_stats(cfg, res, k);
                if (prepare(&run, cfg->history_sizes_mb[k], id) < 0) {
                        bench_stats_error(stat_of(&run, BENCH_HIST_SNAPSHOT));
                        r = -EPROTO;
                        continue;
                }
                fprintf(stderr, "space-bench: history: snapshots...\n");
                measure_snapshots(&run, id, first);
                if (first[0]) {
                        fprintf(stderr, "space-bench: history: restores...\n");
                        measure_restores(&run, id, first);
                }
                fprintf(stderr, "space-bench: history: forks...\n");
                /* Snapshots of the snapshot measure stay until here: forks run with them around. */
                measure_forks(&run, id);
                /* Clean-up runs even after Ctrl-C. */
                sig_atomic_t stopping = bench_stopping;
                bench_stopping = 0;
                bench_snapshot_delete_all(run.c, &run.snaps, stat_of(&run, BENCH_HIST_DELETE));
                if (bench_sandbox_destroy(run.c, set, id) < 0)
                        fprintf(stderr, "space-bench: destroy %s: %s\n", id, bench_client_error(run.c));
                bench_stopping = stopping;
        }
        if (run.snaps.n)
                fprintf(stderr, "space-bench: WARNING: %zu snapshots could not be deleted (first %s)\n", run.snaps.n, run.snaps.ids[0]);
        bench_snaps_release(&run.snaps);
        bench_client_free(run.c);
        return r;
}
