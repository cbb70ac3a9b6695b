#include "bench_stats.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double bench_now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void bench_stats_init(struct bench_stats *s, const char *name)
{
        memset(s, 0, sizeof(*s));
        s->name = name;
        pthread_mutex_init(&s->lock, NULL);
}

void bench_stats_release(struct bench_stats *s)
{
        free(s->ms);
        s->ms = NULL;
        s->n = s->cap = 0;
        pthread_mutex_destroy(&s->lock);
}

int bench_stats_add(struct bench_stats *s, double ms)
{
        int r = 0;
        pthread_mutex_lock(&s->lock);
        if (s->n == s->cap) {
                size_t cap = s->cap ? s->cap * 2 : 256;
                double *grown = realloc(s->ms, cap * sizeof(*grown));
                if (!grown) {
                        r = -ENOMEM;
                        goto out;
                }
                s->ms = grown;
                s->cap = cap;
        }
        s->ms[s->n++] = ms;
out:
        pthread_mutex_unlock(&s->lock);
        return r;
}

void bench_stats_error(struct bench_stats *s)
{
        pthread_mutex_lock(&s->lock);
        s->errors++;
        pthread_mutex_unlock(&s->lock);
}

static int compare_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return (x > y) - (x < y);
}

/* Nearest rank: the smallest sample with at least p% of the samples at or below it. */
static double percentile(const double *sorted, size_t n, size_t p)
{
        size_t rank = (p * n + 99) / 100;
        return sorted[rank ? rank - 1 : 0];
}

void bench_stats_summarize(struct bench_stats *s, struct bench_summary *ret)
{
        struct bench_summary sum = { 0 };
        pthread_mutex_lock(&s->lock);
        sum.n = s->n;
        sum.errors = s->errors;
        if (s->n > 0) {
                qsort(s->ms, s->n, sizeof(*s->ms), compare_double);
                double total = 0;
                for (size_t i = 0; i < s->n; i++)
                        total += s->ms[i];
                sum.min = s->ms[0];
                sum.mean = total / (double)s->n;
                sum.p50 = percentile(s->ms, s->n, 50);
                sum.p95 = percentile(s->ms, s->n, 95);
                sum.p99 = percentile(s->ms, s->n, 99);
                sum.max = s->ms[s->n - 1];
        }
        if (s->wall_ms > 0)
                sum.per_s = (double)s->n / (s->wall_ms / 1e3);
        pthread_mutex_unlock(&s->lock);
        *ret = sum;
}

void bench_stats_print_header(void)
{
        printf("%-34s %6s %5s %8s %8s %8s %8s %8s %8s\n", "measure (ms)", "n", "err", "min", "mean", "p50", "p95", "p99",
               "max");
}

void bench_stats_print(struct bench_stats *s)
{
        struct bench_summary m;
        bench_stats_summarize(s, &m);
        printf("%-34s %6zu %5zu %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f", s->name, m.n, m.errors, m.min, m.mean, m.p50, m.p95,
               m.p99, m.max);
        if (m.per_s > 0)
                printf("  (%.1f/s)", m.per_s);
        printf("\n");
}

json_t *bench_stats_json(struct bench_stats *s)
{
        struct bench_summary m;
        bench_stats_summarize(s, &m);
        return json_pack("{s:s, s:I, s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "name", s->name, "n", (json_int_t)m.n,
                         "errors", (json_int_t)m.errors, "min_ms", m.min, "mean_ms", m.mean, "p50_ms", m.p50, "p95_ms",
                         m.p95, "p99_ms", m.p99, "max_ms", m.max, "per_s", m.per_s);
}
