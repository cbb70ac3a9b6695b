/* bench_stream_resume: one command prints numbered lines; client threads each follow its
 * events by reconnecting over and over with Last-Event-ID = the last id they saw, cutting
 * every connection after a few events (often in the middle of the next one). Each client's
 * copy must be the whole output, in order: ids contiguous, the lines 0..N-1 once each. */
#include "bench_stream_parts.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_command.h"
#include "bench_events.h"
#include "cleanup.h"

#define MAX_EVENTS_PER_CONNECTION 32
#define DEADLINE_MS 300000.0

struct resume_run {
        const struct bench_config *cfg;
        const char *sandbox_id, *token, *command_id;
        const char *expected; /* "0\n1\n…" */
        size_t expected_len;
        struct bench_stream_resume *ret;
        struct bench_stats *first;
        pthread_mutex_t lock; /* ret */
};

struct resume_client {
        struct resume_run *run;
        char *out;
        size_t out_len, out_cap;
        uint64_t last;      /* last id taken */
        uint64_t events, lost, dup, connections;
        size_t budget;      /* events left on this connection */
        double connect_ms;  /* when this connection began; 0 once its first event came */
        struct resume_sample { uint64_t after; double ms; } *samples; /* connect → first event */
        size_t nsamples, samples_cap;
        unsigned seed;
        bool exited, bad;
};

static int resume_event(void *userdata, const struct bench_sse_event *ev)
{
        struct resume_client *c = userdata;
        if (c->connect_ms > 0) {
                double ms = bench_now_ms() - c->connect_ms;
                bench_stats_add(c->run->first, ms);
                c->connect_ms = 0;
                if (c->nsamples == c->samples_cap) {
                        size_t cap = c->samples_cap ? c->samples_cap * 2 : 1024;
                        struct resume_sample *g = realloc(c->samples, cap * sizeof(*g));
                        if (g) {
                                c->samples = g;
                                c->samples_cap = cap;
                        }
                }
                if (c->nsamples < c->samples_cap)
                        c->samples[c->nsamples++] = (struct resume_sample){ c->last, ms };
        }
        if (ev->id <= c->last) {
                c->dup++;
                return 0;
        }
        if (ev->id != c->last + 1)
                c->lost += ev->id - c->last - 1;
        c->last = ev->id;
        if (strcmp(ev->event, "exit") == 0) {
                c->exited = true;
                if (bench_stream_exit_code(ev) != 0)
                        c->bad = true;
                const char *d = strstr(ev->data, "\"duration_ms\":");
                if (d) {
                        pthread_mutex_lock(&c->run->lock);
                        c->run->ret->command_ms = atof(d + strlen("\"duration_ms\":"));
                        pthread_mutex_unlock(&c->run->lock);
                }
                return -1;
        }
        const char *b64;
        size_t len;
        if (strcmp(ev->event, "stdout") != 0 || bench_sse_payload(ev, &b64, &len) < 0) {
                c->bad = true; /* stderr, dropped, or a payload that is not ours */
        } else {
                size_t need = c->out_len + bench_base64_max(len);
                if (need > c->out_cap) {
                        size_t cap = c->out_cap ? c->out_cap : 1 << 20;
                        while (cap < need)
                                cap *= 2;
                        char *g = realloc(c->out, cap);
                        if (!g)
                                return -ENOMEM;
                        c->out = g;
                        c->out_cap = cap;
                }
                long n = bench_base64_decode(b64, len, (unsigned char *)c->out + c->out_len);
                if (n < 0)
                        c->bad = true;
                else
                        c->out_len += (size_t)n;
        }
        c->events++;
        return --c->budget == 0 ? -1 : 0;
}

static void *resume_client_main(void *arg)
{
        struct resume_client *c = arg;
        struct resume_run *run = c->run;
        struct bench_events *ev = NULL;
        size_t errors = 0;
        if (bench_events_new(run->cfg->url, resume_event, c, &ev) < 0)
                return NULL;
        double t0 = bench_now_ms();
        while (!c->exited && !bench_stopping && errors < 100 && bench_now_ms() - t0 < DEADLINE_MS) {
                c->budget = 1 + (size_t)rand_r(&c->seed) % MAX_EVENTS_PER_CONNECTION;
                int r = bench_events_prepare(ev, run->token, run->sandbox_id, run->command_id, c->last, 0);
                c->connect_ms = bench_now_ms();
                if (r == 0)
                        r = bench_events_run(ev);
                c->connections++;
                if (r < 0) {
                        if (errors++ < 3)
                                fprintf(stderr, "space-bench: resume: connection after id %" PRIu64 ": %s (%s)\n", c->last,
                                        strerror(-r), ev->curl_error);
                }
        }
        bench_events_free(ev);
        bool whole = c->exited && !c->bad && c->lost == 0 && c->dup == 0 && c->out_len == run->expected_len &&
                     memcmp(c->out, run->expected, c->out_len) == 0;
        bool lines_ok = c->out_len == run->expected_len && memcmp(c->out, run->expected, c->out_len) == 0;
        pthread_mutex_lock(&run->lock);
        run->ret->connections += c->connections;
        run->ret->events += c->events;
        run->ret->lost += c->lost;
        run->ret->dup += c->dup;
        run->ret->errors += errors;
        run->ret->complete += whole;
        run->ret->mismatched += !lines_ok;
        pthread_mutex_unlock(&run->lock);
        if (!lines_ok)
                fprintf(stderr, "space-bench: resume: a client's copy is %zu bytes, the output %zu%s\n", c->out_len,
                        run->expected_len, c->exited ? "" : " (no exit event)");
        return NULL;
}

