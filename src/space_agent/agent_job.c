/* agent_job: detached commands, their output events, stdin queue, signals and exit. */
#include "space_agent/agent_job.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "space_agent/agent_cleanup.h"
#include "space_agent/agent_clock.h"
#include "space_agent/agent_command.h"
#include "space_agent/agent_exec_watch.h"
#include "space_agent/agent_subscriber.h"

#define READS_PER_WAKEUP 8

/* Single-threaded: one read buffer serves every job. */
static uint8_t read_buf[AGENT_JOB_READ_CHUNK];

static void job_kill(struct agent_job *job)
{
        (void)kill(-job->pid, SIGKILL);
        if (!job->exited)
                (void)kill(job->pid, SIGKILL);
}

static void job_close_slave(struct agent_job *job);

static void job_close_fds(struct agent_job *job)
{
        job_close_slave(job);
        agent_server_watch_close(job->server, &job->stdin_watch);
        agent_server_watch_close(job->server, &job->out[0]);
        agent_server_watch_close(job->server, &job->out[1]);
        agent_server_watch_close(job->server, &job->report_watch);
        agent_exec_watch_stop(job);
}

/* Appends a finished frame as the next event. */
static int job_queue(struct agent_job *job, struct agent_frame_writer *w, uint64_t seq)
{
        int r = agent_frame_writer_finish(w);
        if (r < 0) {
                agent_frame_writer_release(w);
                return r;
        }
        struct agent_job_event *ev = malloc(sizeof *ev + w->len);
        if (!ev) {
                agent_frame_writer_release(w);
                return -ENOMEM;
        }
        ev->next = NULL;
        ev->seq = seq;
        ev->orphan = false;
        ev->len = w->len;
        memcpy(ev->frame, w->data, w->len);
        agent_frame_writer_release(w);

        if (job->tail)
                job->tail->next = ev;
        else
                job->head = ev;
        job->tail = ev;
        if (!job->unsent)
                job->unsent = ev;
        job->unacked_bytes += ev->len;
        return 0;
}

static int job_queue_output(struct agent_job *job, enum agent_job_stream stream, const uint8_t *data, size_t len)
{
        struct agent_frame_writer w;
        uint64_t seq = job->next_seq;

        agent_frame_writer_begin(&w, AGENT_MSG_JOB_OUTPUT);
        agent_frame_writer_put_str(&w, AGENT_F_JOB_ID, job->req.job_id);
        agent_frame_writer_put_u64(&w, AGENT_F_SEQ, seq);
        agent_frame_writer_put_u8(&w, AGENT_F_STREAM, (uint8_t)stream);
        agent_frame_writer_put(&w, AGENT_F_DATA, data, len);
        int r = job_queue(job, &w, seq);
        if (r == 0)
                job->next_seq++;
        return r;
}

void agent_job_note(struct agent_job *job, const char *text)
{
        if (job->finished)
                return;
        (void)job_queue_output(job, job->on_pty ? AGENT_STREAM_PTY : AGENT_STREAM_STDERR, (const uint8_t *)text, strlen(text));
}

void agent_job_update_reading(struct agent_job *job)
{
        bool pause = job->unacked_bytes >= AGENT_JOB_UNACKED_MAX;
        if (pause == job->reading_paused)
                return;
        job->reading_paused = pause;
        /* Out of the epoll set, not just without EPOLLIN: a pipe at EOF reports hang-up
         * whatever it is asked for. */
        for (int i = 0; i < 2; i++)
                if (pause)
                        (void)agent_server_watch_detach(job->server, &job->out[i]);
                else if (!(i == 0 && job->pty_eof))
                        (void)agent_server_watch_attach(job->server, &job->out[i]);
}

static enum agent_job_stream job_stream_of(const struct agent_job *job, int i)
{
        if (job->on_pty)
                return AGENT_STREAM_PTY;
        return i == 0 ? AGENT_STREAM_STDOUT : AGENT_STREAM_STDERR;
}

/* Reads what a pipe has into events; closes it at EOF (EIO on a pty whose terminal side
 * is closed means the same). */
