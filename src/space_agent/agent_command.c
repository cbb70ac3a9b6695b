/* agent_command: output capture, stdin feeding, timeout and the EXEC_RESULT reply. */
#include "space_agent/agent_command.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "space_agent/agent_cleanup.h"
#include "space_agent/agent_clock.h"
#include "space_agent/agent_conn.h"

#define READS_PER_WAKEUP 16
#define STREAM_MIN_CAP 16384u
#define STDIN_CHUNK 65536u

/* Where output beyond the cap goes. Single-threaded, so one buffer serves all. */
static uint8_t discard_buf[16384];

static void command_kill(struct agent_command *cmd)
{
        (void)kill(-cmd->pid, SIGKILL);
        if (!cmd->exited) /* not reaped yet, so the pid is still ours; covers a pre-setsid child */
                (void)kill(cmd->pid, SIGKILL);
}

static void command_close_fds(struct agent_command *cmd)
{
        agent_server_watch_close(cmd->server, &cmd->stdin_watch);
        agent_server_watch_close(cmd->server, &cmd->out[0].watch);
        agent_server_watch_close(cmd->server, &cmd->out[1].watch);
        agent_server_watch_close(cmd->server, &cmd->report_watch);
}

static int stream_grow(struct agent_command_stream *st, size_t limit)
{
        if (st->len < st->cap)
                return 0;
        size_t cap = st->cap ? st->cap * 2 : STREAM_MIN_CAP;
        if (cap > limit)
                cap = limit;
        uint8_t *data = realloc(st->data, cap);
        if (!data)
                return -ENOMEM;
        st->data = data;
        st->cap = cap;
        return 0;
}

/* Reads what the pipe has (bounded per call); closes it at EOF or on error. */
static void stream_read(struct agent_command *cmd, struct agent_command_stream *st)
{
        size_t limit = cmd->req.output_cap;

        for (int i = 0; i < READS_PER_WAKEUP && st->watch.fd >= 0; i++) {
                bool keep = st->len < limit && stream_grow(st, limit) == 0;
                uint8_t *dst = keep ? st->data + st->len : discard_buf;
                size_t room = keep ? st->cap - st->len : sizeof discard_buf;

                ssize_t n = read(st->watch.fd, dst, room);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN || errno == EWOULDBLOCK)
                                return;
                        agent_server_watch_close(cmd->server, &st->watch);
                        return;
                }
                if (n == 0) {
                        agent_server_watch_close(cmd->server, &st->watch);
                        return;
                }
                if (keep)
                        st->len += (size_t)n;
                else
                        st->truncated = true;
        }
}

static void report_read(struct agent_command *cmd)
{
        uint8_t *dst = (uint8_t *)&cmd->report;

        while (cmd->report_watch.fd >= 0) {
                size_t want = sizeof cmd->report - cmd->report_got;
                ssize_t n =
                        read(cmd->report_watch.fd, want ? dst + cmd->report_got : discard_buf, want ? want : sizeof discard_buf);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                        return;
                if (n <= 0) {
                        agent_server_watch_close(cmd->server, &cmd->report_watch);
                        return;
                }
                if (want)
                        cmd->report_got += (size_t)n;
        }
}

static bool command_has_report(const struct agent_command *cmd)
{
        return cmd->report_got == sizeof cmd->report;
}

/* Appends the spawn failure text to stderr, as a shell would print it. */
static void command_report_to_stderr(struct agent_command *cmd, const char *message)
{
        struct agent_command_stream *st = &cmd->out[1];
        size_t len = strlen(message);
        uint8_t *data = realloc(st->data, st->len + len + 1);

        if (!data)
                return;
        memcpy(data + st->len, message, len);
        data[st->len + len] = '\n';
        st->data = data;
        st->len += len + 1;
        st->cap = st->len;
}

