/* bench_measure: every measure is a number of jobs run by one or more threads; each thread
 * owns one bench_client (one keep-alive connection). */
#include "bench_measure.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cleanup.h"

#define FIRST_EXEC_DEADLINE_MS 10000.0
#define ERRORS_SHOWN 5

_Static_assert(BENCH_ID_MAX == 64, "bench_proc_cgroup_memory() takes 64-byte ids");

volatile sig_atomic_t bench_stopping;

static char stat_names[_BENCH_STAT_MAX][64];

void bench_results_init(struct bench_results *res, size_t concurrency)
{
        static const char *const names[_BENCH_STAT_MAX] = {
                [BENCH_STAT_SEQ_TOTAL] = "create->first exec, sequential",
                [BENCH_STAT_SEQ_CREATE] = "  create (wait=true)",
                [BENCH_STAT_SEQ_EXEC] = "  first exec",
                [BENCH_STAT_CONC_TOTAL] = "create->first exec, %zu parallel",
                [BENCH_STAT_CONC_CREATE] = "  create (wait=true)",
                [BENCH_STAT_CONC_EXEC] = "  first exec",
                [BENCH_STAT_EXEC] = "exec round trip (true)",
                [BENCH_STAT_DENSITY_CREATE] = "density: create, %zu parallel",
                [BENCH_STAT_DENSITY_EXEC] = "density: exec with all running",
                [BENCH_STAT_DESTROY] = "destroy (wait=true), %zu parallel",
                [BENCH_STAT_STORAGE_WRITE] = "storage: rewrite (dd, exec)",
                [BENCH_STAT_STORAGE_SNAPSHOT] = "storage: snapshot (wait=true)",
                [BENCH_STAT_STORAGE_PAUSE] = "  pause window (pause_ms)",
                [BENCH_STAT_STORAGE_DELETE] = "storage: snapshot delete",
                [BENCH_STAT_STREAM_EXEC] = "stream: exec round trip (true)",
                [BENCH_STAT_STREAM_EXEC_START] = "  POST commands",
                [BENCH_STAT_STREAM_EXEC_EVENTS] = "  GET events to the exit",
                [BENCH_STAT_STREAM_EXEC_SESSION] = "  with a new session each",
                [BENCH_STAT_STREAM_RESUME_FIRST] = "stream: resume -> first event",
        };
        memset(res, 0, sizeof(*res));
        for (size_t i = 0; i < _BENCH_STAT_MAX; i++) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
                /* The history measures name theirs when they run (bench_history.c). */
                snprintf(stat_names[i], sizeof(stat_names[i]), names[i] ? names[i] : "", concurrency);
#pragma GCC diagnostic pop
                bench_stats_init(&res->stats[i], stat_names[i]);
        }
}

void bench_results_release(struct bench_results *res)
{
        for (size_t i = 0; i < _BENCH_STAT_MAX; i++)
                bench_stats_release(&res->stats[i]);
}

struct bench_run;
typedef void (*bench_job_fn)(struct bench_run *run, struct bench_client *c, size_t index);

struct bench_run {
        const struct bench_config *cfg;
        struct bench_sandboxes *set;
        struct bench_results *res;
        bench_job_fn job;
        size_t jobs;
        atomic_size_t next;
        atomic_size_t shown; /* errors printed so far */
        char (*ids)[BENCH_ID_MAX]; /* for jobs over existing sandboxes */
};

static void report_error(struct bench_run *run, const char *what, struct bench_client *c)
{
        size_t shown = atomic_fetch_add(&run->shown, 1);
        if (shown < ERRORS_SHOWN)
                fprintf(stderr, "space-bench: %s: %s\n", what, bench_client_error(c));
        else if (shown == ERRORS_SHOWN)
                fprintf(stderr, "space-bench: more errors follow; not shown\n");
}

static void *worker_main(void *arg)
{
        struct bench_run *run = arg;
        struct bench_client *c = NULL;
        int r = bench_client_new(run->cfg->url, run->cfg->key, &c);
        if (r < 0) {
                fprintf(stderr, "space-bench: cannot make an HTTP client: %s\n", strerror(-r));
                return NULL;
        }
        size_t i;
        while (!bench_stopping && (i = atomic_fetch_add(&run->next, 1)) < run->jobs)
                run->job(run, c, i);
        bench_client_free(c);
        return NULL;
}

