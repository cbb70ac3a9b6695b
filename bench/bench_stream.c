/* bench_stream: the data-plane measures on one sandbox — decoded output throughput of one
 * command and the exec round trip through POST …/commands + GET …/events — then the many
 * streams (bench_stream_fanout.c) and the resumed streams (bench_stream_resume.c). */
#include "bench_stream_parts.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_command.h"
#include "bench_events.h"
#include "cleanup.h"

#define WARMUP 10

int bench_stream_exit_code(const struct bench_sse_event *ev)
{
        const char *p = strstr(ev->data, "\"exit_code\":");
        if (!p)
                return -1;
        p += strlen("\"exit_code\":");
        return *p >= '0' && *p <= '9' ? atoi(p) : -1;
}

struct tp_state {
        unsigned char *buf;
        size_t cap;
        uint64_t bytes, events, dropped;
        size_t min_event, max_event; /* decoded bytes */
        int exit_code; /* -2 until the exit event */
        bool bad;      /* a byte other than NUL, or a payload that did not decode */
};

static bool all_zero(const unsigned char *p, size_t n)
{
        uint64_t acc = 0;
        size_t i = 0;
        for (; i + 8 <= n; i += 8) {
                uint64_t w;
                memcpy(&w, p + i, 8);
                acc |= w;
        }
        for (; i < n; i++)
                acc |= p[i];
        return acc == 0;
}

static int tp_event(void *userdata, const struct bench_sse_event *ev)
{
        struct tp_state *st = userdata;
        if (strcmp(ev->event, "stdout") == 0) {
                const char *b64;
                size_t len;
                if (bench_sse_payload(ev, &b64, &len) < 0) {
                        st->bad = true;
                        return 0;
                }
                size_t need = bench_base64_max(len);
                if (need > st->cap) {
                        unsigned char *g = realloc(st->buf, need);
                        if (!g)
                                return -ENOMEM;
                        st->buf = g;
                        st->cap = need;
                }
                long n = bench_base64_decode(b64, len, st->buf);
                if (n < 0 || !all_zero(st->buf, (size_t)n))
                        st->bad = true;
                else
                        st->bytes += (uint64_t)n;
                if (st->events == 0 || (size_t)n < st->min_event)
                        st->min_event = (size_t)n;
                if ((size_t)n > st->max_event)
                        st->max_event = (size_t)n;
                st->events++;
        } else if (strcmp(ev->event, "dropped") == 0) {
                uint64_t first = 0, last = 0;
                const char *f = strstr(ev->data, "\"first_seq\":"), *l = strstr(ev->data, "\"last_seq\":");
                if (f && l && sscanf(f, "\"first_seq\":%" SCNu64, &first) == 1 && sscanf(l, "\"last_seq\":%" SCNu64, &last) == 1)
                        st->dropped += last - first + 1;
                else
                        st->dropped++;
        } else if (strcmp(ev->event, "exit") == 0) {
                st->exit_code = bench_stream_exit_code(ev);
        }
        return 0;
}

static int compare_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return (x > y) - (x < y);
}

