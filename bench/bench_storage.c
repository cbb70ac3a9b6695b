/* bench_storage: what snapshots cost in disk space. One sandbox; storage_n times: rewrite
 * storage_change_mb MiB of random data in it (dd into /root/f<i mod 10>, through exec), then
 * POST /v1/sandboxes/{id}/snapshots?wait=true. Each snapshot keeps the data it saw, so the
 * pool should grow by about the rewritten MiB per snapshot, not by the sandbox's size (which
 * storage_base_mb MiB of random data in /root/base, written first, make larger).
 *
 * Figures: the pool's usage before and after (bench_pool.c: statvfs and `btrfs filesystem
 * usage -b` on the pool mount, after syncfs), the snapshots' bytes_exclusive once spaced has
 * measured them in the background (GET /v1/snapshots, polled until none is null or the
 * deadline), the snapshot latency and pause window, then the usage again once the snapshots
 * are deleted, the sandbox destroyed and btrfs has freed their extents. Every snapshot taken
 * is deleted before the measure returns, also after Ctrl-C. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_measure.h"
#include "bench_snapshot.h"

#include "cleanup.h" /* _cleanup_json_ */
#define SHOWN_ERRORS 5
#define SUBVOLUME_SYNC_TIMEOUT_S 600

static void report(struct bench_client *c, size_t *shown, const char *what)
{
        if ((*shown)++ < SHOWN_ERRORS)
                fprintf(stderr, "space-bench: storage: %s: %s\n", what, bench_client_error(c));
        else if (*shown == SHOWN_ERRORS + 1)
                fprintf(stderr, "space-bench: more storage errors follow; not shown\n");
}

static void sleep_ms(long ms)
{
        struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
}

/* One look at the sandbox's snapshots: counts those of `l` with bytes_exclusive filled in and
 * adds them up into st (the first of `l` apart). Returns how many are still unsized, or -errno. */
static long count_sized(struct bench_client *c, const char *sandbox_id, const struct bench_snaps *l, struct bench_storage *st)
{
        char path[128];
        long status;
        _cleanup_json_ json_t *answer = NULL;
        snprintf(path, sizeof(path), "/v1/snapshots?sandbox_id=%s", sandbox_id);
        int r = bench_client_call(c, "GET", path, NULL, &status, &answer);
        if (r < 0)
                return r;
        if (status != 200 || !json_is_array(json_object_get(answer, "snapshots"))) {
                bench_client_set_error(c, status, answer);
                return -EPROTO;
        }
        st->sized = st->rest_sized = 0;
        st->first_exclusive = -1;
        st->rest_exclusive = st->rest_min = st->rest_max = 0;
        size_t i;
        json_t *snap;
        json_array_foreach(json_object_get(answer, "snapshots"), i, snap) {
                const char *id = json_string_value(json_object_get(snap, "id"));
                json_t *bytes = json_object_get(snap, "bytes_exclusive");
                size_t k = 0;
                while (id && k < l->n && strcmp(l->ids[k], id) != 0)
                        k++;
                if (!id || k == l->n || !json_is_integer(bytes))
                        continue;
                long long b = (long long)json_integer_value(bytes);
                st->sized++;
                if (k == 0) {
                        st->first_exclusive = b;
                        continue;
                }
                if (st->rest_sized == 0 || b < st->rest_min)
                        st->rest_min = b;
                if (b > st->rest_max)
                        st->rest_max = b;
                st->rest_exclusive += b;
                st->rest_sized++;
        }
        return (long)(l->n - st->sized);
}

/* Polls until every snapshot of `l` is sized, or the deadline. */
static void wait_sized(const struct bench_config *cfg, struct bench_client *c, const char *id, const struct bench_snaps *l,
                       struct bench_storage *st)
{
        double wait_s = cfg->storage_wait_s ? (double)cfg->storage_wait_s : 60.0 + (double)l->n / 2.0;
        double t0 = bench_now_ms(), shown = t0;
        long left = -1;
        fprintf(stderr, "space-bench: storage: waiting (at most %.0f s) for spaced to size %zu snapshots...\n", wait_s, l->n);
        while (!bench_stopping) {
                left = count_sized(c, id, l, st);
                if (left < 0) {
                        fprintf(stderr, "space-bench: storage: listing snapshots: %s\n", bench_client_error(c));
                        break;
                }
                if (left == 0 || bench_now_ms() - t0 > wait_s * 1e3)
                        break;
                if (bench_now_ms() - shown > 30e3) {
                        fprintf(stderr, "space-bench: storage: %zu of %zu sized after %.0f s\n", st->sized, l->n,
                                (bench_now_ms() - t0) / 1e3);
                        shown = bench_now_ms();
                }
                sleep_ms(1000);
        }
        st->sizing_wait_s = (bench_now_ms() - t0) / 1e3;
        if (left != 0)
                fprintf(stderr, "space-bench: storage: %zu of %zu snapshots sized when it stopped waiting (%.0f s)\n", st->sized,
                        l->n, st->sizing_wait_s);
}

