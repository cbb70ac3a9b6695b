/* bench_measure: the measures space-bench makes on a running spaced. Each one leaves the
 * sandboxes it made in the set; bench_measure_destroy_all() removes them (timed). */
#pragma once

#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

#include "bench_pool.h"
#include "bench_proc.h"
#include "bench_sandbox.h"
#include "bench_stats.h"
#include "bench_stream.h"

enum bench_measure_kind {
        BENCH_SEQUENTIAL = 1u << 0,
        BENCH_CONCURRENT = 1u << 1,
        BENCH_EXEC = 1u << 2,
        BENCH_DENSITY = 1u << 3,
        BENCH_HISTORY = 1u << 4, /* snapshot, restore, fork (bench_history.c); not in the default set */
        BENCH_STORAGE = 1u << 5, /* pool growth per snapshot (bench_storage.c); not in the default set */
        BENCH_STREAM = 1u << 6,  /* the data plane (bench_stream*.c); not in the default set */
};

#define BENCH_HISTORY_MAX_SIZES 4

struct bench_config {
        const char *url;
        const char *key;
        const char *template_name;
        size_t n;           /* creates per create measure */
        size_t concurrency; /* threads of the concurrent measures */
        size_t exec_n;      /* exec round trips */
        size_t density;     /* sandboxes kept at once */
        unsigned measures;  /* enum bench_measure_kind bits */
        pid_t spaced_pid;   /* 0 when unknown: no memory figures */
        /* history measure */
        size_t history_n;                                 /* samples per history measure */
        size_t history_sizes_mb[BENCH_HISTORY_MAX_SIZES]; /* file data in the measured sandbox */
        size_t history_nsizes;
        size_t fork_count;                                /* children of the "fork count=K" measure */
        size_t dirty_mb;                                  /* unsynced data before a "dirty" snapshot; 0 = skip */
        /* storage measure */
        size_t storage_n;         /* snapshots taken */
        size_t storage_change_mb; /* MiB rewritten before each */
        size_t storage_base_mb;   /* MiB written (and synced) into the sandbox before the first */
        size_t storage_wait_s;    /* deadline for every bytes_exclusive to be filled in; 0 = 60 + n/2 */
        const char *pool;         /* spaced's pool mount point, for its usage; NULL = none */
        /* stream measure (the exec round trip takes exec_n) */
        size_t stream_mb;        /* MiB written by the throughput command */
        size_t stream_exact_mb;  /* the same within the command log's cap */
        size_t stream_runs;      /* throughput runs */
        size_t streams;          /* event streams open at once */
        size_t stream_sandboxes; /* the sandboxes their commands run in */
        size_t resume_lines;     /* lines printed by the resumed command */
        size_t resume_clients;   /* threads following it by reconnecting */
};

/* The history measures, once per file-data size (see bench_history.c). */
enum bench_hist_stat {
        BENCH_HIST_SNAPSHOT,
        BENCH_HIST_PAUSE,
        BENCH_HIST_SNAPSHOT_DIRTY,
        BENCH_HIST_PAUSE_DIRTY,
        BENCH_HIST_RESTORE,
        BENCH_HIST_FORK1,
        BENCH_HIST_FORKN,
        BENCH_HIST_DELETE,
        _BENCH_HIST_MAX,
};

enum bench_stat {
        BENCH_STAT_SEQ_TOTAL,
        BENCH_STAT_SEQ_CREATE,
        BENCH_STAT_SEQ_EXEC,
        BENCH_STAT_CONC_TOTAL,
        BENCH_STAT_CONC_CREATE,
        BENCH_STAT_CONC_EXEC,
        BENCH_STAT_EXEC,
        BENCH_STAT_DENSITY_CREATE,
        BENCH_STAT_DENSITY_EXEC,
        BENCH_STAT_DESTROY,
        BENCH_STAT_STORAGE_WRITE,
        BENCH_STAT_STORAGE_SNAPSHOT,
        BENCH_STAT_STORAGE_PAUSE,
        BENCH_STAT_STORAGE_DELETE,
        BENCH_STAT_STREAM_EXEC,         /* POST commands + GET events to the exit, one session */
        BENCH_STAT_STREAM_EXEC_START,   /* of which the POST */
        BENCH_STAT_STREAM_EXEC_EVENTS,  /* of which the GET …/events to the exit */
        BENCH_STAT_STREAM_EXEC_SESSION, /* the same with a new session each time (created and deleted) */
        BENCH_STAT_STREAM_RESUME_FIRST, /* a resumed stream: connect → its first event */
        BENCH_STAT_HISTORY, /* first of BENCH_HISTORY_MAX_SIZES x _BENCH_HIST_MAX */
        _BENCH_STAT_MAX = BENCH_STAT_HISTORY + BENCH_HISTORY_MAX_SIZES * _BENCH_HIST_MAX,
};