static void job_read(struct agent_job *job, int i)
{
        struct agent_watch *w = &job->out[i];

        for (int n_reads = 0; n_reads < READS_PER_WAKEUP && w->fd >= 0; n_reads++) {
                if (job->unacked_bytes >= AGENT_JOB_UNACKED_MAX) {
                        agent_job_update_reading(job);
                        return;
                }
                ssize_t n = read(w->fd, read_buf, sizeof read_buf);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                        return;
                if (n <= 0) {
                        if (job->on_pty && i == 0) {
                                agent_server_watch_close(job->server, &job->stdin_watch);
                                if (!job->exited) {
                                        /* The command closed its terminal but may not have
                                         * exited yet (cat closes stdio, then exits): closing
                                         * the master now would hang the terminal up and kill
                                         * it with SIGHUP. Unwatched, it is closed at the exit. */
                                        job->pty_eof = true;
                                        (void)agent_server_watch_detach(job->server, w);
                                        return;
                                }
                        }
                        agent_server_watch_close(job->server, w);
                        return;
                }
                if (job_queue_output(job, job_stream_of(job, i), read_buf, (size_t)n) < 0) {
                        /* Out of memory: these bytes are lost; say so in the stream. */
                        static const char lost[] = "\n[space-agent: output lost: out of memory]\n";
                        (void)job_queue_output(job, AGENT_STREAM_STDERR, (const uint8_t *)lost, sizeof lost - 1);
                        return;
                }
        }
}

static void job_read_report(struct agent_job *job)
{
        uint8_t *dst = (uint8_t *)&job->report;

        while (job->report_watch.fd >= 0) {
                size_t want = sizeof job->report - job->report_got;
                ssize_t n = read(job->report_watch.fd, want ? dst + job->report_got : read_buf, want ? want : sizeof read_buf);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                        return;
                if (n <= 0) {
                        agent_server_watch_close(job->server, &job->report_watch);
                        return;
                }
                if (want)
                        job->report_got += (size_t)n;
        }
}

static void job_finish(struct agent_job *job)
{
        struct agent_frame_writer w;
        int exit_code = 0, sig = 0;
        char message[512];
        bool failed_to_start = job->report_got == sizeof job->report;

        /* Output that waits in a pipe after the exit is still the job's (unless held back). */
        if (!job->reading_paused) {
                job_read(job, 0);
                job_read(job, 1);
        }
        job_read_report(job);
        if (job->unacked_bytes >= AGENT_JOB_UNACKED_MAX && (job->out[0].fd >= 0 || job->out[1].fd >= 0))
                return; /* finish once the backlog is acknowledged and the pipes drained */
        job_close_fds(job);

        if (WIFEXITED(job->status))
                exit_code = WEXITSTATUS(job->status);
        else if (WIFSIGNALED(job->status)) {
                sig = WTERMSIG(job->status);
                exit_code = 128 + sig;
        }
        if (failed_to_start) {
                agent_spawn_report_format(&job->report, &job->req, message, sizeof message);
                size_t len = strlen(message);
                message[len] = '\n';
                (void)job_queue_output(job, job->on_pty ? AGENT_STREAM_PTY : AGENT_STREAM_STDERR, (const uint8_t *)message,
                                       len + 1);
                message[len] = '\0';
        }

        uint64_t seq = job->next_seq++;
        agent_frame_writer_begin(&w, AGENT_MSG_JOB_EXIT);
        agent_frame_writer_put_str(&w, AGENT_F_JOB_ID, job->req.job_id);
        agent_frame_writer_put_u64(&w, AGENT_F_SEQ, seq);
        agent_frame_writer_put_i32(&w, AGENT_F_EXIT_CODE, exit_code);
        agent_frame_writer_put_i32(&w, AGENT_F_TERM_SIGNAL, sig);
        agent_frame_writer_put_u8(&w, AGENT_F_TIMED_OUT, job->timed_out);
        agent_frame_writer_put_u64(&w, AGENT_F_DURATION_US, job->exit_us - job->start_us);
        if (failed_to_start) {
                agent_frame_writer_put_i32(&w, AGENT_F_ERRNO, job->report.error);
                agent_frame_writer_put_str(&w, AGENT_F_MESSAGE, message);
        }
        if (job_queue(job, &w, seq) < 0)
                return; /* retried by the next tick */
        job->finished = true;
        agent_subscriber_flush(job->server);
}

