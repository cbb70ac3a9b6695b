#include "agent_protocol/agent_job_client.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "agent_protocol/agent_client.h"
#include "cleanup.h"

/* Sends w (released) on fd and reads the reply; an ERROR reply becomes -errno. The reply
 * frame is returned when ret_frame is set. */
static int request(int fd, struct agent_frame_writer *w, uint8_t want, struct agent_frame *ret_frame, uint8_t **ret_buf,
                   char *msg, size_t msg_size)
{
        struct agent_frame f;
        _cleanup_free_ uint8_t *buf = NULL;
        int r = agent_client_roundtrip(fd, w, want, AGENT_CLIENT_REPLY_MAX, &f, &buf, msg, msg_size);
        if (r == 0 && ret_frame) {
                *ret_frame = f;
                *ret_buf = TAKE_PTR(buf);
        }
        return r;
}

int agent_job_client_start(int fd, const struct agent_job_spec *spec, uint32_t *ret_pid, char *msg, size_t msg_size)
{
        struct agent_frame_writer w;
        agent_frame_writer_begin(&w, AGENT_MSG_JOB_START);
        agent_frame_writer_put_str(&w, AGENT_F_JOB_ID, spec->job_id);
        for (char **a = spec->argv; a && *a; a++)
                agent_frame_writer_put_str(&w, AGENT_F_ARGV, *a);
        for (char **e = spec->envp; e && *e; e++)
                agent_frame_writer_put_str(&w, AGENT_F_ENV, *e);
        if (spec->cwd)
                agent_frame_writer_put_str(&w, AGENT_F_CWD, spec->cwd);
        if (spec->user)
                agent_frame_writer_put_str(&w, AGENT_F_USER, spec->user);
        agent_frame_writer_put_u8(&w, AGENT_F_STDIN_OPEN, spec->stdin_open);
        if (spec->tty_cols && spec->tty_rows) {
                agent_frame_writer_put_u32(&w, AGENT_F_TTY_COLS, spec->tty_cols);
                agent_frame_writer_put_u32(&w, AGENT_F_TTY_ROWS, spec->tty_rows);
        }
        agent_frame_writer_put_u32(&w, AGENT_F_TIMEOUT_MS, spec->timeout_ms);
        if (spec->watch_exec)
                agent_frame_writer_put_u8(&w, AGENT_F_WATCH_EXEC, 1);
        struct agent_frame f;
        _cleanup_free_ uint8_t *buf = NULL;
        int r = request(fd, &w, AGENT_MSG_JOB_STARTED, &f, &buf, msg, msg_size);
        if (r < 0)
                return r;
        uint32_t pid = 0;
        agent_frame_get_u32(&f, AGENT_F_JOB_PID, &pid);
        *ret_pid = pid;
        return 0;
}

static void control_begin(struct agent_frame_writer *w, enum agent_msg_type type, const char *job_id)
{
        agent_frame_writer_begin(w, type);
        agent_frame_writer_put_str(w, AGENT_F_JOB_ID, job_id);
}

int agent_job_client_input(int fd, const char *job_id, const void *data, size_t len, char *msg, size_t msg_size)
{
        struct agent_frame_writer w;
        control_begin(&w, AGENT_MSG_JOB_INPUT, job_id);
        agent_frame_writer_put(&w, AGENT_F_DATA, data, len);
        return request(fd, &w, AGENT_MSG_OK, NULL, NULL, msg, msg_size);
}

int agent_job_client_close_stdin(int fd, const char *job_id, char *msg, size_t msg_size)
{
        struct agent_frame_writer w;
        control_begin(&w, AGENT_MSG_JOB_CLOSE_STDIN, job_id);
        return request(fd, &w, AGENT_MSG_OK, NULL, NULL, msg, msg_size);
}

int agent_job_client_signal(int fd, const char *job_id, int sig, char *msg, size_t msg_size)
{
        struct agent_frame_writer w;
        control_begin(&w, AGENT_MSG_JOB_SIGNAL, job_id);
        agent_frame_writer_put_i32(&w, AGENT_F_SIGNAL, sig);
        return request(fd, &w, AGENT_MSG_OK, NULL, NULL, msg, msg_size);
}

int agent_job_client_resize(int fd, const char *job_id, uint32_t cols, uint32_t rows, char *msg, size_t msg_size)
{
        struct agent_frame_writer w;
        control_begin(&w, AGENT_MSG_JOB_RESIZE, job_id);
        agent_frame_writer_put_u32(&w, AGENT_F_TTY_COLS, cols);
        agent_frame_writer_put_u32(&w, AGENT_F_TTY_ROWS, rows);
        return request(fd, &w, AGENT_MSG_OK, NULL, NULL, msg, msg_size);
}

int agent_job_client_subscribe(int fd, struct agent_frame *ret_frame, uint8_t **ret_buf)
{
        struct agent_frame_writer w;
        agent_frame_writer_begin(&w, AGENT_MSG_JOB_SUBSCRIBE);
        int r = agent_client_roundtrip(fd, &w, AGENT_MSG_JOB_SUBSCRIBED, AGENT_CLIENT_LIST_MAX, ret_frame, ret_buf, NULL, 0);
        if (r < 0)
                return r;
        /* From now on the channel waits for output for as long as it takes. */
        struct timeval none = { 0 };
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof(none));
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &none, sizeof(none));
        return 0;
}

/* Sends a frame the agent does not answer (on the output channel). */
static int send_unanswered(int fd, struct agent_frame_writer *w)
{
        int r = agent_frame_writer_finish(w);
        if (r == 0)
                r = agent_frame_send(fd, w);
        agent_frame_writer_release(w);
        return r;
}

int agent_job_client_ack(int fd, const char *job_id, uint64_t seq)
{
        struct agent_frame_writer w;
        control_begin(&w, AGENT_MSG_JOB_ACK, job_id);
        agent_frame_writer_put_u64(&w, AGENT_F_SEQ, seq);
        return send_unanswered(fd, &w);
}

int agent_job_client_exec_verdict(int fd, uint64_t check_id, bool allow, const char *message)
{
        struct agent_frame_writer w;
        agent_frame_writer_begin(&w, AGENT_MSG_JOB_EXEC_VERDICT);
        agent_frame_writer_put_u64(&w, AGENT_F_EXEC_CHECK_ID, check_id);
        agent_frame_writer_put_u8(&w, AGENT_F_EXEC_ALLOW, allow ? 1 : 0);
        if (message && message[0])
                agent_frame_writer_put_str(&w, AGENT_F_MESSAGE, message);
        return send_unanswered(fd, &w);
}