#define BENCH_HIST_STAT(size_index, kind) (BENCH_STAT_HISTORY + (size_index) * _BENCH_HIST_MAX + (kind))

struct bench_density {
        size_t wanted, running, create_errors, exec_errors;
        long spaced_rss_kb_before, spaced_rss_kb, spaced_hwm_kb;
        struct bench_rss agents;
        struct bench_rss charged; /* memory charged to each sandbox's cgroup */
};

struct bench_storage {
        size_t snapshots;                 /* taken and ready */
        struct bench_pool_usage before;   /* the sandbox created, no snapshot yet */
        struct bench_pool_usage after;    /* after the last snapshot */
        struct bench_pool_usage cleaned;  /* snapshots deleted, sandbox destroyed, btrfs cleaned up */
        size_t sized;                     /* snapshots whose bytes_exclusive was filled in */
        long long first_exclusive;        /* the first snapshot's (a full send stream); -1 unknown */
        long long rest_exclusive;         /* sum over the others (incremental streams) */
        long long rest_min, rest_max;     /* smallest and largest of the others */
        size_t rest_sized;                /* how many of the others that sum covers */
        double sizing_wait_s;             /* from the last snapshot until all were sized (or gave up) */
};

struct bench_results {
        struct bench_stats stats[_BENCH_STAT_MAX];
        struct bench_density density;
        struct bench_storage storage;
        struct bench_stream_results stream;
        long spaced_rss_kb_end;
        size_t leftovers; /* sandboxes it could not destroy */
};

/* Set by the signal handler: measures stop early, clean-up still runs. */
extern volatile sig_atomic_t bench_stopping;

void bench_results_init(struct bench_results *res, size_t concurrency);
void bench_results_release(struct bench_results *res);

/* Each returns 0, or -errno when it could not run at all (errors of single requests are
 * counted in the stats instead). */
int bench_measure_sequential(const struct bench_config *cfg, struct bench_sandboxes *set, struct bench_results *res);
int bench_measure_concurrent(const struct bench_config *cfg, struct bench_sandboxes *set, struct bench_results *res);
int bench_measure_exec(const struct bench_config *cfg, struct bench_sandboxes *set, struct bench_results *res);
int bench_measure_density(const struct bench_config *cfg, struct bench_sandboxes *set, struct bench_results *res);
/* Snapshot, restore and fork latencies on a sandbox holding each of cfg->history_sizes_mb of
 * file data; deletes every snapshot it took (bench_history.c). */
int bench_measure_history(const struct bench_config *cfg, struct bench_sandboxes *set, struct bench_results *res);
/* Pool growth per snapshot: one sandbox, storage_n times rewrite storage_change_mb MiB and
 * take a snapshot; sizes from the pool and from bytes_exclusive; then deletes the snapshots and
 * destroys the sandbox (bench_storage.c). */
int bench_measure_storage(const struct bench_config *cfg, struct bench_sandboxes *set, struct bench_results *res);
/* The data plane: stream throughput, exec round trip through streamed commands, cfg->streams
 * event streams at once, resumed streams (bench_stream.c). */
int bench_measure_stream(const struct bench_config *cfg, struct bench_sandboxes *set, struct bench_results *res);
/* Destroys every sandbox in the set, `concurrency` at a time, timing each destroy. */
int bench_measure_destroy_all(const struct bench_config *cfg, struct bench_sandboxes *set, struct bench_results *res);
