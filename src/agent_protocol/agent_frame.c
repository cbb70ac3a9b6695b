/* agent_frame: encoder, decoder and socket helpers for the spaced <-> space-agent protocol.
 * See agent_frame.h for the wire format. libc only; failures are -errno. */
#include "agent_protocol/agent_frame.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define FIELD_HEADER_SIZE 6u
#define PAYLOAD_MAX (AGENT_FRAME_MAX - AGENT_FRAME_HEADER_SIZE)

static void le16_put(uint8_t *p, uint16_t v)
{
        p[0] = (uint8_t)v;
        p[1] = (uint8_t)(v >> 8);
}

static void le32_put(uint8_t *p, uint32_t v)
{
        for (int i = 0; i < 4; i++)
                p[i] = (uint8_t)(v >> (8 * i));
}

static void le64_put(uint8_t *p, uint64_t v)
{
        for (int i = 0; i < 8; i++)
                p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t le16_get(const uint8_t *p)
{
        return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t le32_get(const uint8_t *p)
{
        uint32_t v = 0;
        for (int i = 3; i >= 0; i--)
                v = (v << 8) | p[i];
        return v;
}

static uint64_t le64_get(const uint8_t *p)
{
        uint64_t v = 0;
        for (int i = 7; i >= 0; i--)
                v = (v << 8) | p[i];
        return v;
}

/* ---- writer ---- */

static int writer_reserve(struct agent_frame_writer *w, size_t extra)
{
        if (w->failed)
                return w->failed;
        if (extra > AGENT_FRAME_MAX - w->len)
                return (w->failed = -E2BIG);

        size_t need = w->len + extra;
        if (need <= w->cap)
                return 0;

        /* Doubling, or straight to the size asked for when that is more (a data chunk). */
        size_t cap = w->cap ? w->cap : 256;
        if (cap < need)
                cap = cap > AGENT_FRAME_MAX / 2 ? AGENT_FRAME_MAX : cap * 2 >= need ? cap * 2 : need;

        uint8_t *data = realloc(w->data, cap);
        if (!data)
                return (w->failed = -ENOMEM);
        w->data = data;
        w->cap = cap;
        return 0;
}

void agent_frame_writer_begin(struct agent_frame_writer *w, enum agent_msg_type type)
{
        *w = (struct agent_frame_writer){};
        agent_frame_writer_restart(w, type);
}

void agent_frame_writer_restart(struct agent_frame_writer *w, enum agent_msg_type type)
{
        *w = (struct agent_frame_writer){ .data = w->data, .cap = w->cap };
        if (writer_reserve(w, AGENT_FRAME_HEADER_SIZE) < 0)
                return;
        le32_put(w->data, 0);
        w->data[4] = (uint8_t)type;
        w->data[5] = AGENT_PROTOCOL_VERSION;
        le16_put(w->data + 6, 0);
        w->len = AGENT_FRAME_HEADER_SIZE;
}


uint8_t *agent_frame_writer_put_space(struct agent_frame_writer *w, uint16_t tag, size_t len)
{
        if (w->failed)
                return NULL;
        if (len > UINT32_MAX || len > AGENT_FRAME_MAX) {
                w->failed = -E2BIG;
                return NULL;
        }
        if (writer_reserve(w, FIELD_HEADER_SIZE + len) < 0)
                return NULL;

        uint8_t *p = w->data + w->len;
        le16_put(p, tag);
        le32_put(p + 2, (uint32_t)len);
        w->len += FIELD_HEADER_SIZE + len;
        return p + FIELD_HEADER_SIZE;
}

void agent_frame_writer_put(struct agent_frame_writer *w, uint16_t tag, const void *data, size_t len)
{
        uint8_t *p = agent_frame_writer_put_space(w, tag, len);

        if (p && len > 0)
                memcpy(p, data, len);
}

void agent_frame_writer_put_str(struct agent_frame_writer *w, uint16_t tag, const char *s)
{
        agent_frame_writer_put(w, tag, s, s ? strlen(s) : 0);
}

void agent_frame_writer_put_u8(struct agent_frame_writer *w, uint16_t tag, uint8_t v)
{
        agent_frame_writer_put(w, tag, &v, 1);
}

void agent_frame_writer_put_u32(struct agent_frame_writer *w, uint16_t tag, uint32_t v)
{
        uint8_t b[4];
        le32_put(b, v);
        agent_frame_writer_put(w, tag, b, sizeof b);
}

void agent_frame_writer_put_i32(struct agent_frame_writer *w, uint16_t tag, int32_t v)
{
        agent_frame_writer_put_u32(w, tag, (uint32_t)v);
}

void agent_frame_writer_put_u64(struct agent_frame_writer *w, uint16_t tag, uint64_t v)
{
        uint8_t b[8];
        le64_put(b, v);
        agent_frame_writer_put(w, tag, b, sizeof b);
}

int agent_frame_writer_finish(struct agent_frame_writer *w)
{
        if (w->failed)
                return w->failed;
        if (!w->data || w->len < AGENT_FRAME_HEADER_SIZE)
                return (w->failed = -EINVAL);
        le32_put(w->data, (uint32_t)(w->len - AGENT_FRAME_HEADER_SIZE));
        return 0;
}

void agent_frame_writer_release(struct agent_frame_writer *w)
{
        if (!w)
                return;
        free(w->data);
        *w = (struct agent_frame_writer){};
}

/* ---- decoder ---- */

int64_t agent_frame_header_decode(const uint8_t header[AGENT_FRAME_HEADER_SIZE], uint8_t *ret_type)
{
        uint32_t len = le32_get(header);

        /* The reserved u16 is written as 0 and ignored on read. */
        if (header[5] != AGENT_PROTOCOL_VERSION && !(header[4] == AGENT_MSG_HELLO && header[5] == AGENT_HELLO_VERSION))
                return -EPROTONOSUPPORT;
        if (len > PAYLOAD_MAX)
                return -E2BIG;
        *ret_type = header[4];
        return len;
}

int agent_frame_next_field(const struct agent_frame *f, size_t *cursor, uint16_t *ret_tag, const uint8_t **ret_data,
                           uint32_t *ret_len)
{
        size_t pos = *cursor;

        if (pos == f->payload_len)
                return 0;
        if (pos > f->payload_len)
                return -EPROTO;

        size_t left = f->payload_len - pos;
        if (left < FIELD_HEADER_SIZE)
                return -EPROTO;

        const uint8_t *p = f->payload + pos;
        uint32_t len = le32_get(p + 2);
        if (len > left - FIELD_HEADER_SIZE)
                return -EPROTO;

        *ret_tag = le16_get(p);
        *ret_data = p + FIELD_HEADER_SIZE;
        *ret_len = len;
        *cursor = pos + FIELD_HEADER_SIZE + len;
        return 1;
}

int agent_frame_find(const struct agent_frame *f, uint16_t tag, const uint8_t **ret_data, uint32_t *ret_len)
{
        size_t cursor = 0;
        uint16_t t;
        const uint8_t *data;
        uint32_t len;
        int r;

        while ((r = agent_frame_next_field(f, &cursor, &t, &data, &len)) > 0)
                if (t == tag) {
                        *ret_data = data;
                        *ret_len = len;
                        return 1;
                }
        return r;
}

static int find_sized(const struct agent_frame *f, uint16_t tag, uint32_t size, const uint8_t **ret_data)
{
        const uint8_t *data;
        uint32_t len;
        int r = agent_frame_find(f, tag, &data, &len);

        if (r <= 0)
                return r;
        if (len != size)
                return -EPROTO;
        *ret_data = data;
        return 1;
}

int agent_frame_get_u8(const struct agent_frame *f, uint16_t tag, uint8_t *ret)
{
        const uint8_t *p;
        int r = find_sized(f, tag, 1, &p);

        if (r > 0)
                *ret = p[0];
        return r;
}

int agent_frame_get_u32(const struct agent_frame *f, uint16_t tag, uint32_t *ret)
{
        const uint8_t *p;
        int r = find_sized(f, tag, 4, &p);

        if (r > 0)
                *ret = le32_get(p);
        return r;
}

int agent_frame_get_i32(const struct agent_frame *f, uint16_t tag, int32_t *ret)
{
        const uint8_t *p;
        int r = find_sized(f, tag, 4, &p);

        if (r > 0)
                *ret = (int32_t)le32_get(p);
        return r;
}

int agent_frame_get_u64(const struct agent_frame *f, uint16_t tag, uint64_t *ret)
{
        const uint8_t *p;
        int r = find_sized(f, tag, 8, &p);

        if (r > 0)
                *ret = le64_get(p);
        return r;
}

/* ---- blocking socket helpers ---- */

int agent_frame_send(int fd, const struct agent_frame_writer *w)
{
        if (w->failed)
                return w->failed;
        /* Only finished frames: the header must carry the payload length. */
        if (!w->data || w->len < AGENT_FRAME_HEADER_SIZE || le32_get(w->data) != w->len - AGENT_FRAME_HEADER_SIZE)
                return -EINVAL;
        return agent_frame_write_all(fd, w->data, w->len);
}

int agent_frame_write_all(int fd, const void *data, size_t len)
{
        const uint8_t *p = data;
        size_t left = len;
        int use_write = 0;

        while (left > 0) {
                ssize_t n = use_write ? write(fd, p, left) : send(fd, p, left, MSG_NOSIGNAL);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == ENOTSOCK && !use_write) {
                                use_write = 1;
                                continue;
                        }
                        return -errno;
                }
                p += n;
                left -= (size_t)n;
        }
        return 0;
}

