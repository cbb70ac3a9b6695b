/* bench_stream: the data-plane measures ("stream"): output throughput of one streamed
 * command, the exec round trip through POST …/commands + GET …/events, many event streams
 * open at once (bench_stream_fanout.c) and a storm of resumed streams
 * (bench_stream_resume.c). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define BENCH_STREAM_MAX_RUNS 16

struct bench_stream_throughput {
        size_t mb;                                 /* MiB written per run */
        size_t runs, ok;                           /* runs made; runs whose byte count was exact */
        double mb_per_s[BENCH_STREAM_MAX_RUNS];    /* decoded output, 10^6 bytes per second */
        uint64_t bytes[BENCH_STREAM_MAX_RUNS];     /* decoded bytes received */
        uint64_t events[BENCH_STREAM_MAX_RUNS];    /* stdout events */
        uint64_t dropped[BENCH_STREAM_MAX_RUNS];   /* records the log dropped before they were read */
        /* when every stdout event had one size: bytes + dropped x that size == the output */
        bool accounted[BENCH_STREAM_MAX_RUNS];
        double median_mb_per_s;
};

struct bench_stream_fanout {
        size_t wanted, sandboxes;
        size_t started;              /* commands started */
        size_t connected;            /* streams that received their first bytes */
        size_t lines, exits;         /* streams that got the line, an exit with code 0 */
        size_t errors;               /* failed starts, stdin writes, streams */
        uint64_t id_gaps;            /* events whose id was not the previous + 1 */
        double start_s, connect_s, release_s; /* starting the commands; connecting all; stdin → all exits */
        long rss_kb_before, threads_before;   /* spaced before the streams */
        long rss_kb_connected, threads_connected;
        long rss_kb_after, threads_after;     /* after every stream ended */
        long hwm_kb;                          /* spaced's VmHWM at the end (its peak since start) */
};

struct bench_stream_resume {
        size_t clients, lines;
        size_t complete;       /* clients whose copy was exactly the output */
        uint64_t connections;  /* connections made (the first of each client included) */
        uint64_t events;       /* output events received, over all clients */
        uint64_t lost, dup;    /* ids skipped, ids received again */
        uint64_t mismatched;   /* clients whose decoded output was not 0..N-1 */
        size_t errors;         /* failed connections */
        double seconds;
        double command_ms;     /* the command's duration_ms (its exit event) */
        double first_ms_by_quarter[4]; /* mean connect → first event, by the quarter of the ids it resumed at */
};

struct bench_stream_results {
        /* [0]: stream_mb, more than the command log keeps (64 MiB by default): the writer
         * outruns the reader, which may get `dropped` events. [1]: stream_exact_mb, within
         * the log: the count must be exact. */
        struct bench_stream_throughput tp[2];
        struct bench_stream_fanout fan;
        struct bench_stream_resume res;
};
