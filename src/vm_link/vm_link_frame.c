#include "vm_link/vm_link_frame.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void put_u32(uint8_t *p, uint32_t v)
{
        p[0] = (uint8_t)v;
        p[1] = (uint8_t)(v >> 8);
        p[2] = (uint8_t)(v >> 16);
        p[3] = (uint8_t)(v >> 24);
}

static uint32_t get_u32(const uint8_t *p)
{
        return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void vm_link_header_encode(const struct vm_link_header *h, uint8_t out[VM_LINK_HEADER_SIZE])
{
        put_u32(out, h->stream);
        out[4] = (uint8_t)h->type;
        out[5] = (uint8_t)(h->type >> 8);
        out[6] = out[7] = 0;
        put_u32(out + 8, h->length);
}

int vm_link_header_decode(const uint8_t in[VM_LINK_HEADER_SIZE], struct vm_link_header *ret)
{
        struct vm_link_header h = {
                .stream = get_u32(in),
                .type = (uint16_t)(in[4] | in[5] << 8),
                .length = get_u32(in + 8),
        };
        if (in[6] || in[7] || h.type < VM_LINK_HELLO || h.type > VM_LINK_PONG || h.length > VM_LINK_MAX_PAYLOAD)
                return -EPROTO;
        if (h.type != VM_LINK_DATA && h.type != VM_LINK_PING && h.type != VM_LINK_PONG && h.length != 0)
                return -EPROTO;
        *ret = h;
        return 0;
}

int vm_link_buffer_append(struct vm_link_buffer *b, const void *p, size_t n)
{
        if (b->len + n > b->cap) {
                size_t cap = b->cap ? b->cap : 4096;
                while (cap < b->len + n)
                        cap *= 2;
                uint8_t *d = realloc(b->data, cap);
                if (!d)
                        return -ENOMEM;
                b->data = d;
                b->cap = cap;
        }
        if (n)
                memcpy(b->data + b->len, p, n);
        b->len += n;
        return 0;
}

int vm_link_buffer_frame(struct vm_link_buffer *b, uint32_t stream, enum vm_link_type type, const void *payload, size_t n)
{
        uint8_t head[VM_LINK_HEADER_SIZE];
        vm_link_header_encode(&(struct vm_link_header){ .stream = stream, .type = (uint16_t)type, .length = (uint32_t)n }, head);
        int r = vm_link_buffer_append(b, head, sizeof(head));
        return r < 0 ? r : vm_link_buffer_append(b, payload, n);
}

void vm_link_buffer_consume(struct vm_link_buffer *b, size_t n)
{
        if (n >= b->len) {
                b->len = 0;
                return;
        }
        memmove(b->data, b->data + n, b->len - n);
        b->len -= n;
}

void vm_link_buffer_release(struct vm_link_buffer *b)
{
        free(b->data);
        *b = (struct vm_link_buffer){ 0 };
}

int vm_link_buffer_flush(struct vm_link_buffer *b, int fd)
{
        size_t done = 0;
        while (done < b->len) {
                ssize_t n = write(fd, b->data + done, b->len - done);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                        break;
                if (n < 0) {
                        int e = errno;
                        vm_link_buffer_consume(b, done);
                        return -e;
                }
                done += (size_t)n;
        }
        vm_link_buffer_consume(b, done);
        return 0;
}

int vm_link_buffer_next(const struct vm_link_buffer *b, struct vm_link_header *ret_h, const uint8_t **ret_payload)
{
        if (b->len < VM_LINK_HEADER_SIZE)
                return 0;
        int r = vm_link_header_decode(b->data, ret_h);
        if (r < 0)
                return r;
        if (b->len < VM_LINK_HEADER_SIZE + (size_t)ret_h->length)
                return 0;
        *ret_payload = b->data + VM_LINK_HEADER_SIZE;
        return 1;
}

int vm_link_write_all(int fd, const void *p, size_t n)
{
        const uint8_t *c = p;
        while (n) {
                ssize_t w = write(fd, c, n);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w < 0)
                        return -errno;
                c += w;
                n -= (size_t)w;
        }
        return 0;
}