/* Reads up to n bytes; returns how many arrived before EOF, or -errno. */
static ssize_t read_full(int fd, uint8_t *buf, size_t n)
{
        size_t got = 0;

        while (got < n) {
                ssize_t k = read(fd, buf + got, n - got);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        break;
                got += (size_t)k;
        }
        return (ssize_t)got;
}

int agent_frame_read(int fd, struct agent_frame *ret_frame, uint8_t **ret_buf)
{
        uint8_t header[AGENT_FRAME_HEADER_SIZE];
        uint8_t type;
        ssize_t n;

        n = read_full(fd, header, sizeof header);
        if (n < 0)
                return (int)n;
        if (n == 0)
                return -ECONNRESET;
        if (n < (ssize_t)sizeof header)
                return -EPROTO;

        int64_t len = agent_frame_header_decode(header, &type);
        if (len < 0)
                return (int)len;

        uint8_t *buf = malloc(len > 0 ? (size_t)len : 1);
        if (!buf)
                return -ENOMEM;

        n = read_full(fd, buf, (size_t)len);
        if (n < len) {
                free(buf);
                return n < 0 ? (int)n : -EPROTO;
        }

        *ret_frame = (struct agent_frame){ .type = type, .payload = buf, .payload_len = (uint32_t)len };
        *ret_buf = buf;
        return 0;
}