static void measure_throughput(const struct bench_config *cfg, size_t mb, struct bench_client *data, struct bench_events *ev,
                               struct tp_state *st, const char *sandbox_id, const char *token, struct bench_stream_throughput *tp)
{
        uint64_t want = (uint64_t)mb << 20;
        tp->mb = mb;
        char body[128], cid[64];
        /* dd writes 1 MiB at a time (busybox head -c writes small blocks, and is then the
         * bottleneck); its summary goes to /dev/null, not to stderr events. */
        snprintf(body, sizeof(body), "{\"shell\":\"dd if=/dev/zero bs=1048576 count=%zu 2>/dev/null\"}", mb);
        for (size_t i = 0; i < cfg->stream_runs && i < BENCH_STREAM_MAX_RUNS && !bench_stopping; i++) {
                *st = (struct tp_state){ .buf = st->buf, .cap = st->cap, .exit_code = -2 };
                double t0 = bench_now_ms();
                int r = bench_command_start(data, sandbox_id, body, cid, sizeof(cid));
                if (r < 0) {
                        fprintf(stderr, "space-bench: stream: start: %s\n", bench_client_error(data));
                        break;
                }
                r = bench_events_prepare(ev, token, sandbox_id, cid, 0, 0);
                if (r == 0)
                        r = bench_events_run(ev);
                double ms = bench_now_ms() - t0;
                if (r < 0)
                        fprintf(stderr, "space-bench: stream: events of %s: %s (%s)\n", cid, strerror(-r), ev->curl_error);
                size_t k = tp->runs++;
                tp->bytes[k] = st->bytes;
                tp->events[k] = st->events;
                tp->dropped[k] = st->dropped;
                tp->mb_per_s[k] = (double)st->bytes / 1e6 / (ms / 1e3);
                tp->accounted[k] = st->events && st->min_event == st->max_event &&
                                   st->bytes + st->dropped * st->min_event == want;
                bool ok = r == 0 && st->exit_code == 0 && !st->bad && st->bytes == want;
                if (ok)
                        tp->ok++;
                else
                        fprintf(stderr, "space-bench: stream run %zu (%zu MiB): %" PRIu64 " of %" PRIu64 " bytes, exit %d, %" PRIu64
                                        " records dropped%s\n",
                                k + 1, mb, st->bytes, want, st->exit_code, st->dropped, st->bad ? ", bad payload" : "");
        }
        double sorted[BENCH_STREAM_MAX_RUNS];
        memcpy(sorted, tp->mb_per_s, tp->runs * sizeof(double));
        qsort(sorted, tp->runs, sizeof(double), compare_double);
        tp->median_mb_per_s = tp->runs ? (tp->runs % 2 ? sorted[tp->runs / 2]
                                                       : (sorted[tp->runs / 2 - 1] + sorted[tp->runs / 2]) / 2)
                                       : 0;
}

/* One command `true` to its exit event; 0 when it exited 0, with the time the POST took in
 * *ret_start_ms (when not NULL). */
static int exec_true(struct bench_client *data, struct bench_events *ev, struct tp_state *st, const char *sandbox_id,
                     const char *token, double *ret_start_ms)
{
        char cid[64];
        st->exit_code = -2;
        double t0 = bench_now_ms();
        int r = bench_command_start(data, sandbox_id, "{\"cmd\":[\"true\"]}", cid, sizeof(cid));
        if (r < 0)
                return r;
        if (ret_start_ms)
                *ret_start_ms = bench_now_ms() - t0;
        if ((r = bench_events_prepare(ev, token, sandbox_id, cid, 0, 0)) < 0 || (r = bench_events_run(ev)) < 0)
                return r;
        return st->exit_code == 0 ? 0 : -EPROTO;
}

static void measure_exec(const struct bench_config *cfg, struct bench_client *control, struct bench_client *data,
                         struct bench_events *ev, struct tp_state *st, const char *sandbox_id, const char *token,
                         struct bench_results *res)
{
        struct bench_stats *s = &res->stats[BENCH_STAT_STREAM_EXEC];
        for (int i = 0; i < WARMUP && !bench_stopping; i++)
                (void)exec_true(data, ev, st, sandbox_id, token, NULL);
        double start = bench_now_ms();
        for (size_t i = 0; i < cfg->exec_n && !bench_stopping; i++) {
                double t0 = bench_now_ms(), post_ms = 0;
                int r = exec_true(data, ev, st, sandbox_id, token, &post_ms);
                if (r < 0) {
                        if (s->errors == 0)
                                fprintf(stderr, "space-bench: stream exec #%zu: %s (%s)\n", i, strerror(-r),
                                        bench_client_error(data));
                        bench_stats_error(s);
                        continue;
                }
                double ms = bench_now_ms() - t0;
                bench_stats_add(s, ms);
                bench_stats_add(&res->stats[BENCH_STAT_STREAM_EXEC_START], post_ms);
                bench_stats_add(&res->stats[BENCH_STAT_STREAM_EXEC_EVENTS], ms - post_ms);
        }
        s->wall_ms = bench_now_ms() - start;