static void command_reply_build(struct agent_command *cmd, struct agent_frame_writer *w)
{
        int exit_code = 0, sig = 0;
        char message[512];

        if (WIFEXITED(cmd->status))
                exit_code = WEXITSTATUS(cmd->status);
        else if (WIFSIGNALED(cmd->status)) {
                sig = WTERMSIG(cmd->status);
                exit_code = 128 + sig;
        }
        if (command_has_report(cmd)) {
                agent_spawn_report_format(&cmd->report, &cmd->req, message, sizeof message);
                command_report_to_stderr(cmd, message);
        }

        agent_frame_writer_begin(w, AGENT_MSG_EXEC_RESULT);
        agent_frame_writer_put_i32(w, AGENT_F_EXIT_CODE, exit_code);
        agent_frame_writer_put_i32(w, AGENT_F_TERM_SIGNAL, sig);
        agent_frame_writer_put(w, AGENT_F_STDOUT, cmd->out[0].data, cmd->out[0].len);
        agent_frame_writer_put(w, AGENT_F_STDERR, cmd->out[1].data, cmd->out[1].len);
        agent_frame_writer_put_u8(w, AGENT_F_TRUNCATED, (uint8_t)(cmd->out[0].truncated | (cmd->out[1].truncated << 1)));
        agent_frame_writer_put_u8(w, AGENT_F_TIMED_OUT, cmd->timed_out);
        agent_frame_writer_put_u64(w, AGENT_F_DURATION_US, cmd->exit_us - cmd->start_us);
        if (command_has_report(cmd)) {
                agent_frame_writer_put_i32(w, AGENT_F_ERRNO, cmd->report.error);
                agent_frame_writer_put_str(w, AGENT_F_MESSAGE, message);
        }
}

static void command_finish(struct agent_command *cmd)
{
        struct agent_frame_writer w;

        /* Whatever the process wrote before exiting may still sit in the pipes. */
        stream_read(cmd, &cmd->out[0]);
        stream_read(cmd, &cmd->out[1]);
        report_read(cmd);
        command_close_fds(cmd);

        command_reply_build(cmd, &w);
        for (int i = 0; i < 2; i++) {
                free(cmd->out[i].data);
                cmd->out[i] = (struct agent_command_stream){ .watch.fd = -1 };
        }

        struct agent_conn *conn = cmd->conn;
        cmd->conn = NULL;
        cmd->dead = true;
        if (conn)
                agent_conn_command_done(conn, &w);
        else
                agent_frame_writer_release(&w);
}

static void command_check_done(struct agent_command *cmd)
{
        if (cmd->dead || !cmd->exited)
                return;
        if (cmd->out[0].watch.fd < 0 && cmd->out[1].watch.fd < 0 && cmd->report_watch.fd < 0)
                command_finish(cmd);
}

static void command_on_stdout(struct agent_watch *w, uint32_t events)
{
        struct agent_command *cmd = agent_container_of(w, struct agent_command, out[0].watch);

        stream_read(cmd, &cmd->out[0]);
        command_check_done(cmd);
}

static void command_on_stderr(struct agent_watch *w, uint32_t events)
{
        struct agent_command *cmd = agent_container_of(w, struct agent_command, out[1].watch);

        stream_read(cmd, &cmd->out[1]);
        command_check_done(cmd);
}

static void command_on_report(struct agent_watch *w, uint32_t events)
{
        struct agent_command *cmd = agent_container_of(w, struct agent_command, report_watch);

        report_read(cmd);
        command_check_done(cmd);
}

static void command_on_stdin(struct agent_watch *w, uint32_t events)
{
        struct agent_command *cmd = agent_container_of(w, struct agent_command, stdin_watch);

        while (cmd->stdin_off < cmd->req.stdin_len) {
                size_t left = cmd->req.stdin_len - cmd->stdin_off;
                ssize_t n = write(w->fd, cmd->req.stdin_data + cmd->stdin_off, left < STDIN_CHUNK ? left : STDIN_CHUNK);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN || errno == EWOULDBLOCK)
                                return;
                        break; /* EPIPE: nobody reads stdin any more */
                }
                cmd->stdin_off += (size_t)n;
        }
        /* All written (or unwanted): closing sends EOF. */
        agent_server_watch_close(cmd->server, w);
}

static int command_watch(struct agent_command *cmd, struct agent_watch *w, int fd, uint32_t events, agent_watch_fn fn)
{
        return agent_server_watch_add(cmd->server, w, fd, events, fn);
}

int agent_command_start(struct agent_server *s, struct agent_conn *conn, const struct agent_frame *f, uint8_t **payload,
                        struct agent_command **ret_command, const char **ret_reason)
{
        struct agent_spawn_fds fds;
        int r;