/* "0\n1\n…(n-1)\n", what `seq 0 n-1` prints. */
static char *expected_output(size_t n, size_t *ret_len)
{
        size_t cap = n * 8 + 16, len = 0;
        char *s = malloc(cap);
        if (!s)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                if (len + 24 > cap) {
                        char *g = realloc(s, cap *= 2);
                        if (!g) {
                                free(s);
                                return NULL;
                        }
                        s = g;
                }
                len += (size_t)sprintf(s + len, "%zu\n", i);
        }
        *ret_len = len;
        return s;
}

static int resume_follow(struct resume_run *run)
{
        size_t n = run->cfg->resume_clients;
        _cleanup_free_ struct resume_client *clients = calloc(n, sizeof(*clients));
        _cleanup_free_ pthread_t *tids = calloc(n, sizeof(*tids));
        if (!clients || !tids)
                return -ENOMEM;
        double t0 = bench_now_ms();
        size_t started = 0;
        for (; started < n; started++) {
                clients[started] = (struct resume_client){ .run = run, .seed = (unsigned)(started * 7919 + 1) };
                if (pthread_create(&tids[started], NULL, resume_client_main, &clients[started]) != 0)
                        break;
        }
        for (size_t i = 0; i < started; i++)
                pthread_join(tids[i], NULL);
        run->ret->seconds = (bench_now_ms() - t0) / 1e3;
        /* Does resuming cost more the further into the output it starts? */
        uint64_t top = 1;
        double sum[4] = { 0 };
        size_t count[4] = { 0 };
        for (size_t i = 0; i < started; i++)
                top = clients[i].last > top ? clients[i].last : top;
        for (size_t i = 0; i < started; i++) {
                for (size_t j = 0; j < clients[i].nsamples; j++) {
                        size_t q = (size_t)(clients[i].samples[j].after * 4 / (top + 1));
                        sum[q] += clients[i].samples[j].ms;
                        count[q]++;
                }
                free(clients[i].samples);
                free(clients[i].out);
        }
        for (size_t q = 0; q < 4; q++)
                run->ret->first_ms_by_quarter[q] = count[q] ? sum[q] / (double)count[q] : 0;
        return started ? 0 : -EAGAIN;
}

int bench_stream_resume(const struct bench_config *cfg, struct bench_sandboxes *set, struct bench_stream_resume *ret,
                        struct bench_stats *first)
{
        struct bench_client *control = NULL, *data = NULL;
        struct bench_session ses = { 0 };
        char id[BENCH_ID_MAX], cid[64], body[256];
        size_t len = 0;
        _cleanup_free_ char *expected = expected_output(cfg->resume_lines, &len);
        ret->clients = cfg->resume_clients;
        ret->lines = cfg->resume_lines;
        int r = expected ? bench_client_new(cfg->url, cfg->key, &control) : -ENOMEM;
        if (r < 0)
                return r;
        /* One echo per line: the output comes in many small records, so many events. */
        snprintf(body, sizeof(body), "{\"shell\":\"i=0; while [ $i -lt %zu ]; do echo $i; i=$((i+1)); done\"}",
                 cfg->resume_lines);
        if ((r = bench_sandbox_create(control, set, cfg->template_name, id, sizeof(id))) < 0 ||
            (r = bench_session_create(control, id, &ses)) < 0) {
                fprintf(stderr, "space-bench: resume: %s\n", bench_client_error(control));
                goto out;
        }
        if ((r = bench_client_new(cfg->url, ses.token, &data)) < 0)
                goto out;
        if ((r = bench_command_start_retry(data, id, body, cid, sizeof(cid))) < 0) {
                fprintf(stderr, "space-bench: resume: start: %s\n", bench_client_error(data));
                goto out;
        }
        struct resume_run run = { .cfg = cfg, .sandbox_id = id, .token = ses.token, .command_id = cid,
                                  .expected = expected, .expected_len = len, .ret = ret,
                                  .first = first };
        pthread_mutex_init(&run.lock, NULL);
        r = resume_follow(&run);
        pthread_mutex_destroy(&run.lock);
out:
        if (ses.id[0])
                (void)bench_session_delete(control, id, &ses);
        bench_client_free(data);
        bench_client_free(control);
        return r;
}
