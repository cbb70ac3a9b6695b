/* agent_file_fetch: a download's FILE_DATA frames, checked one by one (agent_file_fetch.h). */
#include "agent_protocol/agent_file_fetch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_protocol/agent_client.h"
#include "agent_protocol/agent_file_data.h"

static int fetch_fail(struct agent_file_fetch *f, int r, const char *what)
{
        f->error = r;
        if (what)
                snprintf(f->message, sizeof f->message, "%s", what);
        else if (!f->message[0])
                snprintf(f->message, sizeof f->message, "%s", strerror(-r));
        return r;
}

int agent_file_fetch_start(struct agent_file_fetch *f, int fd, uint64_t offset, uint64_t length, int timeout_ms)
{
        struct agent_frame_writer w;

        *f = (struct agent_file_fetch){ .fd = fd, .at = offset, .left = length, .timeout_ms = timeout_ms };
        if (length == 0)
                return 0;
        agent_frame_writer_begin(&w, AGENT_MSG_FILE_FETCH);
        agent_frame_writer_put_u64(&w, AGENT_F_FILE_OFFSET, offset);
        agent_frame_writer_put_u64(&w, AGENT_F_FILE_LENGTH, length);
        int r = agent_frame_writer_finish(&w);
        if (r == 0)
                r = agent_frame_send(fd, &w);
        agent_frame_writer_release(&w);
        return r < 0 ? fetch_fail(f, r, "cannot ask the agent for the file's bytes") : 0;
}

/* Reads the next frame into f->data: 0, or the failure (recorded). */
static int fetch_next(struct agent_file_fetch *f)
{
        struct agent_frame fr;

        if (!f->buf && !(f->buf = malloc(AGENT_FILE_DATA_MAX)))
                return fetch_fail(f, -ENOMEM, NULL);
        int r = agent_client_read_into(f->fd, f->buf, AGENT_FILE_DATA_MAX, agent_client_deadline(f->timeout_ms), &fr);
        if (r == -ECONNRESET)
                return fetch_fail(f, -EPROTO, "the agent closed the connection before the end of the file");
        if (r == -ETIMEDOUT)
                return fetch_fail(f, r, "the agent sent none of the file's bytes in time");
        if (r == -EMSGSIZE)
                return fetch_fail(f, r, "the agent sent a frame over the bound of a data frame");
        if (r < 0)
                return fetch_fail(f, r, NULL);
        if (fr.type == AGENT_MSG_ERROR) {
                int e;
                agent_client_error(&fr, &e, f->message, sizeof f->message);
                return fetch_fail(f, -e, NULL);
        }
        r = agent_file_data_check(&fr, f->at, f->left, &f->data, &f->data_len);
        switch (r) {
        case 0:
                f->at += f->data_len;
                f->left -= f->data_len;
                return 0;
        case -EBADMSG:
                return fetch_fail(f, r, "the agent sent another frame than the file's bytes");
        case -ESPIPE:
                return fetch_fail(f, r, "the agent sent the file's bytes out of order");
        case -EOVERFLOW:
                return fetch_fail(f, r, "the agent sent more bytes than the file has");
        default:
                return fetch_fail(f, r, "the agent sent a malformed data frame");
        }
}

ssize_t agent_file_fetch_read(struct agent_file_fetch *f, void *buf, size_t max)
{
        if (f->error)
                return f->error;
        if (f->data_len == 0) {
                if (f->left == 0)
                        return 0;
                int r = fetch_next(f);
                if (r < 0)
                        return r;
        }
        size_t n = f->data_len < max ? f->data_len : max;
        memcpy(buf, f->data, n);
        f->data += n;
        f->data_len -= (uint32_t)n;
        return (ssize_t)n;
}

void agent_file_fetch_release(struct agent_file_fetch *f)
{
        if (!f)
                return;
        free(f->buf);
        if (f->fd >= 0)
                close(f->fd);
        *f = (struct agent_file_fetch){ .fd = -1 };
}