        struct agent_command *cmd = calloc(1, sizeof *cmd);
        if (!cmd)
                return -ENOMEM;
        cmd->server = s;
        agent_watch_init(&cmd->stdin_watch);
        agent_watch_init(&cmd->out[0].watch);
        agent_watch_init(&cmd->out[1].watch);
        agent_watch_init(&cmd->report_watch);

        r = agent_exec_request_parse(f, &cmd->req, ret_reason);
        if (r < 0) {
                free(cmd);
                return r;
        }

        if (cmd->req.tty_cols || cmd->req.job_id || cmd->req.watch_exec) {
                *ret_reason = "TTY, JOB_ID and WATCH_EXEC belong to JOB_START";
                agent_exec_request_release(&cmd->req);
                free(cmd);
                return -EINVAL;
        }
        struct agent_spawn_user user;
        if (cmd->req.user) {
                r = agent_spawn_user_resolve(cmd->req.user, &user);
                if (r < 0) {
                        *ret_reason = r == -ENOENT ? "no such user in the sandbox" : "cannot resolve the user";
                        agent_exec_request_release(&cmd->req);
                        free(cmd);
                        return r;
                }
        }
        cmd->start_us = agent_clock_now_us();
        r = agent_spawn_start(&cmd->req, cmd->req.user ? &user : NULL, &fds, &cmd->pid);
        if (r < 0) {
                *ret_reason = "cannot start the command";
                agent_exec_request_release(&cmd->req);
                free(cmd);
                return r;
        }

        int q = command_watch(cmd, &cmd->out[0].watch, fds.stdout_fd, EPOLLIN, command_on_stdout);
        r = command_watch(cmd, &cmd->out[1].watch, fds.stderr_fd, EPOLLIN, command_on_stderr);
        q = q < 0 ? q : r;
        r = command_watch(cmd, &cmd->report_watch, fds.report_fd, EPOLLIN, command_on_report);
        q = q < 0 ? q : r;
        if (fds.stdin_fd >= 0) {
                if (cmd->req.stdin_len == 0)
                        close(fds.stdin_fd);
                else {
                        r = command_watch(cmd, &cmd->stdin_watch, fds.stdin_fd, EPOLLOUT, command_on_stdin);
                        q = q < 0 ? q : r;
                }
        }
        if (q < 0) {
                /* Cannot collect it: kill it; the server reaps it like any orphan. */
                command_kill(cmd);
                command_close_fds(cmd);
                agent_exec_request_release(&cmd->req);
                free(cmd);
                *ret_reason = "cannot watch the command's pipes";
                return q;
        }

        if (cmd->req.timeout_ms)
                cmd->deadline_us = cmd->start_us + (uint64_t)cmd->req.timeout_ms * 1000u;
        cmd->conn = conn;
        cmd->payload = TAKE_PTR(*payload);
        cmd->next = s->commands;
        s->commands = cmd;
        *ret_command = cmd;
        return 0;
}

void agent_command_on_exit(struct agent_command *cmd, int status)
{
        cmd->exited = true;
        cmd->status = status;
        cmd->exit_us = agent_clock_now_us();
        command_check_done(cmd);
}

uint64_t agent_command_tick(struct agent_command *cmd, uint64_t now_us)
{
        if (cmd->dead)
                return 0;
        if (!cmd->exited) {
                if (cmd->deadline_us && now_us >= cmd->deadline_us) {
                        cmd->timed_out = true;
                        cmd->deadline_us = 0;
                        command_kill(cmd);
                }
                return cmd->deadline_us;
        }
        uint64_t linger_until = cmd->exit_us + AGENT_COMMAND_LINGER_US;
        if (now_us >= linger_until) {
                command_finish(cmd);
                return 0;
        }
        return linger_until;
}

void agent_command_abort(struct agent_command *cmd)
{
        if (cmd->dead)
                return;
        command_kill(cmd);
        command_close_fds(cmd);
        cmd->conn = NULL;
        cmd->dead = true;
}

void agent_command_free(struct agent_command *cmd)
{
        if (!cmd)
                return;
        command_close_fds(cmd);
        free(cmd->out[0].data);
        free(cmd->out[1].data);
        agent_exec_request_release(&cmd->req);
        free(cmd->payload);
        free(cmd);
}