/* Runs run->jobs jobs on `threads` threads; returns the wall time in ms, or -errno. */
static double run_parallel(struct bench_run *run, size_t threads)
{
        if (threads > run->jobs)
                threads = run->jobs ? run->jobs : 1;
        _cleanup_free_ pthread_t *tids = calloc(threads, sizeof(*tids));
        if (!tids)
                return -ENOMEM;
        double start = bench_now_ms();
        size_t started = 0;
        for (; started < threads; started++)
                if (pthread_create(&tids[started], NULL, worker_main, run) != 0)
                        break;
        for (size_t i = 0; i < started; i++)
                pthread_join(tids[i], NULL);
        return started ? bench_now_ms() - start : -EAGAIN;
}

/* Create, then exec `true` until the first success: the latency a user sees. */
static int create_then_first_exec(struct bench_run *run, struct bench_client *c, enum bench_stat total)
{
        char id[BENCH_ID_MAX];
        double t0 = bench_now_ms();
        int r = bench_sandbox_create(c, run->set, run->cfg->template_name, id, sizeof(id));
        double t1 = bench_now_ms();
        if (r < 0) {
                report_error(run, "create", c);
                return r;
        }
        do
                r = bench_sandbox_exec_true(c, id);
        while (r == -EAGAIN && !bench_stopping && bench_now_ms() - t1 < FIRST_EXEC_DEADLINE_MS);
        double t2 = bench_now_ms();
        if (r < 0) {
                report_error(run, "first exec", c);
                return r;
        }
        bench_stats_add(&run->res->stats[total], t2 - t0);
        bench_stats_add(&run->res->stats[total + 1], t1 - t0);
        bench_stats_add(&run->res->stats[total + 2], t2 - t1);
        return 0;
}

static void job_sequential(struct bench_run *run, struct bench_client *c, size_t index)
{
        if (create_then_first_exec(run, c, BENCH_STAT_SEQ_TOTAL) < 0)
                bench_stats_error(&run->res->stats[BENCH_STAT_SEQ_TOTAL]);
}

static void job_concurrent(struct bench_run *run, struct bench_client *c, size_t index)
{
        if (create_then_first_exec(run, c, BENCH_STAT_CONC_TOTAL) < 0)
                bench_stats_error(&run->res->stats[BENCH_STAT_CONC_TOTAL]);
}

static int measure(const struct bench_config *cfg, struct bench_sandboxes *set, struct bench_results *res, bench_job_fn job,
                   size_t jobs, size_t threads, char (*ids)[BENCH_ID_MAX], enum bench_stat wall)
{
        struct bench_run run = { .cfg = cfg, .set = set, .res = res, .job = job, .jobs = jobs, .ids = ids };
        double ms = run_parallel(&run, threads);
        if (ms < 0)
                return (int)ms;
        res->stats[wall].wall_ms += ms;
        return 0;
}

int bench_measure_sequential(const struct bench_config *cfg, struct bench_sandboxes *set, struct bench_results *res)
{
        return measure(cfg, set, res, job_sequential, cfg->n, 1, NULL, BENCH_STAT_SEQ_TOTAL);
}

int bench_measure_concurrent(const struct bench_config *cfg, struct bench_sandboxes *set, struct bench_results *res)
{
        return measure(cfg, set, res, job_concurrent, cfg->n, cfg->concurrency, NULL, BENCH_STAT_CONC_TOTAL);
}

int bench_measure_exec(const struct bench_config *cfg, struct bench_sandboxes *set, struct bench_results *res)
{
        struct bench_client *c = NULL;
        struct bench_stats *s = &res->stats[BENCH_STAT_EXEC];
        char id[BENCH_ID_MAX];
        int r = bench_client_new(cfg->url, cfg->key, &c);
        if (r < 0)
                return r;
        r = bench_sandbox_create(c, set, cfg->template_name, id, sizeof(id));
        if (r < 0) {
                fprintf(stderr, "space-bench: create for the exec measure: %s\n", bench_client_error(c));
                goto out;
        }
        for (int i = 0; i < 10 && !bench_stopping; i++) /* warm up: first exec, connection, caches */
                if (bench_sandbox_exec_true(c, id) < 0 && i == 0)
                        fprintf(stderr, "space-bench: first exec in %s: %s\n", id, bench_client_error(c));
        double start = bench_now_ms();
        for (size_t i = 0; i < cfg->exec_n && !bench_stopping; i++) {
                double t0 = bench_now_ms();
                if (bench_sandbox_exec_true(c, id) < 0) {
                        if (s->errors == 0) {
                                char what[256] = "";
                                fprintf(stderr, "space-bench: exec #%zu in %s: %s\n", i, id, bench_client_error(c));
                                if (bench_sandbox_describe(c, id, what, sizeof(what)) == 0)
                                        fprintf(stderr, "space-bench: %s is now: %s\n", id, what);
                        }
                        bench_stats_error(s);
                        continue;
                }
                bench_stats_add(s, bench_now_ms() - t0);
        }
        s->wall_ms = bench_now_ms() - start;
        r = 0;
out:
        bench_client_free(c);
        return r;
}

