/* bench_stream_fanout: many event streams open at once on one spaced. The commands wait on
 * stdin (`read line`), so every stream stays open and idle (keepalives every second) until
 * it is released; all streams are driven by one curl multi handle on this thread. */
#include "bench_stream_parts.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_command.h"
#include "bench_events.h"
#include "cleanup.h"

#define COMMAND "{\"shell\":\"read line; echo got:$line\",\"stdin\":true}"
#define STDIN_TEXT "go\n"
#define EXPECTED "got:go\n"

struct fan_sandbox {
        char id[BENCH_ID_MAX];
        struct bench_session ses;
        struct bench_client *data;
        size_t first, count; /* its streams */
};

struct fan_stream {
        struct fan_sandbox *sb;
        struct bench_events *ev;
        char cid[64];
        char out[32];
        size_t out_len;
        uint64_t last_id, id_gaps; /* ids must come 1, 2, … */
        int exit_code;
        bool started, added, finished;
};

struct fanout {
        const struct bench_config *cfg;
        struct fan_sandbox *sbs;
        struct fan_stream *streams;
        size_t nsb, n;
        atomic_size_t errors, shown;
        bool release; /* the threads write stdin instead of starting commands */
};

static void fan_error(struct fanout *f, const char *what, const char *why)
{
        atomic_fetch_add(&f->errors, 1);
        if (atomic_fetch_add(&f->shown, 1) < 5)
                fprintf(stderr, "space-bench: streams: %s: %s\n", what, why);
}

static int fan_event(void *userdata, const struct bench_sse_event *ev)
{
        struct fan_stream *s = userdata;
        if (ev->id != s->last_id + 1)
                s->id_gaps++;
        s->last_id = ev->id;
        if (strcmp(ev->event, "stdout") == 0) {
                const char *b64;
                size_t len;
                unsigned char buf[64];
                if (bench_sse_payload(ev, &b64, &len) < 0 || bench_base64_max(len) > sizeof(buf))
                        return 0;
                long n = bench_base64_decode(b64, len, buf);
                if (n > 0 && s->out_len + (size_t)n < sizeof(s->out)) {
                        memcpy(s->out + s->out_len, buf, (size_t)n);
                        s->out_len += (size_t)n;
                }
        } else if (strcmp(ev->event, "exit") == 0) {
                s->exit_code = bench_stream_exit_code(ev);
        }
        return 0;
}

/* Prints an event of a stream read again after a mismatch. */
static int fan_reread_event(void *userdata, const struct bench_sse_event *ev)
{
        fprintf(stderr, "space-bench: streams:   read again: id %" PRIu64 " %s %.120s\n", ev->id, ev->event, ev->data);
        return 0;
}

/* A stream that missed its line: what do its events say now, read from the start? */
static void fan_reread(struct fanout *f, struct fan_stream *s)
{
        struct bench_events *ev = NULL;
        if (bench_events_new(f->cfg->url, fan_reread_event, NULL, &ev) < 0)
                return;
        curl_easy_setopt(ev->curl, CURLOPT_TIMEOUT, 5L);
        if (bench_events_prepare(ev, s->sb->ses.token, s->sb->id, s->cid, 0, 1) == 0)
                (void)bench_events_run(ev);
        bench_events_free(ev);
}

/* One thread per sandbox: starts its commands, or (f->release) writes their stdin. */
static void *fan_sandbox_main(void *arg)
{
        void **a = arg;
        struct fanout *f = a[0];
        struct fan_sandbox *sb = a[1];
        for (size_t i = sb->first; i < sb->first + sb->count && !bench_stopping; i++) {
                struct fan_stream *s = &f->streams[i];
                if (!f->release) {
                        if (bench_command_start_retry(sb->data, sb->id, COMMAND, s->cid, sizeof(s->cid)) < 0)
                                fan_error(f, "start", bench_client_error(sb->data));
                        else
                                s->started = true;
                } else if (s->started && bench_command_stdin(sb->data, sb->id, s->cid, STDIN_TEXT) < 0) {
                        fan_error(f, "stdin", bench_client_error(sb->data));
                }
        }
        return NULL;
}

/* Runs fan_sandbox_main for every sandbox; joins them only when join is set. */
static int fan_threads(struct fanout *f, pthread_t *tids, void *(*args)[2], bool join)
{
        size_t started = 0;
        for (; started < f->nsb; started++) {
                args[started][0] = f;
                args[started][1] = &f->sbs[started];
                if (pthread_create(&tids[started], NULL, fan_sandbox_main, args[started]) != 0)
                        break;
        }
        if (join)
                for (size_t i = 0; i < started; i++)
                        pthread_join(tids[i], NULL);
        return (int)started;
}

