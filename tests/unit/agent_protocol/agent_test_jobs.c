/* agent_test_jobs: starting jobs, their controls and the subscriber channel, for tests. */
#include "agent_test_jobs.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const agent_test_no_jobs[] = { NULL };

static void job_start_frame(struct agent_frame_writer *w, const struct agent_test_job_spec *spec)
{
        agent_frame_writer_begin(w, AGENT_MSG_JOB_START);
        if (spec->id)
                agent_frame_writer_put_str(w, AGENT_F_JOB_ID, spec->id);
        for (const char *const *a = spec->argv; *a; a++)
                agent_frame_writer_put_str(w, AGENT_F_ARGV, *a);
        for (const char *const *e = spec->env; e && *e; e++)
                agent_frame_writer_put_str(w, AGENT_F_ENV, *e);
        if (spec->user)
                agent_frame_writer_put_str(w, AGENT_F_USER, spec->user);
        if (spec->cwd)
                agent_frame_writer_put_str(w, AGENT_F_CWD, spec->cwd);
        if (spec->stdin_open)
                agent_frame_writer_put_u8(w, AGENT_F_STDIN_OPEN, 1);
        if (spec->cols)
                agent_frame_writer_put_u32(w, AGENT_F_TTY_COLS, spec->cols);
        if (spec->rows)
                agent_frame_writer_put_u32(w, AGENT_F_TTY_ROWS, spec->rows);
        if (spec->timeout_ms)
                agent_frame_writer_put_u32(w, AGENT_F_TIMEOUT_MS, spec->timeout_ms);
        if (spec->watch_exec)
                agent_frame_writer_put_u8(w, AGENT_F_WATCH_EXEC, 1);
}

/* One request on its own connection; the reply in *r. */
static void request(struct agent_frame_writer *w, struct agent_test_reply *r)
{
        int fd = agent_test_connect();
        agent_test_send(fd, w);
        agent_test_read(fd, r);
        close(fd);
}

pid_t agent_test_job_start(const struct agent_test_job_spec *spec)
{
        struct agent_frame_writer w;
        struct agent_test_reply r;

        job_start_frame(&w, spec);
        request(&w, &r);
        if (r.f.type == AGENT_MSG_ERROR) {
                const uint8_t *msg;
                uint32_t len = agent_test_get_bytes(&r, AGENT_F_MESSAGE, &msg);
                print_error("JOB_START %s: %.*s\n", spec->id, (int)len, msg);
        }
        assert_int_equal(r.f.type, AGENT_MSG_JOB_STARTED);
        agent_test_assert_str(&r, AGENT_F_JOB_ID, spec->id);
        pid_t pid = (pid_t)agent_test_get_u32(&r, AGENT_F_JOB_PID);
        assert_true(pid > 1);
        agent_test_reply_release(&r);
        return pid;
}

void agent_test_job_start_fails(const struct agent_test_job_spec *spec, int error)
{
        struct agent_frame_writer w;
        struct agent_test_reply r;

        job_start_frame(&w, spec);
        request(&w, &r);
        agent_test_assert_error(&r, error);
        agent_test_reply_release(&r);
}

void agent_test_job_control_begin(struct agent_frame_writer *w, enum agent_msg_type type, const char *id)
{
        agent_frame_writer_begin(w, type);
        if (id)
                agent_frame_writer_put_str(w, AGENT_F_JOB_ID, id);
}

void agent_test_job_control_expect(struct agent_frame_writer *w, int error)
{
        struct agent_test_reply r;

        request(w, &r);
        if (error)
                agent_test_assert_error(&r, error);
        else
                assert_int_equal(r.f.type, AGENT_MSG_OK);
        agent_test_reply_release(&r);
}

void agent_test_job_input(const char *id, const void *data, size_t len, int error)
{
        struct agent_frame_writer w;
        agent_test_job_control_begin(&w, AGENT_MSG_JOB_INPUT, id);
        agent_frame_writer_put(&w, AGENT_F_DATA, data, len);
        agent_test_job_control_expect(&w, error);
}

void agent_test_job_close_stdin(const char *id, int error)
{
        struct agent_frame_writer w;
        agent_test_job_control_begin(&w, AGENT_MSG_JOB_CLOSE_STDIN, id);
        agent_test_job_control_expect(&w, error);
}