static void take_all(const struct bench_config *cfg, struct bench_client *c, const char *id, struct bench_snaps *l,
                     struct bench_results *res)
{
        struct bench_stats *write = &res->stats[BENCH_STAT_STORAGE_WRITE];
        struct bench_stats *snap = &res->stats[BENCH_STAT_STORAGE_SNAPSHOT];
        size_t shown = 0;
        double start = bench_now_ms(), last_note = start;
        for (size_t i = 0; i < cfg->storage_n && !bench_stopping; i++) {
                char script[160];
                double ms, pause_ms;
                snprintf(script, sizeof(script), "dd if=/dev/urandom of=/root/f%zu bs=1k count=%zu 2>/dev/null", i % 10,
                         cfg->storage_change_mb * 1024);
                double t0 = bench_now_ms();
                if (bench_sandbox_exec_shell(c, id, script, 600) < 0) {
                        report(c, &shown, "rewrite");
                        bench_stats_error(write);
                        continue;
                }
                bench_stats_add(write, bench_now_ms() - t0);
                if (bench_snapshot_take(c, l, id, &ms, &pause_ms, NULL) < 0) {
                        report(c, &shown, "snapshot");
                        bench_stats_error(snap);
                        continue;
                }
                bench_stats_add(snap, ms);
                bench_stats_add(&res->stats[BENCH_STAT_STORAGE_PAUSE], pause_ms);
                res->storage.snapshots++;
                if (bench_now_ms() - last_note > 30e3) {
                        fprintf(stderr, "space-bench: storage: %zu of %zu snapshots taken\n", i + 1, cfg->storage_n);
                        last_note = bench_now_ms();
                }
        }
        snap->wall_ms = bench_now_ms() - start;
}

int bench_measure_storage(const struct bench_config *cfg, struct bench_sandboxes *set, struct bench_results *res)
{
        struct bench_storage *st = &res->storage;
        struct bench_snaps snaps = { 0 };
        struct bench_client *c = NULL;
        char id[BENCH_ID_MAX];
        st->first_exclusive = -1;
        int r = bench_client_new(cfg->url, cfg->key, &c);
        if (r < 0)
                return r;
        if (bench_sandbox_create(c, set, cfg->template_name, id, sizeof(id)) < 0) {
                fprintf(stderr, "space-bench: storage: create: %s\n", bench_client_error(c));
                bench_client_free(c);
                return -EPROTO;
        }
        if (cfg->storage_base_mb) {
                char script[160];
                snprintf(script, sizeof(script), "dd if=/dev/urandom of=/root/base bs=1M count=%zu 2>/dev/null && sync",
                         cfg->storage_base_mb);
                fprintf(stderr, "space-bench: storage: writing %zu MiB into the sandbox...\n", cfg->storage_base_mb);
                if (bench_sandbox_exec_shell(c, id, script, 3600) < 0)
                        fprintf(stderr, "space-bench: storage: writing the base data: %s\n", bench_client_error(c));
        }
        /* Subvolumes deleted by earlier measures free their space in the background: not
         * during this one. */
        if (cfg->pool && (r = bench_pool_subvolume_sync(cfg->pool, SUBVOLUME_SYNC_TIMEOUT_S)) < 0)
                fprintf(stderr, "space-bench: storage: btrfs subvolume sync: %s\n", strerror(-r));
        if (!cfg->pool)
                fprintf(stderr, "space-bench: storage: no --pool: no pool usage figures, only bytes_exclusive\n");
        else if (bench_pool_usage(cfg->pool, &st->before) < 0)
                fprintf(stderr, "space-bench: storage: no pool usage figures\n");
        fprintf(stderr, "space-bench: storage: %zu snapshots, %zu MiB rewritten before each...\n", cfg->storage_n,
                cfg->storage_change_mb);
        take_all(cfg, c, id, &snaps, res);
        if (st->before.ok)
                bench_pool_usage(cfg->pool, &st->after);
        if (snaps.n && !bench_stopping)
                wait_sized(cfg, c, id, &snaps, st);

        /* Clean-up runs even after Ctrl-C. */
        sig_atomic_t stopping = bench_stopping;
        bench_stopping = 0;
        fprintf(stderr, "space-bench: storage: deleting %zu snapshots...\n", snaps.n);
        size_t failed = bench_snapshot_delete_all(c, &snaps, &res->stats[BENCH_STAT_STORAGE_DELETE]);
        if (failed)
                fprintf(stderr, "space-bench: WARNING: %zu snapshots could not be deleted (first %s)\n", failed, snaps.ids[0]);
        if (bench_sandbox_destroy(c, set, id) < 0)
                fprintf(stderr, "space-bench: storage: destroy %s: %s\n", id, bench_client_error(c));
        if (st->before.ok && !stopping) {
                fprintf(stderr, "space-bench: storage: waiting for btrfs to free the deleted subvolumes...\n");
                if ((r = bench_pool_subvolume_sync(cfg->pool, SUBVOLUME_SYNC_TIMEOUT_S)) < 0)
                        fprintf(stderr, "space-bench: storage: btrfs subvolume sync: %s\n", strerror(-r));
                else
                        bench_pool_usage(cfg->pool, &st->cleaned);
        }
        bench_stopping = stopping;
        bench_snaps_release(&snaps);
        bench_client_free(c);
        return failed ? -EBUSY : 0;
}