        /* As the CLI does per invocation: a session, a new data-plane connection, the
         * command, its events, the session deleted. */
        s = &res->stats[BENCH_STAT_STREAM_EXEC_SESSION];
        start = bench_now_ms();
        for (size_t i = 0; i < cfg->exec_n && !bench_stopping; i++) {
                struct bench_session ses = { 0 };
                struct bench_client *c = NULL;
                double t0 = bench_now_ms();
                int r = bench_session_create(control, sandbox_id, &ses);
                if (r == 0 && (r = bench_client_new(cfg->url, ses.token, &c)) == 0) {
                        r = exec_true(c, ev, st, sandbox_id, ses.token, NULL);
                        if (r < 0 && s->errors == 0)
                                fprintf(stderr, "space-bench: stream exec (new session) #%zu: %s (%s)\n", i,
                                        strerror(-r), bench_client_error(c));
                        bench_client_free(c);
                } else if (s->errors == 0) {
                        fprintf(stderr, "space-bench: session #%zu: %s\n", i, bench_client_error(control));
                }
                int d = r == 0 || ses.id[0] ? bench_session_delete(control, sandbox_id, &ses) : 0;
                if (r < 0 || d < 0) {
                        if (d < 0 && s->errors == 0)
                                fprintf(stderr, "space-bench: session delete: %s\n", bench_client_error(control));
                        bench_stats_error(s);
                        continue;
                }
                bench_stats_add(s, bench_now_ms() - t0);
        }
        s->wall_ms = bench_now_ms() - start;
}

int bench_measure_stream(const struct bench_config *cfg, struct bench_sandboxes *set, struct bench_results *res)
{
        struct bench_client *control = NULL, *data = NULL;
        struct bench_events *ev = NULL;
        struct bench_session ses = { 0 };
        struct tp_state st = { 0 };
        char id[BENCH_ID_MAX];
        int r = bench_client_new(cfg->url, cfg->key, &control);
        if (r < 0)
                return r;
        r = bench_sandbox_create(control, set, cfg->template_name, id, sizeof(id));
        if (r < 0) {
                fprintf(stderr, "space-bench: create for the stream measures: %s\n", bench_client_error(control));
                goto out;
        }
        if ((r = bench_session_create(control, id, &ses)) < 0) {
                fprintf(stderr, "space-bench: session: %s\n", bench_client_error(control));
                goto out;
        }
        if ((r = bench_client_new(cfg->url, ses.token, &data)) < 0 || (r = bench_events_new(cfg->url, tp_event, &st, &ev)) < 0)
                goto out;
        char cid[64];
        if ((r = bench_command_start_retry(data, id, "{\"cmd\":[\"true\"]}", cid, sizeof(cid))) < 0) {
                fprintf(stderr, "space-bench: first command in %s: %s\n", id, bench_client_error(data));
                goto out;
        }
        fprintf(stderr, "space-bench: stream: throughput, %zu x %zu MiB and %zu x %zu MiB...\n", cfg->stream_runs,
                cfg->stream_mb, cfg->stream_runs, cfg->stream_exact_mb);
        measure_throughput(cfg, cfg->stream_mb, data, ev, &st, id, ses.token, &res->stream.tp[0]);
        measure_throughput(cfg, cfg->stream_exact_mb, data, ev, &st, id, ses.token, &res->stream.tp[1]);
        fprintf(stderr, "space-bench: stream: exec round trips...\n");
        measure_exec(cfg, control, data, ev, &st, id, ses.token, res);
        fprintf(stderr, "space-bench: stream: %zu streams at once...\n", cfg->streams);
        if (!bench_stopping && bench_stream_fanout(cfg, set, &res->stream.fan) < 0)
                r = -EIO;
        fprintf(stderr, "space-bench: stream: resumed streams...\n");
        if (!bench_stopping && bench_stream_resume(cfg, set, &res->stream.res, &res->stats[BENCH_STAT_STREAM_RESUME_FIRST]) < 0)
                r = -EIO;
out:
        if (ses.id[0])
                (void)bench_session_delete(control, id, &ses);
        bench_events_free(ev);
        bench_client_free(data);
        bench_client_free(control);
        free(st.buf);
        return r < 0 ? r : 0;
}