/* VmRSS, VmHWM and Threads of spaced; -1 for what is unknown. */
static void spaced_sample(pid_t pid, long *ret_rss, long *ret_hwm, long *ret_threads)
{
        char path[64], line[256];
        *ret_rss = *ret_hwm = *ret_threads = -1;
        if (pid <= 0)
                return;
        snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
        _cleanup_fclose_ FILE *fp = fopen(path, "re");
        while (fp && fgets(line, sizeof(line), fp)) {
                sscanf(line, "VmRSS: %ld", ret_rss);
                sscanf(line, "VmHWM: %ld", ret_hwm);
                sscanf(line, "Threads: %ld", ret_threads);
        }
}

/* Drives the multi handle until done() holds or the deadline passes. */
static void fan_drive(struct fanout *f, CURLM *multi, double deadline_ms, bool (*done)(struct fanout *))
{
        int running = 1;
        while (!bench_stopping && bench_now_ms() < deadline_ms && !done(f)) {
                curl_multi_perform(multi, &running);
                CURLMsg *msg;
                int left;
                while ((msg = curl_multi_info_read(multi, &left))) {
                        if (msg->msg != CURLMSG_DONE)
                                continue;
                        struct fan_stream *s = NULL;
                        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&s);
                        s->finished = true;
                        int r = bench_events_result(s->ev, msg->data.result);
                        if (r < 0)
                                fan_error(f, "stream", s->ev->curl_error[0] ? s->ev->curl_error : strerror(-r));
                }
                if (running == 0)
                        break;
                curl_multi_poll(multi, NULL, 0, 100, NULL);
        }
}

static bool all_connected(struct fanout *f)
{
        for (size_t i = 0; i < f->n; i++)
                if (f->streams[i].added && !f->streams[i].finished && f->streams[i].ev->bytes == 0)
                        return false;
        return true;
}

static bool all_finished(struct fanout *f)
{
        for (size_t i = 0; i < f->n; i++)
                if (f->streams[i].added && !f->streams[i].finished)
                        return false;
        return true;
}

static int fan_setup(struct fanout *f, struct bench_sandboxes *set)
{
        struct bench_client *control = NULL;
        int r = bench_client_new(f->cfg->url, f->cfg->key, &control);
        if (r < 0)
                return r;
        for (size_t i = 0; i < f->nsb && r == 0; i++) {
                struct fan_sandbox *sb = &f->sbs[i];
                sb->first = f->n * i / f->nsb;
                sb->count = f->n * (i + 1) / f->nsb - sb->first;
                if ((r = bench_sandbox_create(control, set, f->cfg->template_name, sb->id, sizeof(sb->id))) < 0 ||
                    (r = bench_session_create(control, sb->id, &sb->ses)) < 0)
                        fprintf(stderr, "space-bench: streams: sandbox: %s\n", bench_client_error(control));
                else
                        r = bench_client_new(f->cfg->url, sb->ses.token, &sb->data);
        }
        bench_client_free(control);
        return r;
}

static void fan_teardown(struct fanout *f, CURLM *multi)
{
        struct bench_client *control = NULL;
        for (size_t i = 0; i < f->n; i++) {
                if (f->streams[i].added)
                        curl_multi_remove_handle(multi, f->streams[i].ev->curl);
                bench_events_free(f->streams[i].ev);
        }
        if (bench_client_new(f->cfg->url, f->cfg->key, &control) < 0)
                control = NULL;
        for (size_t i = 0; i < f->nsb; i++) {
                bench_client_free(f->sbs[i].data);
                if (control && f->sbs[i].ses.id[0])
                        (void)bench_session_delete(control, f->sbs[i].id, &f->sbs[i].ses);
                explicit_bzero(f->sbs[i].ses.token, sizeof(f->sbs[i].ses.token));
        }
        bench_client_free(control);
}

