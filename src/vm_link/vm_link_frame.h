/* vm_link_frame: how many agent connections share the one byte stream of a virtio-serial
 * port between a microvm's host side (vm_link_host.c) and its guest init (vm_link_guest.c).
 * Every frame is a 12-byte header (little-endian: stream id, type, zero, payload length)
 * and up to VM_LINK_MAX_PAYLOAD bytes. The host opens streams (one per agent connection
 * accepted on the host socket), either side sends data and closes them; PING/PONG tell the
 * host that the guest still answers. A header of an unknown type, a non-zero reserved
 * field or an oversized length is a corrupt stream: the reader gives up on the link. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VM_LINK_HEADER_SIZE 12
#define VM_LINK_MAX_PAYLOAD 65536

enum vm_link_type {
        VM_LINK_HELLO = 1, /* host → guest, first on a connection: drop every stream; the guest answers HELLO */
        VM_LINK_OPEN = 2,  /* host → guest: connect stream id to the agent */
        VM_LINK_DATA = 3,  /* either way: bytes of stream id */
        VM_LINK_CLOSE = 4, /* either way: stream id is gone (EOF both ways) */
        VM_LINK_PING = 5,  /* host → guest; the guest answers PONG with the same payload */
        VM_LINK_PONG = 6,
};

struct vm_link_header {
        uint32_t stream;
        uint16_t type;
        uint32_t length;
};

void vm_link_header_encode(const struct vm_link_header *h, uint8_t out[VM_LINK_HEADER_SIZE]);
/* 0, or -EPROTO for a header no honest peer sends. */
int vm_link_header_decode(const uint8_t in[VM_LINK_HEADER_SIZE], struct vm_link_header *ret);

/* A growable byte buffer: what was read from the port and not yet parsed, or what waits to
 * be written to a non-blocking descriptor. */
struct vm_link_buffer {
        uint8_t *data;
        size_t len, cap;
};
/* 0 or -ENOMEM. */
int vm_link_buffer_append(struct vm_link_buffer *b, const void *p, size_t n);
/* Appends one frame (header + payload). 0 or -ENOMEM. */
int vm_link_buffer_frame(struct vm_link_buffer *b, uint32_t stream, enum vm_link_type type, const void *payload, size_t n);
void vm_link_buffer_consume(struct vm_link_buffer *b, size_t n);
void vm_link_buffer_release(struct vm_link_buffer *b);
/* Writes as much of b to fd as it takes now (fd non-blocking); 0, or -errno (not EAGAIN). */
int vm_link_buffer_flush(struct vm_link_buffer *b, int fd);

/* The next whole frame at the front of b: 1 with *ret_h and *ret_payload (valid until b
 * changes; consume VM_LINK_HEADER_SIZE + length after use), 0 when more bytes are needed,
 * -EPROTO when the stream is corrupt. */
int vm_link_buffer_next(const struct vm_link_buffer *b, struct vm_link_header *ret_h, const uint8_t **ret_payload);

/* Writes all of p to a blocking fd (EINTR retried); 0 or -errno. */
int vm_link_write_all(int fd, const void *p, size_t n);
