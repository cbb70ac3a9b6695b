#include "bench_report.h"

#include "bench_stream_parts.h"

#include <errno.h>
#include <unistd.h>

#define MIB (1024.0 * 1024.0)

static void print_usage(const char *what, const struct bench_pool_usage *u)
{
        printf("  %-38s used %9.1f MiB (data %9.1f, metadata %7.1f x%.0f); statvfs used %9.1f MiB\n", what,
               (double)u->raw_used / MIB, (double)u->data_used / MIB, (double)u->metadata_used / MIB, u->metadata_ratio,
               (double)u->statfs_used / MIB);
}

static void print_growth(const char *what, int64_t from, int64_t to, size_t n)
{
        double d = (double)(to - from);
        if (n)
                printf("  %-38s %+9.1f MiB, %+8.1f KiB per snapshot\n", what, d / MIB, d / 1024.0 / (double)n);
        else
                printf("  %-38s %+9.1f MiB\n", what, d / MIB);
}

static void print_storage(const struct bench_config *cfg, const struct bench_storage *st)
{
        printf("\nstorage: %zu of %zu snapshots of one sandbox holding %zu MiB of its own data, each after rewriting "
               "%zu MiB (pool %s)\n",
               st->snapshots, cfg->storage_n, cfg->storage_base_mb, cfg->storage_change_mb,
               cfg->pool ? cfg->pool : "unknown: no --pool");
        if (st->before.ok && st->after.ok) {
                printf("pool usage after syncfs, `btrfs filesystem usage -b` (used = data + metadata x ratio):\n");
                print_usage("before the first snapshot:", &st->before);
                print_usage("after the last:", &st->after);
                print_growth("growth, btrfs used:", st->before.raw_used, st->after.raw_used, st->snapshots);
                print_growth("  of which data:", st->before.data_used, st->after.data_used, st->snapshots);
                print_growth("  of which metadata (one copy):", st->before.metadata_used, st->after.metadata_used,
                             st->snapshots);
                print_growth("growth, statvfs used:", st->before.statfs_used, st->after.statfs_used, st->snapshots);
                if (st->cleaned.ok) {
                        print_usage("snapshots deleted, sandbox destroyed:", &st->cleaned);
                        print_growth("against before:", st->before.raw_used, st->cleaned.raw_used, 0);
                }
        }
        printf("bytes_exclusive (GET /v1/snapshots): %zu of %zu sized, %.0f s after the last snapshot\n", st->sized,
               st->snapshots, st->sizing_wait_s);
        if (st->first_exclusive >= 0)
                printf("  first snapshot (full send stream): %.1f MiB\n", (double)st->first_exclusive / MIB);
        if (st->rest_sized)
                printf("  the other %zu (incremental): sum %.1f MiB, avg %.1f KiB, min %.1f KiB, max %.1f KiB\n",
                       st->rest_sized, (double)st->rest_exclusive / MIB,
                       (double)st->rest_exclusive / 1024.0 / (double)st->rest_sized, (double)st->rest_min / 1024.0,
                       (double)st->rest_max / 1024.0);
}

static json_t *usage_json(const struct bench_pool_usage *u)
{
        if (!u->ok)
                return json_null();
        return json_pack("{s:I, s:I, s:I, s:I, s:f}", "btrfs_used", (json_int_t)u->raw_used, "data_used",
                         (json_int_t)u->data_used, "metadata_used", (json_int_t)u->metadata_used, "statfs_used",
                         (json_int_t)u->statfs_used, "metadata_ratio", u->metadata_ratio);
}

static json_t *storage_json(const struct bench_config *cfg, const struct bench_storage *st)
{
        return json_pack("{s:I, s:I, s:I, s:I, s:s?, s:o, s:o, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:f}", "n",
                         (json_int_t)cfg->storage_n, "change_mb", (json_int_t)cfg->storage_change_mb, "base_mb", (json_int_t)cfg->storage_base_mb, "snapshots",
                         (json_int_t)st->snapshots, "pool", cfg->pool, "before", usage_json(&st->before), "after",
                         usage_json(&st->after), "cleaned", usage_json(&st->cleaned), "sized", (json_int_t)st->sized,
                         "first_bytes_exclusive", (json_int_t)st->first_exclusive, "rest_bytes_exclusive",
                         (json_int_t)st->rest_exclusive, "rest_sized", (json_int_t)st->rest_sized, "rest_min",
                         (json_int_t)st->rest_min, "rest_max", (json_int_t)st->rest_max, "sizing_wait_s",
                         st->sizing_wait_s);
}