static void job_check_done(struct agent_job *job)
{
        if (job->finished || !job->exited)
                return;
        if ((job->out[0].fd < 0 || job->pty_eof) && job->out[1].fd < 0 && job->report_watch.fd < 0)
                job_finish(job);
}

static void job_on_out(struct agent_watch *w, uint32_t events)
{
        struct agent_job *job = agent_container_of(w, struct agent_job, out[0]);
        job_read(job, 0);
        job_check_done(job);
        agent_subscriber_flush(job->server);
}

static void job_on_err(struct agent_watch *w, uint32_t events)
{
        struct agent_job *job = agent_container_of(w, struct agent_job, out[1]);
        job_read(job, 1);
        job_check_done(job);
        agent_subscriber_flush(job->server);
}

static void job_close_slave(struct agent_job *job)
{
        if (job->pty_slave_fd >= 0)
                close(job->pty_slave_fd);
        job->pty_slave_fd = -1;
}

static void job_on_report(struct agent_watch *w, uint32_t events)
{
        struct agent_job *job = agent_container_of(w, struct agent_job, report_watch);
        job_read_report(job);
        if (w->fd < 0) /* exec'd (or failed): the command holds its terminal now */
                job_close_slave(job);
        job_check_done(job);
}

static void job_stdin_drop(struct agent_job *job)
{
        free(job->stdin_buf);
        job->stdin_buf = NULL;
        job->stdin_len = job->stdin_off = 0;
}

/* Writes queued stdin; closes stdin once drained if asked to. */
static void job_stdin_write(struct agent_job *job)
{
        struct agent_watch *w = &job->stdin_watch;

        while (w->fd >= 0 && job->stdin_off < job->stdin_len) {
                ssize_t n = write(w->fd, job->stdin_buf + job->stdin_off, job->stdin_len - job->stdin_off);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                        (void)agent_server_watch_set(job->server, w, EPOLLOUT);
                        return;
                }
                if (n < 0) { /* EPIPE: nobody reads stdin any more */
                        job_stdin_drop(job);
                        agent_server_watch_close(job->server, w);
                        return;
                }
                job->stdin_off += (size_t)n;
        }
        job_stdin_drop(job);
        if (w->fd < 0)
                return;
        if (job->stdin_close_pending) {
                agent_server_watch_close(job->server, w);
                return;
        }
        (void)agent_server_watch_set(job->server, w, 0);
}

static void job_on_stdin(struct agent_watch *w, uint32_t events)
{
        struct agent_job *job = agent_container_of(w, struct agent_job, stdin_watch);
        if (events & (EPOLLERR | EPOLLHUP)) { /* the reading side is gone */
                job_stdin_drop(job);
                agent_server_watch_close(job->server, w);
                return;
        }
        job_stdin_write(job);
}

int agent_job_input(struct agent_job *job, const uint8_t *data, size_t len)
{
        if (job->stdin_watch.fd < 0 || job->stdin_close_pending || job->exited)
                return -EPIPE;
        if (len == 0)
                return 0;
        size_t pending = job->stdin_len - job->stdin_off;
        if (pending + len > AGENT_JOB_STDIN_MAX)
                return -EAGAIN;
        uint8_t *buf = malloc(pending + len);
        if (!buf)
                return -ENOMEM;
        if (pending)
                memcpy(buf, job->stdin_buf + job->stdin_off, pending);
        memcpy(buf + pending, data, len);
        free(job->stdin_buf);
        job->stdin_buf = buf;
        job->stdin_len = pending + len;
        job->stdin_off = 0;
        job_stdin_write(job);
        return 0;
}

