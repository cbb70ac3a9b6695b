#include "agent_protocol/agent_client.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent_protocol/agent_frame.h"
#include "cleanup.h"
#include "runtime/runtime_driver.h"

int agent_client_connect(const char *path, int timeout_ms)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, path);
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (timeout_ms > 0) {
                struct timeval tv = { .tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000 };
                setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
                setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        }
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                return -errno;
        return TAKE_FD(fd);
}

void agent_client_error(const struct agent_frame *f, int *ret_errno, char *msg, size_t size)
{
        int32_t e = EIO;
        const uint8_t *data;
        uint32_t len;
        agent_frame_get_i32(f, AGENT_F_ERRNO, &e);
        if (msg && size) {
                if (agent_frame_find(f, AGENT_F_MESSAGE, &data, &len) == 1)
                        snprintf(msg, size, "%.*s", (int)len, (const char *)data);
                else
                        snprintf(msg, size, "agent error %d", (int)e);
        }
        *ret_errno = e > 0 ? e : EIO;
}

int agent_client_roundtrip(int fd, struct agent_frame_writer *w, uint8_t want, struct agent_frame *ret_frame,
                           uint8_t **ret_buf, char *msg, size_t msg_size)
{
        int r = agent_frame_writer_finish(w);
        if (r == 0)
                r = agent_frame_send(fd, w);
        agent_frame_writer_release(w);
        if (r < 0)
                return r;
        struct agent_frame f;
        _cleanup_free_ uint8_t *buf = NULL;
        r = agent_frame_read(fd, &f, &buf);
        if (r < 0)
                return r;
        if (f.type == AGENT_MSG_ERROR) {
                int e;
                agent_client_error(&f, &e, msg, msg_size);
                return -e;
        }
        if (f.type != want)
                return -EPROTO;
        *ret_frame = f;
        *ret_buf = TAKE_PTR(buf);
        return 0;
}

int agent_client_hello(const char *socket_path, int timeout_ms, uint32_t *ret_pid)
{
        _cleanup_close_ int fd = agent_client_connect(socket_path, timeout_ms);
        if (fd < 0)
                return fd;
        struct agent_frame_writer w;
        agent_frame_writer_begin(&w, AGENT_MSG_HELLO);
        struct agent_frame f;
        _cleanup_free_ uint8_t *buf = NULL;
        int r = agent_client_roundtrip(fd, &w, AGENT_MSG_HELLO_REPLY, &f, &buf, NULL, 0);
        if (r < 0)
                return r;
        uint32_t pid = 0;
        agent_frame_get_u32(&f, AGENT_F_AGENT_PID, &pid);
        if (ret_pid)
                *ret_pid = pid;
        return 0;
}

static int copy_bytes(const struct agent_frame *f, uint16_t tag, uint8_t **ret, size_t *ret_len)
{
        const uint8_t *data;
        uint32_t len;
        *ret = NULL;
        *ret_len = 0;
        if (agent_frame_find(f, tag, &data, &len) != 1)
                return 0;
        *ret = malloc(len + 1);
        if (!*ret)
                return -ENOMEM;
        memcpy(*ret, data, len);
        (*ret)[len] = 0;
        *ret_len = len;
        return 0;
}

int agent_client_exec(const char *socket_path, const struct exec_request *req, struct exec_result *ret, char *msg,
                      size_t msg_size)
{
        /* The agent enforces the command's timeout; allow it time to report. */
        int wait_ms = req->timeout_ms ? (int)req->timeout_ms + 10000 : 0;
        _cleanup_close_ int fd = agent_client_connect(socket_path, wait_ms);
        if (fd < 0)
                return fd;

        struct agent_frame_writer w;
        agent_frame_writer_begin(&w, AGENT_MSG_EXEC);
        for (char **a = req->argv; a && *a; a++)
                agent_frame_writer_put_str(&w, AGENT_F_ARGV, *a);
        for (char **e = req->envp; e && *e; e++)
                agent_frame_writer_put_str(&w, AGENT_F_ENV, *e);
        if (req->cwd)
                agent_frame_writer_put_str(&w, AGENT_F_CWD, req->cwd);
        if (req->user)
                agent_frame_writer_put_str(&w, AGENT_F_USER, req->user);
        if (req->has_stdin)
                agent_frame_writer_put(&w, AGENT_F_STDIN, req->stdin_data, req->stdin_len);
        agent_frame_writer_put_u32(&w, AGENT_F_TIMEOUT_MS, req->timeout_ms);
        if (req->output_cap)
                agent_frame_writer_put_u32(&w, AGENT_F_OUTPUT_CAP, req->output_cap);
        struct agent_frame f;
        _cleanup_free_ uint8_t *buf = NULL;
        int r = agent_client_roundtrip(fd, &w, AGENT_MSG_EXEC_RESULT, &f, &buf, msg, msg_size);
        if (r < 0)
                return r;

        memset(ret, 0, sizeof(*ret));
        int32_t exit_code = 0, sig = 0;
        uint32_t trunc = 0, timed_out = 0;
        const uint8_t *data;
        uint32_t len;
        agent_frame_get_i32(&f, AGENT_F_EXIT_CODE, &exit_code);
        agent_frame_get_i32(&f, AGENT_F_TERM_SIGNAL, &sig);
        if (agent_frame_find(&f, AGENT_F_TRUNCATED, &data, &len) == 1 && len >= 1)
                trunc = data[0];
        if (agent_frame_find(&f, AGENT_F_TIMED_OUT, &data, &len) == 1 && len >= 1)
                timed_out = data[0];
        agent_frame_get_u64(&f, AGENT_F_DURATION_US, &ret->duration_us);
        ret->exit_code = exit_code;
        ret->term_signal = sig;
        ret->truncated = trunc != 0;
        ret->timed_out = timed_out != 0;
        if (copy_bytes(&f, AGENT_F_STDOUT, &ret->out, &ret->out_len) < 0 ||
            copy_bytes(&f, AGENT_F_STDERR, &ret->err, &ret->err_len) < 0) {
                exec_result_release(ret);
                return -ENOMEM;
        }
        return 0;
}