static void job_density_create(struct bench_run *run, struct bench_client *c, size_t index)
{
        char id[BENCH_ID_MAX];
        double t0 = bench_now_ms();
        if (bench_sandbox_create(c, run->set, run->cfg->template_name, id, sizeof(id)) < 0) {
                report_error(run, "density create", c);
                bench_stats_error(&run->res->stats[BENCH_STAT_DENSITY_CREATE]);
                return;
        }
        bench_stats_add(&run->res->stats[BENCH_STAT_DENSITY_CREATE], bench_now_ms() - t0);
}

static void job_density_exec(struct bench_run *run, struct bench_client *c, size_t index)
{
        double t0 = bench_now_ms();
        if (bench_sandbox_exec_true(c, run->ids[index]) < 0) {
                report_error(run, "density exec", c);
                bench_stats_error(&run->res->stats[BENCH_STAT_DENSITY_EXEC]);
                return;
        }
        bench_stats_add(&run->res->stats[BENCH_STAT_DENSITY_EXEC], bench_now_ms() - t0);
}

int bench_measure_density(const struct bench_config *cfg, struct bench_sandboxes *set, struct bench_results *res)
{
        struct bench_density *d = &res->density;
        long hwm;
        d->wanted = cfg->density;
        if (cfg->spaced_pid > 0)
                bench_proc_rss(cfg->spaced_pid, &d->spaced_rss_kb_before, &hwm);
        /* Only the sandboxes made here are probed and counted. */
        _cleanup_free_ char(*before)[BENCH_ID_MAX] = NULL;
        size_t nbefore;
        int r = bench_sandboxes_snapshot(set, &before, &nbefore);
        if (r < 0)
                return r;
        r = measure(cfg, set, res, job_density_create, cfg->density, cfg->concurrency, NULL, BENCH_STAT_DENSITY_CREATE);
        if (r < 0)
                return r;
        _cleanup_free_ char(*all)[BENCH_ID_MAX] = NULL;
        size_t nall, nmine = 0;
        if ((r = bench_sandboxes_snapshot(set, &all, &nall)) < 0)
                return r;
        for (size_t i = 0; i < nall; i++) {
                bool old = false;
                for (size_t j = 0; j < nbefore && !old; j++)
                        old = strcmp(all[i], before[j]) == 0;
                if (!old)
                        memcpy(all[nmine++], all[i], BENCH_ID_MAX);
        }
        /* One exec each, one at a time: every sandbox must answer while all are up. */
        r = measure(cfg, set, res, job_density_exec, nmine, 1, all, BENCH_STAT_DENSITY_EXEC);
        if (r < 0)
                return r;
        d->create_errors = res->stats[BENCH_STAT_DENSITY_CREATE].errors;
        d->exec_errors = res->stats[BENCH_STAT_DENSITY_EXEC].errors;
        d->running = res->stats[BENCH_STAT_DENSITY_EXEC].n;
        struct timespec settle = { .tv_sec = 1 };
        nanosleep(&settle, NULL);
        if (cfg->spaced_pid > 0)
                bench_proc_rss(cfg->spaced_pid, &d->spaced_rss_kb, &d->spaced_hwm_kb);
        bench_proc_cgroup_memory(all, nmine, &d->charged);
        return bench_proc_agents_rss(bench_sandboxes_contains, set, &d->agents);
}

static void job_destroy(struct bench_run *run, struct bench_client *c, size_t index)
{
        double t0 = bench_now_ms();
        if (bench_sandbox_destroy(c, run->set, run->ids[index]) < 0) {
                report_error(run, "destroy", c);
                bench_stats_error(&run->res->stats[BENCH_STAT_DESTROY]);
                return;
        }
        bench_stats_add(&run->res->stats[BENCH_STAT_DESTROY], bench_now_ms() - t0);
}

int bench_measure_destroy_all(const struct bench_config *cfg, struct bench_sandboxes *set, struct bench_results *res)
{
        _cleanup_free_ char(*ids)[BENCH_ID_MAX] = NULL;
        size_t n;
        int r = bench_sandboxes_snapshot(set, &ids, &n);
        if (r < 0)
                return r;
        /* Clean-up runs even after Ctrl-C. */
        sig_atomic_t stopping = bench_stopping;
        bench_stopping = 0;
        r = n ? measure(cfg, set, res, job_destroy, n, cfg->concurrency, ids, BENCH_STAT_DESTROY) : 0;
        bench_stopping = stopping;
        res->leftovers = set->n;
        return r;
}