int agent_job_close_stdin(struct agent_job *job)
{
        if (job->stdin_watch.fd < 0 || job->stdin_close_pending)
                return 0;
        if (job->on_pty) {
                /* A terminal has no end of input to close: send its EOF character. */
                static const uint8_t eot = 4;
                int r = agent_job_input(job, &eot, 1);
                return r == -EPIPE ? 0 : r;
        }
        job->stdin_close_pending = true;
        if (job->stdin_off >= job->stdin_len)
                agent_server_watch_close(job->server, &job->stdin_watch);
        return 0;
}

int agent_job_signal(struct agent_job *job, int sig)
{
        if (sig <= 0 || sig >= 65)
                return -EINVAL;
        if (job->exited)
                return -ESRCH;
        /* The whole process group (the job runs in its own session), then the leader in
         * case it has not called setsid yet. */
        if (kill(-job->pid, sig) < 0 && kill(job->pid, sig) < 0)
                return -errno;
        return 0;
}

int agent_job_resize(struct agent_job *job, uint32_t cols, uint32_t rows)
{
        if (!job->on_pty)
                return -ENOTTY;
        if (cols == 0 || rows == 0 || cols > 65535 || rows > 65535)
                return -EINVAL;
        if (job->out[0].fd < 0)
                return -ESRCH;
        return agent_spawn_pty_resize(job->out[0].fd, cols, rows);
}

struct agent_job *agent_job_find(struct agent_server *s, const uint8_t *id, size_t len)
{
        for (struct agent_job *j = s->jobs; j; j = j->next)
                if (!j->dead && strlen(j->req.job_id) == len && memcmp(j->req.job_id, id, len) == 0)
                        return j;
        return NULL;
}

static int job_watch_all(struct agent_job *job, const struct agent_spawn_fds *fds)
{
        struct agent_server *s = job->server;
        int r = 0, q;

        if (fds->pty_fd >= 0) {
                int in = dup(fds->pty_fd);
                r = agent_server_watch_add(s, &job->out[0], fds->pty_fd, EPOLLIN, job_on_out);
                if (in < 0)
                        q = -errno;
                else
                        q = agent_server_watch_add(s, &job->stdin_watch, in, 0, job_on_stdin);
                r = r < 0 ? r : q;
        } else {
                r = agent_server_watch_add(s, &job->out[0], fds->stdout_fd, EPOLLIN, job_on_out);
                q = agent_server_watch_add(s, &job->out[1], fds->stderr_fd, EPOLLIN, job_on_err);
                r = r < 0 ? r : q;
                if (fds->stdin_fd >= 0) {
                        q = agent_server_watch_add(s, &job->stdin_watch, fds->stdin_fd, 0, job_on_stdin);
                        r = r < 0 ? r : q;
                }
        }
        q = agent_server_watch_add(s, &job->report_watch, fds->report_fd, EPOLLIN, job_on_report);
        return r < 0 ? r : q;
}

static unsigned job_count(const struct agent_server *s)
{
        unsigned n = 0;
        for (const struct agent_job *j = s->jobs; j; j = j->next)
                n += !j->dead;
        return n;
}