void bench_report_text(const struct bench_config *cfg, struct bench_results *res, const struct utsname *u)
{
        printf("space-bench: %s template=%s n=%zu c=%zu exec-n=%zu density=%zu\n", cfg->url, cfg->template_name, cfg->n,
               cfg->concurrency, cfg->exec_n, cfg->density);
        if (cfg->measures & BENCH_HISTORY) {
                printf("history: n=%zu sizes=", cfg->history_n);
                for (size_t i = 0; i < cfg->history_nsizes; i++)
                        printf("%s%zu", i ? "," : "", cfg->history_sizes_mb[i]);
                printf(" MiB fork-count=%zu dirty-mb=%zu\n", cfg->fork_count, cfg->dirty_mb);
        }
        printf("machine: %ld cpus, %s %s %s, spaced pid %d\n\n", sysconf(_SC_NPROCESSORS_ONLN), u->sysname, u->release,
               u->machine, (int)cfg->spaced_pid);
        bench_stats_print_header();
        for (size_t i = 0; i < _BENCH_STAT_MAX; i++)
                if (res->stats[i].n || res->stats[i].errors)
                        bench_stats_print(&res->stats[i]);
        if (cfg->measures & BENCH_DENSITY) {
                const struct bench_density *d = &res->density;
                printf("\ndensity: %zu wanted, %zu answered an exec with all up; %zu create errors, %zu exec errors\n", d->wanted,
                       d->running, d->create_errors, d->exec_errors);
                printf("spaced VmRSS: %.1f MiB before, %.1f MiB with them up (VmHWM %.1f MiB), %.1f MiB after destroy\n",
                       d->spaced_rss_kb_before / 1024.0, d->spaced_rss_kb / 1024.0, d->spaced_hwm_kb / 1024.0,
                       res->spaced_rss_kb_end / 1024.0);
                printf("space-agent VmRSS: %zu processes, sum %.1f MiB, avg %.0f KiB, min %ld KiB, max %ld KiB\n",
                       d->agents.count, d->agents.sum_kb / 1024.0,
                       d->agents.count ? (double)d->agents.sum_kb / (double)d->agents.count : 0.0, d->agents.min_kb,
                       d->agents.max_kb);
                printf("memory charged to the sandboxes' cgroups (page cache included): %zu cgroups, sum %.1f MiB, "
                       "avg %.0f KiB, max %ld KiB\n",
                       d->charged.count, d->charged.sum_kb / 1024.0,
                       d->charged.count ? (double)d->charged.sum_kb / (double)d->charged.count : 0.0, d->charged.max_kb);
        }
        if (cfg->measures & BENCH_STORAGE)
                print_storage(cfg, &res->storage);
        if (cfg->measures & BENCH_STREAM)
                bench_stream_report_text(cfg, &res->stream);
        if (bench_stopping)
                printf("\ninterrupted: the figures above are partial\n");
        if (res->leftovers)
                printf("\nWARNING: %zu sandboxes could not be destroyed\n", res->leftovers);
}

int bench_report_json(const struct bench_config *cfg, struct bench_results *res, const struct utsname *u, FILE *f)
{
        json_t *measures = json_array();
        for (size_t i = 0; i < _BENCH_STAT_MAX; i++)
                if (res->stats[i].n || res->stats[i].errors)
                        json_array_append_new(measures, bench_stats_json(&res->stats[i]));
        const struct bench_density *d = &res->density;
        json_t *out = json_pack(
                "{s:{s:I, s:s, s:s}, s:{s:s, s:s, s:I, s:I, s:I, s:I, s:I}, s:o, "
                "s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:{s:I, s:I, s:I, s:I}, s:{s:I, s:I, s:I, s:I}}, s:I}",
                "machine", "nproc", (json_int_t)sysconf(_SC_NPROCESSORS_ONLN), "kernel", u->release, "arch", u->machine,
                "config", "url", cfg->url, "template", cfg->template_name, "n", (json_int_t)cfg->n, "concurrency",
                (json_int_t)cfg->concurrency, "exec_n", (json_int_t)cfg->exec_n, "density", (json_int_t)cfg->density,
                "spaced_pid", (json_int_t)cfg->spaced_pid, "measures", measures, "density", "wanted", (json_int_t)d->wanted,
                "running", (json_int_t)d->running, "create_errors", (json_int_t)d->create_errors, "exec_errors",
                (json_int_t)d->exec_errors, "spaced_rss_kb_before", (json_int_t)d->spaced_rss_kb_before, "spaced_rss_kb",
                (json_int_t)d->spaced_rss_kb, "spaced_hwm_kb", (json_int_t)d->spaced_hwm_kb, "spaced_rss_kb_end",
                (json_int_t)res->spaced_rss_kb_end, "agents", "count", (json_int_t)d->agents.count, "sum_kb",
                (json_int_t)d->agents.sum_kb, "min_kb", (json_int_t)d->agents.min_kb, "max_kb", (json_int_t)d->agents.max_kb,
                "charged", "count", (json_int_t)d->charged.count, "sum_kb", (json_int_t)d->charged.sum_kb, "min_kb",
                (json_int_t)d->charged.min_kb, "max_kb", (json_int_t)d->charged.max_kb, "leftovers", (json_int_t)res->leftovers);
        if (!out) {
                fprintf(stderr, "space-bench: cannot format the JSON report\n");
                return -ENOMEM;
        }
        if (cfg->measures & BENCH_HISTORY) {
                json_t *sizes = json_array();
                for (size_t i = 0; i < cfg->history_nsizes; i++)
                        json_array_append_new(sizes, json_integer((json_int_t)cfg->history_sizes_mb[i]));
                json_object_set_new(json_object_get(out, "config"), "history",
                                    json_pack("{s:I, s:o, s:I, s:I}", "n", (json_int_t)cfg->history_n, "sizes_mb", sizes,
                                              "fork_count", (json_int_t)cfg->fork_count, "dirty_mb", (json_int_t)cfg->dirty_mb));
        }
        if (cfg->measures & BENCH_STORAGE)
                json_object_set_new(out, "storage", storage_json(cfg, &res->storage));
        if (cfg->measures & BENCH_STREAM)
                json_object_set_new(out, "stream", bench_stream_report_json(cfg, &res->stream));
        int r = json_dumpf(out, f, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
        fputc('\n', f);
        json_decref(out);
        return r < 0 ? -EIO : 0;
}