void agent_test_job_signal(const char *id, int sig, int error)
{
        struct agent_frame_writer w;
        agent_test_job_control_begin(&w, AGENT_MSG_JOB_SIGNAL, id);
        agent_frame_writer_put_i32(&w, AGENT_F_SIGNAL, sig);
        agent_test_job_control_expect(&w, error);
}

void agent_test_job_resize(const char *id, uint32_t cols, uint32_t rows, int error)
{
        struct agent_frame_writer w;
        agent_test_job_control_begin(&w, AGENT_MSG_JOB_RESIZE, id);
        agent_frame_writer_put_u32(&w, AGENT_F_TTY_COLS, cols);
        agent_frame_writer_put_u32(&w, AGENT_F_TTY_ROWS, rows);
        agent_test_job_control_expect(&w, error);
}

void agent_test_job_wait_forgotten(const char *id)
{
        for (int i = 0; i < 500; i++) {
                struct agent_frame_writer w;
                struct agent_test_reply r;
                agent_test_job_control_begin(&w, AGENT_MSG_JOB_SIGNAL, id);
                agent_frame_writer_put_i32(&w, AGENT_F_SIGNAL, 0);
                request(&w, &r);
                assert_int_equal(r.f.type, AGENT_MSG_ERROR);
                int error = agent_test_get_i32(&r, AGENT_F_ERRNO);
                agent_test_reply_release(&r);
                if (error == ENOENT)
                        return;
                assert_int_equal(error, EINVAL);
                agent_test_sleep_ms(10);
        }
        fail_msg("job %s is still known", id);
}

/* ---- the output channel ---- */

int agent_test_job_subscribe(const char *const *expected)
{
        struct agent_frame_writer w;
        struct agent_test_reply r;
        int fd = agent_test_connect();
        size_t cursor = 0, n_listed = 0, n_expected = 0;
        uint16_t tag;
        const uint8_t *data;
        uint32_t len;

        agent_frame_writer_begin(&w, AGENT_MSG_JOB_SUBSCRIBE);
        agent_test_send(fd, &w);
        agent_test_read(fd, &r);
        assert_int_equal(r.f.type, AGENT_MSG_JOB_SUBSCRIBED);
        while (agent_frame_next_field(&r.f, &cursor, &tag, &data, &len) > 0) {
                if (tag != AGENT_F_JOB_ID)
                        continue;
                bool found = false;
                for (const char *const *e = expected; *e && !found; e++)
                        found = strlen(*e) == len && memcmp(*e, data, len) == 0;
                if (!found)
                        fail_msg("JOB_SUBSCRIBED lists unexpected job %.*s", (int)len, data);
                n_listed++;
        }
        for (const char *const *e = expected; *e; e++)
                n_expected++;
        assert_int_equal(n_listed, n_expected);
        agent_test_reply_release(&r);
        return fd;
}

void agent_test_job_ack(int fd, const char *id, uint64_t seq)
{
        struct agent_frame_writer w;
        agent_frame_writer_begin(&w, AGENT_MSG_JOB_ACK);
        agent_frame_writer_put_str(&w, AGENT_F_JOB_ID, id);
        agent_frame_writer_put_u64(&w, AGENT_F_SEQ, seq);
        agent_test_send(fd, &w);
}

void agent_test_job_channel_sync(int fd)
{
        struct agent_frame_writer w;
        struct agent_test_reply r;

        agent_frame_writer_begin(&w, AGENT_MSG_HELLO);
        agent_test_send(fd, &w);
        agent_test_read(fd, &r);
        assert_int_equal(r.f.type, AGENT_MSG_HELLO_REPLY);
        agent_test_reply_release(&r);
}

void agent_test_job_watch_init(struct agent_test_job_watch *jw, int fd, const char *id)
{
        *jw = (struct agent_test_job_watch){ .fd = fd, .id = id, .next_seq = 1, .ack = true };
}

void agent_test_job_watch_release(struct agent_test_job_watch *jw)
{
        for (int i = 0; i < 4; i++)
                free(jw->out[i]);
        agent_test_reply_release(&jw->exit);
        agent_test_reply_release(&jw->last);
}

void agent_test_job_watch_step(struct agent_test_job_watch *jw)
{
        struct agent_test_reply r;

        agent_test_read(jw->fd, &r);
        agent_test_job_watch_take(jw, &r);
}