static void fan_measure(struct fanout *f, CURLM *multi, struct bench_stream_fanout *ret)
{
        pid_t pid = f->cfg->spaced_pid;
        _cleanup_free_ pthread_t *tids = calloc(f->nsb, sizeof(*tids));
        _cleanup_free_ void *(*args)[2] = calloc(f->nsb, sizeof(*args));
        if (!tids || !args)
                return;
        long hwm;
        spaced_sample(pid, &ret->rss_kb_before, &hwm, &ret->threads_before);
        double t0 = bench_now_ms();
        fan_threads(f, tids, args, true);
        ret->start_s = (bench_now_ms() - t0) / 1e3;
        for (size_t i = 0; i < f->n; i++) {
                struct fan_stream *s = &f->streams[i];
                if (!s->started)
                        continue;
                ret->started++;
                s->exit_code = -2;
                if (bench_events_new(f->cfg->url, fan_event, s, &s->ev) < 0 ||
                    bench_events_prepare(s->ev, s->sb->ses.token, s->sb->id, s->cid, 0, 1) < 0) {
                        fan_error(f, "stream", "out of memory");
                        continue;
                }
                curl_easy_setopt(s->ev->curl, CURLOPT_PRIVATE, (char *)s);
                curl_easy_setopt(s->ev->curl, CURLOPT_BUFFERSIZE, 16L * 1024);
                s->added = curl_multi_add_handle(multi, s->ev->curl) == CURLM_OK;
        }
        t0 = bench_now_ms();
        fan_drive(f, multi, t0 + 60000.0 + (double)f->n * 20.0, all_connected);
        ret->connect_s = (bench_now_ms() - t0) / 1e3;
        for (size_t i = 0; i < f->n; i++)
                ret->connected += f->streams[i].added && f->streams[i].ev->bytes > 0;
        spaced_sample(pid, &ret->rss_kb_connected, &hwm, &ret->threads_connected);

        f->release = true;
        t0 = bench_now_ms();
        int nthreads = fan_threads(f, tids, args, false);
        fan_drive(f, multi, t0 + 60000.0 + (double)f->n * 20.0, all_finished);
        for (int i = 0; i < nthreads; i++)
                pthread_join(tids[i], NULL);
        fan_drive(f, multi, bench_now_ms() + 10000.0, all_finished); /* any still behind the last stdin */
        ret->release_s = (bench_now_ms() - t0) / 1e3;
        for (size_t i = 0; i < f->n; i++) {
                struct fan_stream *s = &f->streams[i];
                if (!s->added)
                        continue;
                bool line = s->out_len == strlen(EXPECTED) && memcmp(s->out, EXPECTED, s->out_len) == 0;
                ret->lines += line;
                ret->exits += s->exit_code == 0;
                ret->id_gaps += s->id_gaps;
                if ((!line || s->id_gaps) && atomic_fetch_add(&f->shown, 1) < 5) {
                        char shown[sizeof(s->out) * 4 + 1];
                        size_t k = 0;
                        for (size_t j = 0; j < s->out_len; j++)
                                k += (size_t)snprintf(shown + k, sizeof(shown) - k, s->out[j] >= ' ' && s->out[j] < 127 ? "%c" : "\\x%02x",
                                                      (unsigned char)s->out[j]);
                        shown[k] = '\0';
                        fprintf(stderr, "space-bench: streams: %s %s: output \"%s\" (%zu bytes), %zu events to id %" PRIu64
                                        ", %" PRIu64 " id gaps, exit %d, %zu bytes received\n",
                                s->sb->id, s->cid, shown, s->out_len, s->ev->sse.events, s->last_id, s->id_gaps,
                                s->exit_code, s->ev->bytes);
                        fan_reread(f, s);
                }
                if (!s->finished)
                        fan_error(f, "stream", "not ended by the deadline");
        }
}

int bench_stream_fanout(const struct bench_config *cfg, struct bench_sandboxes *set, struct bench_stream_fanout *ret)
{
        struct fanout f = { .cfg = cfg, .n = cfg->streams, .nsb = cfg->stream_sandboxes };
        if (f.nsb > f.n)
                f.nsb = f.n;
        ret->wanted = f.n;
        ret->sandboxes = f.nsb;
        _cleanup_free_ struct fan_sandbox *sbs = calloc(f.nsb, sizeof(*sbs));
        _cleanup_free_ struct fan_stream *streams = calloc(f.n, sizeof(*streams));
        CURLM *multi = curl_multi_init();
        if (!sbs || !streams || !multi) {
                if (multi)
                        curl_multi_cleanup(multi);
                return -ENOMEM;
        }
        f.sbs = sbs;
        f.streams = streams;
        for (size_t i = 0; i < f.nsb; i++)
                for (size_t j = f.n * i / f.nsb; j < f.n * (i + 1) / f.nsb; j++)
                        streams[j].sb = &sbs[i];
        int r = fan_setup(&f, set);
        if (r == 0)
                fan_measure(&f, multi, ret);
        fan_teardown(&f, multi);
        curl_multi_cleanup(multi);
        struct timespec settle = { .tv_sec = 1 };
        nanosleep(&settle, NULL); /* the connection threads go */
        spaced_sample(cfg->spaced_pid, &ret->rss_kb_after, &ret->hwm_kb, &ret->threads_after);
        ret->errors = atomic_load(&f.errors);
        return r;
}
