#include "agent_protocol/agent_client.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "agent_protocol/agent_frame.h"
#include "cleanup.h"
#include "runtime/runtime_driver.h"

#define EXEC_GRACE_MS 10000 /* beyond the command's own timeout, for the agent to report */

static int64_t now_us(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t agent_client_deadline(int timeout_ms)
{
        return timeout_ms > 0 ? now_us() + (int64_t)timeout_ms * 1000 : 0;
}

int64_t agent_client_socket_deadline(int fd)
{
        struct timeval tv = { 0 };
        socklen_t len = sizeof(tv);
        if (getsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, &len) < 0 || (tv.tv_sec == 0 && tv.tv_usec == 0))
                return 0;
        return now_us() + (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
}

int agent_client_wait(int fd, int64_t deadline_us)
{
        if (deadline_us <= 0)
                return 0; /* blocking reads (and SO_RCVTIMEO, if set) do the waiting */
        for (;;) {
                int64_t left = deadline_us - now_us();
                if (left <= 0)
                        return -ETIMEDOUT;
                struct pollfd p = { .fd = fd, .events = POLLIN };
                int n = poll(&p, 1, (int)((left + 999) / 1000));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n > 0)
                        return 0;
        }
}

int agent_client_read_exact(int fd, void *buf, size_t len, int64_t deadline_us)
{
        size_t got = 0;
        while (got < len) {
                int r = agent_client_wait(fd, deadline_us);
                if (r < 0)
                        return r;
                ssize_t n = read(fd, (uint8_t *)buf + got, len - got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
                if (n == 0)
                        return got == 0 ? -ECONNRESET : -EPROTO;
                got += (size_t)n;
        }
        return 0;
}

/* Reads and checks a frame header: 0 with *ret_type and *ret_len (<= max_payload), or -errno. */
static int read_header(int fd, uint32_t max_payload, int64_t deadline_us, uint8_t *ret_type, uint32_t *ret_len)
{
        uint8_t header[AGENT_FRAME_HEADER_SIZE];
        int r = agent_client_read_exact(fd, header, sizeof(header), deadline_us);
        if (r < 0)
                return r;
        int64_t len = agent_frame_header_decode(header, ret_type);
        if (len < 0)
                return (int)len;
        if ((uint64_t)len > max_payload)
                return -EMSGSIZE;
        *ret_len = (uint32_t)len;
        return 0;
}

int agent_client_read(int fd, uint32_t max_payload, int64_t deadline_us, struct agent_frame *ret_frame, uint8_t **ret_buf)
{
        uint8_t type = 0;
        uint32_t len = 0;
        int r = read_header(fd, max_payload, deadline_us, &type, &len);
        if (r < 0)
                return r;
        _cleanup_free_ uint8_t *buf = malloc(len > 0 ? (size_t)len : 1);
        if (!buf)
                return -ENOMEM;
        r = agent_client_read_exact(fd, buf, (size_t)len, deadline_us);
        if (r < 0)
                return r == -ECONNRESET ? -EPROTO : r;
        *ret_frame = (struct agent_frame){ .type = type, .payload = buf, .payload_len = len };
        *ret_buf = TAKE_PTR(buf);
        return 0;
}

int agent_client_read_into(int fd, uint8_t *buf, uint32_t size, int64_t deadline_us, struct agent_frame *ret_frame)
{
        uint8_t type = 0;
        uint32_t len = 0;
        int r = read_header(fd, size, deadline_us, &type, &len);
        if (r < 0)
                return r;
        r = agent_client_read_exact(fd, buf, (size_t)len, deadline_us);
        if (r < 0)
                return r == -ECONNRESET ? -EPROTO : r;
        *ret_frame = (struct agent_frame){ .type = type, .payload = buf, .payload_len = len };
        return 0;
}

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

int agent_client_roundtrip(int fd, struct agent_frame_writer *w, uint8_t want, uint32_t max_payload,
                           struct agent_frame *ret_frame, uint8_t **ret_buf, char *msg, size_t msg_size)
{
        int r = agent_frame_writer_finish(w);
        if (r == 0)
                r = agent_frame_send(fd, w);
        agent_frame_writer_release(w);
        if (r < 0)
                return r;
        struct agent_frame f;
        _cleanup_free_ uint8_t *buf = NULL;
        r = agent_client_read(fd, max_payload, agent_client_socket_deadline(fd), &f, &buf);
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
        if (w.data)
                w.data[5] = AGENT_HELLO_VERSION; /* any agent answers, in its own version */
        struct agent_frame f;
        _cleanup_free_ uint8_t *buf = NULL;
        int r = agent_client_roundtrip(fd, &w, AGENT_MSG_HELLO_REPLY, AGENT_CLIENT_REPLY_MAX, &f, &buf, NULL, 0);
        if (r < 0)
                return r;
        uint32_t pid = 0;
        agent_frame_get_u32(&f, AGENT_F_AGENT_PID, &pid);
        if (ret_pid)
                *ret_pid = pid;
        return 0;
}

/* One stream of an exec result: keeps what fits under the cap, drops the rest. */
static int exec_stream_read(int fd, uint32_t len, uint32_t cap, int64_t deadline, uint8_t **buf, size_t *have, bool *truncated)
{
        size_t keep = *have < cap ? cap - *have : 0;
        if (keep > len)
                keep = len;
        if (keep > 0) {
                uint8_t *grown = realloc(*buf, *have + keep + 1);
                if (!grown)
                        return -ENOMEM;
                *buf = grown;
                int r = agent_client_read_exact(fd, grown + *have, keep, deadline);
                if (r < 0)
                        return r == -ECONNRESET ? -EPROTO : r;
                *have += keep;
                grown[*have] = 0;
        }
        uint8_t scratch[16384];
        for (uint32_t left = len - (uint32_t)keep; left > 0;) {
                uint32_t n = left < sizeof(scratch) ? left : (uint32_t)sizeof(scratch);
                int r = agent_client_read_exact(fd, scratch, n, deadline);
                if (r < 0)
                        return r == -ECONNRESET ? -EPROTO : r;
                left -= n;
                *truncated = true;
        }
        return 0;
}

/* Reads an EXEC_RESULT field by field, so that the agent's claims of size cost spaced at
 * most cap bytes per stream however large the frame is. */
static int exec_reply_read(int fd, uint32_t cap, int64_t deadline, struct exec_result *ret, char *msg, size_t msg_size)
{
        uint8_t header[AGENT_FRAME_HEADER_SIZE], type;
        int r = agent_client_read_exact(fd, header, sizeof(header), deadline);
        if (r < 0)
                return r;
        int64_t payload = agent_frame_header_decode(header, &type);
        if (payload < 0)
                return (int)payload;
        if (type != AGENT_MSG_EXEC_RESULT) {
                if (type != AGENT_MSG_ERROR)
                        return -EPROTO;
                if ((uint64_t)payload > AGENT_CLIENT_REPLY_MAX)
                        return -EMSGSIZE;
                _cleanup_free_ uint8_t *buf = malloc(payload > 0 ? (size_t)payload : 1);
                if (!buf)
                        return -ENOMEM;
                if ((r = agent_client_read_exact(fd, buf, (size_t)payload, deadline)) < 0)
                        return r == -ECONNRESET ? -EPROTO : r;
                struct agent_frame f = { .type = type, .payload = buf, .payload_len = (uint32_t)payload };
                int e;
                agent_client_error(&f, &e, msg, msg_size);
                return -e;
        }
        struct exec_result res = { 0 };
        uint8_t flags = 0, timed_out = 0;
        for (uint64_t left = (uint64_t)payload; left > 0;) {
                uint8_t fh[6], small[8];
                if (left < sizeof(fh)) {
                        r = -EPROTO;
                        goto fail;
                }
                if ((r = agent_client_read_exact(fd, fh, sizeof(fh), deadline)) < 0)
                        goto fail;
                uint16_t tag = (uint16_t)(fh[0] | fh[1] << 8);
                uint32_t len = (uint32_t)fh[2] | (uint32_t)fh[3] << 8 | (uint32_t)fh[4] << 16 | (uint32_t)fh[5] << 24;
                left -= sizeof(fh);
                if (len > left) {
                        r = -EPROTO;
                        goto fail;
                }
                left -= len;
                if (tag == AGENT_F_STDOUT)
                        r = exec_stream_read(fd, len, cap, deadline, &res.out, &res.out_len, &res.truncated);
                else if (tag == AGENT_F_STDERR)
                        r = exec_stream_read(fd, len, cap, deadline, &res.err, &res.err_len, &res.truncated);
                else if (len <= sizeof(small)) {
                        if ((r = agent_client_read_exact(fd, small, len, deadline)) < 0)
                                goto fail;
                        uint32_t v32 = len == 4 ? (uint32_t)small[0] | (uint32_t)small[1] << 8 | (uint32_t)small[2] << 16 |
                                        (uint32_t)small[3] << 24
                                                : 0;
                        if (tag == AGENT_F_EXIT_CODE && len == 4)
                                res.exit_code = (int32_t)v32;
                        else if (tag == AGENT_F_TERM_SIGNAL && len == 4)
                                res.term_signal = (int32_t)v32;
                        else if (tag == AGENT_F_TRUNCATED && len >= 1)
                                flags = small[0];
                        else if (tag == AGENT_F_TIMED_OUT && len >= 1)
                                timed_out = small[0];
                        else if (tag == AGENT_F_DURATION_US && len == 8)
                                for (int i = 7; i >= 0; i--)
                                        res.duration_us = res.duration_us << 8 | small[i];
                } else if (len > AGENT_CLIENT_FIELD_MAX) {
                        r = -EPROTO; /* no other field of an exec result is large */
                } else {
                        uint8_t skip[AGENT_CLIENT_FIELD_MAX];
                        r = agent_client_read_exact(fd, skip, len, deadline); /* a field this spaced does not know */
                }
                if (r < 0)
                        goto fail;
        }
        res.truncated = res.truncated || flags != 0;
        res.timed_out = timed_out != 0;
        *ret = res;
        return 0;
fail:
        exec_result_release(&res);
        return r == -ECONNRESET ? -EPROTO : r;
}

int agent_client_exec(const char *socket_path, const struct exec_request *req, struct exec_result *ret, char *msg,
                      size_t msg_size)
{
        /* The agent enforces the command's timeout; allow it time to report. */
        int wait_ms = req->timeout_ms ? (int)req->timeout_ms + EXEC_GRACE_MS : 0;
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
        int r = agent_frame_writer_finish(&w);
        if (r == 0)
                r = agent_frame_send(fd, &w);
        agent_frame_writer_release(&w);
        if (r < 0)
                return r;
        return exec_reply_read(fd, req->output_cap ? req->output_cap : UINT32_MAX, agent_client_deadline(wait_ms), ret, msg,
                               msg_size);
}
