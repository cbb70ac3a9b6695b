/* agent_file_fetch: spaced's side of a download's bytes. After FILE_READ answered
 * FILE_ENTRY on a connection, a fetch asks for one range of that file (FILE_FETCH) and
 * hands out its FILE_DATA frames as they come, checking each one: the right type, the next
 * offset, no more than the range. Everything the agent sends is untrusted: one frame of at
 * most AGENT_FILE_DATA_MAX bytes is held at a time, each frame must arrive within the
 * timeout (a stalled agent ends the download), and any surprise ends it for good with an
 * error and a message saying what the agent did. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent_protocol/agent_frame.h"

struct agent_file_fetch {
        int fd;              /* the agent connection, owned; -1 */
        uint64_t at, left;   /* the next offset expected, bytes still to come */
        int timeout_ms;      /* for each frame */
        uint8_t *buf;        /* AGENT_FILE_DATA_MAX bytes: the frame being handed out */
        const uint8_t *data; /* its bytes not handed out yet */
        uint32_t data_len;
        int error; /* sticky -errno */
        char message[256];
};

/* Sends FILE_FETCH {offset, length} on fd (taken, also on failure) and readies f. A zero
 * length sends nothing. 0 or -errno (f->message says why). */
int agent_file_fetch_start(struct agent_file_fetch *f, int fd, uint64_t offset, uint64_t length, int timeout_ms);
/* Copies the next bytes of the range into buf: > 0 bytes, 0 once the whole range came,
 * -errno when the transfer failed (then and later; f->message says why): -ETIMEDOUT (no
 * frame within the timeout), -EPROTO (EOF, a malformed frame), -EBADMSG (a frame of
 * another type than FILE_DATA or ERROR), -ESPIPE (out of order), -EOVERFLOW (more than
 * asked for), -EMSGSIZE (a frame over the bound), or the errno of an agent ERROR. */
ssize_t agent_file_fetch_read(struct agent_file_fetch *f, void *buf, size_t max);
/* Closes the connection and frees the frame; accepts a released f. */
void agent_file_fetch_release(struct agent_file_fetch *f);
