/* agent_file_data: FILE_DATA frames (see agent_file_data.h). */
#include "agent_protocol/agent_file_data.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

int agent_file_data_check(const struct agent_frame *f, uint64_t at, uint64_t left, const uint8_t **ret_data, uint32_t *ret_len)
{
        const uint8_t *data = NULL, *p, *offset = NULL;
        uint32_t len = 0, n;
        uint16_t tag;
        size_t cursor = 0;
        int r;

        if (f->type != AGENT_MSG_FILE_DATA)
                return -EBADMSG;
        while ((r = agent_frame_next_field(f, &cursor, &tag, &p, &n)) > 0) {
                if (tag == AGENT_F_FILE_OFFSET) {
                        if (offset || n != 8)
                                return -EPROTO;
                        offset = p;
                } else if (tag == AGENT_F_DATA) {
                        if (data || n == 0 || n > AGENT_FILE_CHUNK)
                                return -EPROTO;
                        data = p;
                        len = n;
                }
        }
        if (r < 0 || !offset || !data)
                return -EPROTO;
        uint64_t v = 0;
        for (int i = 7; i >= 0; i--)
                v = v << 8 | offset[i];
        if (v != at)
                return -ESPIPE;
        if (len > left)
                return -EOVERFLOW;
        *ret_data = data;
        *ret_len = len;
        return 0;
}

static void le_put(uint8_t *p, uint64_t v, int size)
{
        for (int i = 0; i < size; i++)
                p[i] = (uint8_t)(v >> (8 * i));
}

/* One frame: header, FILE_OFFSET field, DATA field header, then the caller's bytes. */
static int send_chunk(int fd, uint64_t offset, const uint8_t *data, uint32_t len)
{
        uint8_t head[AGENT_FRAME_HEADER_SIZE + 6 + 8 + 6];
        uint8_t *p = head;

        le_put(p, 6 + 8 + 6 + (uint64_t)len, 4);
        p[4] = AGENT_MSG_FILE_DATA;
        p[5] = AGENT_PROTOCOL_VERSION;
        le_put(p + 6, 0, 2);
        p += AGENT_FRAME_HEADER_SIZE;
        le_put(p, AGENT_F_FILE_OFFSET, 2);
        le_put(p + 2, 8, 4);
        le_put(p + 6, offset, 8);
        p += 14;
        le_put(p, AGENT_F_DATA, 2);
        le_put(p + 2, len, 4);

        struct iovec iov[2] = { { head, sizeof head }, { (void *)data, len } };
        struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 2 };
        while (iov[0].iov_len + iov[1].iov_len > 0) {
                ssize_t k = sendmsg(fd, &msg, MSG_NOSIGNAL);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return errno == EWOULDBLOCK ? -EAGAIN : -errno;
                for (size_t i = 0; i < 2 && k > 0; i++) {
                        size_t take = (size_t)k < iov[i].iov_len ? (size_t)k : iov[i].iov_len;
                        iov[i].iov_base = (uint8_t *)iov[i].iov_base + take;
                        iov[i].iov_len -= take;
                        k -= (ssize_t)take;
                }
                msg.msg_iov = iov[0].iov_len ? iov : iov + 1;
                msg.msg_iovlen = iov[0].iov_len ? 2 : 1;
        }
        return 0;
}

int agent_file_data_send(int fd, uint64_t offset, const void *data, size_t len)
{
        const uint8_t *p = data;

        while (len > 0) {
                uint32_t n = len > AGENT_FILE_CHUNK ? AGENT_FILE_CHUNK : (uint32_t)len;
                int r = send_chunk(fd, offset, p, n);
                if (r < 0)
                        return r;
                p += n;
                len -= n;
                offset += n;
        }
        return 0;
}