void agent_test_job_watch_take(struct agent_test_job_watch *jw, struct agent_test_reply *event)
{
        struct agent_test_reply *r = &jw->last;
        const uint8_t *data;
        uint32_t len;

        assert_false(jw->exited);
        agent_test_reply_release(r);
        *r = *event;
        *event = (struct agent_test_reply){};
        assert_true(r->f.type == AGENT_MSG_JOB_OUTPUT || r->f.type == AGENT_MSG_JOB_EXIT);
        agent_test_assert_str(r, AGENT_F_JOB_ID, jw->id);
        uint64_t seq = agent_test_get_u64(r, AGENT_F_SEQ);
        if (seq != jw->next_seq)
                fail_msg("job %s: SEQ %llu, expected %llu", jw->id, (unsigned long long)seq, (unsigned long long)jw->next_seq);
        jw->next_seq++;
        if (jw->ack)
                agent_test_job_ack(jw->fd, jw->id, seq);

        if (r->f.type == AGENT_MSG_JOB_EXIT) {
                jw->exit = *r;
                *r = (struct agent_test_reply){};
                jw->exited = true;
                return;
        }
        uint8_t stream = agent_test_get_u8(r, AGENT_F_STREAM);
        if (jw->want_stream)
                assert_int_equal(stream, jw->want_stream);
        else
                assert_true(stream == AGENT_STREAM_STDOUT || stream == AGENT_STREAM_STDERR);
        len = agent_test_get_bytes(r, AGENT_F_DATA, &data);
        assert_true(len > 0);
        jw->out_total += len;
        if (jw->sink) {
                jw->sink(jw->sink_ctx, data, len);
                return;
        }
        uint8_t *grown = realloc(jw->out[stream], jw->out_len[stream] + len + 1);
        assert_non_null(grown);
        memcpy(grown + jw->out_len[stream], data, len);
        jw->out_len[stream] += len;
        grown[jw->out_len[stream]] = '\0';
        jw->out[stream] = grown;
}

void agent_test_job_watch_until_exit(struct agent_test_job_watch *jw)
{
        while (!jw->exited)
                agent_test_job_watch_step(jw);
}

void agent_test_job_watch_until_contains(struct agent_test_job_watch *jw, uint8_t stream, const char *text)
{
        while (!jw->out[stream] || !memmem(jw->out[stream], jw->out_len[stream], text, strlen(text))) {
                if (jw->exited)
                        fail_msg("job %s exited before printing \"%s\"", jw->id, text);
                agent_test_job_watch_step(jw);
        }
}

void agent_test_job_assert_output(const struct agent_test_job_watch *jw, uint8_t stream, const char *expected)
{
        size_t len = strlen(expected);
        if (jw->out_len[stream] != len || memcmp(jw->out[stream], expected, len) != 0)
                fail_msg("job %s stream %u: \"%s\", expected \"%s\"", jw->id, stream,
                         jw->out[stream] ? (const char *)jw->out[stream] : "", expected);
}

void agent_test_job_assert_exit(const struct agent_test_job_watch *jw, int code, int sig, int timed_out)
{
        assert_true(jw->exited);
        int got_code = agent_test_get_i32(&jw->exit, AGENT_F_EXIT_CODE);
        int got_sig = agent_test_get_i32(&jw->exit, AGENT_F_TERM_SIGNAL);
        if (got_code != code || got_sig != sig)
                fail_msg("job %s: EXIT_CODE %d TERM_SIGNAL %d, expected %d and %d", jw->id, got_code, got_sig, code, sig);
        assert_int_equal(agent_test_get_u8(&jw->exit, AGENT_F_TIMED_OUT), timed_out);
        assert_true(agent_test_get_u64(&jw->exit, AGENT_F_DURATION_US) > 0);
}

void agent_test_job_watch_finish(struct agent_test_job_watch *jw)
{
        assert_true(jw->exited && jw->ack);
        agent_test_job_wait_forgotten(jw->id);
        agent_test_job_watch_release(jw);
}

void agent_test_job_run(const struct agent_test_job_spec *spec, struct agent_test_job_watch *jw)
{
        int fd = agent_test_job_subscribe(agent_test_no_jobs);
        agent_test_job_start(spec);
        agent_test_job_watch_init(jw, fd, spec->id);
        agent_test_job_watch_until_exit(jw);
}

void agent_test_job_run_close(struct agent_test_job_watch *jw)
{
        int fd = jw->fd;
        agent_test_job_watch_finish(jw);
        close(fd);
}