int agent_job_start(struct agent_server *s, const struct agent_frame *f, uint8_t **payload, struct agent_job **ret_job,
                    const char **ret_reason)
{
        struct agent_spawn_fds fds;
        int r;

        if (job_count(s) >= AGENT_JOB_MAX) {
                *ret_reason = "too many jobs in this sandbox";
                return -EMFILE;
        }
        struct agent_job *job = calloc(1, sizeof *job);
        if (!job)
                return -ENOMEM;
        job->server = s;
        job->next_seq = 1;
        job->pty_slave_fd = -1;
        agent_watch_init(&job->out[0]);
        agent_watch_init(&job->out[1]);
        agent_watch_init(&job->stdin_watch);
        agent_watch_init(&job->report_watch);
        agent_watch_init(&job->exec_watch);

        r = agent_exec_request_parse(f, &job->req, ret_reason);
        if (r < 0)
                goto fail;
        r = -EINVAL;
        if (!job->req.job_id) {
                *ret_reason = "JOB_START needs a JOB_ID";
                goto fail;
        }
        if (job->req.has_stdin) {
                /* It would be a stdin pipe nobody writes or closes: the command would wait forever. */
                *ret_reason = "STDIN belongs to EXEC; jobs take STDIN_OPEN and JOB_INPUT";
                goto fail;
        }
        if (agent_job_find(s, (const uint8_t *)job->req.job_id, strlen(job->req.job_id))) {
                *ret_reason = "a job with this id exists";
                r = -EEXIST;
                goto fail;
        }
        if (job->req.user) {
                r = agent_spawn_user_resolve(job->req.user, &job->user);
                if (r < 0) {
                        *ret_reason = r == -ENOENT ? "no such user in the sandbox" : "cannot resolve the user";
                        goto fail;
                }
                job->has_user = true;
                job->user.env_default = agent_frame_find(f, AGENT_F_ENV, &(const uint8_t *){ NULL }, &(uint32_t){ 0 }) == 0;
        }
        job->on_pty = job->req.tty_cols && job->req.tty_rows;

        job->start_us = agent_clock_now_us();
        r = agent_spawn_start(&job->req, job->has_user ? &job->user : NULL, &fds, &job->pid);
        if (r < 0) {
                *ret_reason = "cannot start the command";
                goto fail;
        }
        job->pty_slave_fd = fds.pty_slave_fd;
        r = job_watch_all(job, &fds);
        if (r == 0 && fds.exec_listener_fd >= 0)
                r = agent_exec_watch_start(job, fds.exec_listener_fd);
        else if (fds.exec_listener_fd >= 0)
                close(fds.exec_listener_fd);
        if (r < 0) {
                job_kill(job);
                job_close_fds(job);
                *ret_reason = "cannot watch the command's pipes";
                goto fail;
        }
        if (job->req.timeout_ms)
                job->deadline_us = job->start_us + (uint64_t)job->req.timeout_ms * 1000u;
        job->payload = TAKE_PTR(*payload);
        job->next = s->jobs;
        s->jobs = job;
        *ret_job = job;
        return 0;
fail:
        agent_exec_request_release(&job->req);
        free(job);
        return r;
}

void agent_job_on_exit(struct agent_job *job, int status)
{
        job->exited = true;
        job->status = status;
        job->exit_us = agent_clock_now_us();
        job_stdin_drop(job);
        agent_server_watch_close(job->server, &job->stdin_watch);
        job_check_done(job);
}

uint64_t agent_job_tick(struct agent_job *job, uint64_t now_us)
{
        if (job->finished || job->dead)
                return 0;
        if (!job->exited) {
                if (job->deadline_us && now_us >= job->deadline_us) {
                        job->timed_out = true;
                        job->deadline_us = 0;
                        job_kill(job);
                }
                return job->deadline_us;
        }
        /* A background process that keeps a pipe open does not hold the job open. */
        uint64_t linger_until = job->exit_us + AGENT_COMMAND_LINGER_US;
        if (now_us >= linger_until) {
                job_finish(job);
                return job->finished ? 0 : now_us + AGENT_COMMAND_LINGER_US;
        }
        return linger_until;
}

void agent_job_ack(struct agent_job *job, uint64_t seq)
{
        const struct agent_job_event *sending = job->server->sub_event;

        while (job->head && job->head->seq <= seq && job->head != sending && job->head != job->unsent) {
                struct agent_job_event *ev = job->head;
                job->head = ev->next;
                if (!job->head)
                        job->tail = NULL;
                job->unacked_bytes -= ev->len;
                free(ev);
        }
        if (job->finished && !job->head)
                job->dead = true;
        agent_job_update_reading(job);
        if (job->exited && !job->finished && !job->reading_paused)
                job_finish(job);
}

void agent_job_rewind(struct agent_job *job)
{
        job->unsent = job->head;
}

void agent_job_free(struct agent_job *job)
{
        if (!job)
                return;
        job_close_fds(job);
        while (job->head) {
                struct agent_job_event *ev = job->head;
                job->head = ev->next;
                free(ev);
        }
        job_stdin_drop(job);
        agent_exec_request_release(&job->req);
        free(job->payload);
        free(job);
}
