/* agent_file_data: the FILE_DATA frames that carry a file's bytes in-band, both ways
 * (docs/agent-protocol.md, "Files"). A download is FILE_READ (the agent opens the file and
 * answers FILE_ENTRY) then FILE_FETCH {FILE_OFFSET, FILE_LENGTH}, answered by exactly
 * FILE_LENGTH bytes in FILE_DATA frames; an upload is FILE_CREATE, FILE_DATA frames from
 * spaced (no replies), then FILE_COMMIT. Each frame holds 1..AGENT_FILE_CHUNK bytes at the
 * FILE_OFFSET that follows the previous frame's: a reader checks every frame against what
 * it expects and so holds one bounded frame at a time whatever the other side sends.
 * Flow control is the stream socket's own: a side that does not read stops the writer.
 *
 * Compiled into spaced and space-agent (libc only, -errno). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "agent_protocol/agent_frame.h"

#define AGENT_FILE_CHUNK (64u << 10)
/* The largest FILE_DATA payload: FILE_OFFSET and DATA around one chunk. */
#define AGENT_FILE_DATA_MAX (AGENT_FILE_CHUNK + 2u * 6u + 8u)

/* Checks f as the next FILE_DATA frame of a transfer whose next byte is at offset at and
 * which takes at most left more bytes. 0 with *ret_data and *ret_len (1..AGENT_FILE_CHUNK
 * bytes, pointing into f); -EBADMSG for another frame type, -EPROTO when malformed (no,
 * repeated or wrong-sized FILE_OFFSET or DATA, empty or oversized DATA, fields overrunning
 * the payload), -ESPIPE when FILE_OFFSET is not at, -EOVERFLOW for more than left. */
int agent_file_data_check(const struct agent_frame *f, uint64_t at, uint64_t left, const uint8_t **ret_data, uint32_t *ret_len);

/* Sends len bytes (any size; split in chunks) as FILE_DATA frames from offset on a blocking
 * socket, without copying them. 0, or -errno (-EAGAIN: the socket's send timeout passed,
 * the reader stalled). */
int agent_file_data_send(int fd, uint64_t offset, const void *data, size_t len);