/* ---- incremental reader ---- */

int agent_frame_reader_fill(struct agent_frame_reader *r, int fd)
{
        for (;;) {
                uint8_t *dst;
                size_t want;
                int in_header = r->header_got < AGENT_FRAME_HEADER_SIZE;

                if (in_header) {
                        dst = r->header + r->header_got;
                        want = AGENT_FRAME_HEADER_SIZE - r->header_got;
                } else {
                        if (r->got == r->len)
                                return 1;
                        dst = r->buf + r->got;
                        want = r->len - r->got;
                }

                ssize_t n = read(fd, dst, want);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN || errno == EWOULDBLOCK)
                                return 0;
                        return -errno;
                }
                if (n == 0)
                        return in_header && r->header_got == 0 ? -ECONNRESET : -EPROTO;

                if (!in_header) {
                        r->got += (uint32_t)n;
                        continue;
                }

                r->header_got += (uint32_t)n;
                if (r->header_got < AGENT_FRAME_HEADER_SIZE)
                        continue;

                int64_t len = agent_frame_header_decode(r->header, &r->type);
                if (len < 0)
                        return (int)len;
                if (r->spare && r->spare_size >= len) {
                        r->buf = r->spare;
                        r->spare = NULL;
                } else
                        r->buf = malloc(len > 0 ? (size_t)len : 1);
                if (!r->buf)
                        return -ENOMEM;
                r->len = (uint32_t)len;
                r->got = 0;
        }
}

void agent_frame_reader_take(struct agent_frame_reader *r, struct agent_frame *ret_frame, uint8_t **ret_buf)
{
        *ret_frame = (struct agent_frame){ .type = r->type, .payload = r->buf, .payload_len = r->len };
        *ret_buf = r->buf;
        *r = (struct agent_frame_reader){ .spare = r->spare, .spare_size = r->spare_size };
}

void agent_frame_reader_recycle(struct agent_frame_reader *r, uint8_t *buf, uint32_t size)
{
        if (!buf)
                return;
        if (size > AGENT_FRAME_READER_SPARE_MAX || (r->spare && r->spare_size >= size)) {
                free(buf);
                return;
        }
        free(r->spare);
        r->spare = buf;
        r->spare_size = size;
}

void agent_frame_reader_release(struct agent_frame_reader *r)
{
        if (!r)
                return;
        free(r->buf);
        free(r->spare);
        *r = (struct agent_frame_reader){};
}
