/* Fuzz target for the agent protocol as spaced reads it: the input is what a hostile
 * sandbox writes on its agent connection. The first byte picks the reader, the next five
 * its parameters, the rest (at most 128 KiB) is the agent's byte stream, written into a
 * socketpair whose other end spaced's code reads:
 *   0: file replies (agent_files_read), each reply's entries walked (agent_files_next_entry);
 *   1: a download (agent_file_fetch) of LENGTH bytes (u32 at 1..4) from OFFSET (byte 5 * 4096),
 *      handed out in pieces of (byte 5 + 1) * 97 bytes: never more than LENGTH bytes, the
 *      whole LENGTH exactly when it ends without error, and every failure says why;
 *   2: the agent's own incremental reader (agent_frame_reader_fill) and the upload check
 *      (agent_file_data_check) as the agent applies them to what spaced sends.
 * Any violated invariant aborts. Built with clang -fsanitize=fuzzer it is a libFuzzer
 * target; built normally (with fuzz_stdin_main.c) it reads one input from stdin. */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent_protocol/agent_file_data.h"
#include "agent_protocol/agent_file_fetch.h"
#include "agent_protocol/agent_files_client.h"
#include "agent_protocol/agent_frame.h"

#define STREAM_MAX (128u << 10) /* fits the socket's buffer: no writer thread needed */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void file_replies(int fd)
{
        for (int i = 0; i < 64; i++) {
                struct agent_file_reply reply;
                char msg[128] = "";
                int r = agent_files_read(fd, &reply, msg, sizeof(msg));
                if (r < 0) {
                        if (reply.buf)
                                abort(); /* a failed read hands nothing out */
                        return;
                }
                struct agent_file_entry e;
                size_t cursor = 0;
                int n = 0;
                while ((r = agent_files_next_entry(&reply.frame, &cursor, &e)) == 1) {
                        if (cursor > reply.frame.payload_len || (e.path_len && e.path < (const char *)reply.frame.payload))
                                abort();
                        if (++n > 100000)
                                abort(); /* every entry moves the cursor */
                }
                agent_file_reply_release(&reply);
        }
}

static void download(int fd, const uint8_t *params)
{
        uint64_t length = (uint64_t)params[0] | (uint64_t)params[1] << 8 | (uint64_t)params[2] << 16 | (uint64_t)params[3] << 24;
        uint64_t offset = (uint64_t)params[4] * 4096;
        size_t piece = ((size_t)params[4] + 1) * 97;
        static uint8_t buf[256 * 97];
        struct agent_file_fetch f;
        if (agent_file_fetch_start(&f, fd, offset, length, 1000) < 0) {
                agent_file_fetch_release(&f);
                return;
        }
        uint64_t got = 0;
        ssize_t n;
        while ((n = agent_file_fetch_read(&f, buf, piece)) > 0) {
                if ((size_t)n > piece)
                        abort();
                got += (uint64_t)n;
                if (got > length)
                        abort(); /* never a byte beyond the range */
        }
        if (n == 0 && got != length)
                abort(); /* an end without error is the whole range */
        if (n < 0 && (!f.message[0] || agent_file_fetch_read(&f, buf, piece) != n))
                abort(); /* a failure says why and stays */
        agent_file_fetch_release(&f);
}

static void agent_reader(int fd)
{
        struct agent_frame_reader rd = { 0 };
        uint64_t at = 0;
        if (fcntl(fd, F_SETFL, O_NONBLOCK) < 0)
                return;
        for (int i = 0; i < 4096; i++) {
                int r = agent_frame_reader_fill(&rd, fd);
                if (r <= 0)
                        break;
                struct agent_frame f;
                uint8_t *payload;
                agent_frame_reader_take(&rd, &f, &payload);
                size_t cursor = 0;
                uint16_t tag;
                const uint8_t *p;
                uint32_t len;
                while ((r = agent_frame_next_field(&f, &cursor, &tag, &p, &len)) > 0)
                        if (p < f.payload || p + len > f.payload + f.payload_len)
                                abort();
                uint64_t v64;
                uint32_t v32;
                uint8_t v8;
                (void)agent_frame_get_u64(&f, AGENT_F_FILE_OFFSET, &v64);
                (void)agent_frame_get_u32(&f, AGENT_F_FILE_MODE, &v32);
                (void)agent_frame_get_u8(&f, AGENT_F_FILE_SYNC, &v8);
                if (agent_file_data_check(&f, at, UINT64_MAX - at, &p, &len) == 0) {
                        if (len == 0 || len > AGENT_FILE_CHUNK || p < f.payload || p + len > f.payload + f.payload_len)
                                abort();
                        at += len;
                }
                free(payload);
        }
        agent_frame_reader_release(&rd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size < 6)
                return 0;
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                abort();
        size_t len = size - 6 > STREAM_MAX ? STREAM_MAX : size - 6;
        for (size_t off = 0; off < len;) {
                ssize_t n = write(sv[1], data + 6 + off, len - off);
                if (n <= 0)
                        abort();
                off += (size_t)n;
        }
        shutdown(sv[1], SHUT_WR); /* then EOF: no read waits for its deadline */
        switch (data[0] % 3) {
        case 0:
                file_replies(sv[0]);
                close(sv[0]);
                break;
        case 1:
                download(sv[0], data + 1); /* takes sv[0] */
                break;
        default:
                agent_reader(sv[0]);
                close(sv[0]);
        }
        close(sv[1]);
        return 0;
}
