/* bench_stats: the latency samples of one measure (milliseconds), filled by several threads,
 * and their summary (percentiles by nearest rank). */
#pragma once

#include <jansson.h>
#include <pthread.h>
#include <stddef.h>

struct bench_stats {
        const char *name;
        pthread_mutex_t lock;
        double *ms;
        size_t n, cap;
        size_t errors;
        double wall_ms; /* wall time of the whole measure, for throughput */
};

struct bench_summary {
        size_t n, errors;
        double min, mean, p50, p95, p99, max;
        double per_s; /* samples per second of wall time, 0 when unknown */
};

void bench_stats_init(struct bench_stats *s, const char *name);
void bench_stats_release(struct bench_stats *s);
/* Thread-safe. Returns 0 or -ENOMEM. */
int bench_stats_add(struct bench_stats *s, double ms);
void bench_stats_error(struct bench_stats *s);
/* Sorts the samples; all figures are 0 without samples. */
void bench_stats_summarize(struct bench_stats *s, struct bench_summary *ret);

void bench_stats_print_header(void);
void bench_stats_print(struct bench_stats *s);
/* A JSON object {"name", "n", "errors", "p50_ms", ...}; NULL on allocation failure. */
json_t *bench_stats_json(struct bench_stats *s);

/* Milliseconds on the monotonic clock. */
double bench_now_ms(void);
