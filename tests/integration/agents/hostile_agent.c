/* hostile_agent: a stand-in for space-agent that lies, for tests/integration/
 * test_security_agent_output.py. It is PID 1 of its sandbox like the real agent
 * (`--listen-fd 3`) and answers HELLO honestly, but its exec replies ignore the output cap
 * and the clock, as a sandbox root that took PID 1 over could. The command's argv[0] says how:
 *   flood N      stdout of N MiB in one EXEC_RESULT, claiming nothing was truncated
 *   fields N     N MiB of stdout split over many STDOUT fields
 *   trickle      a reply that never ends: one byte a second
 *   bigerror N   an ERROR frame with an N MiB message
 *   hugeframe    a header announcing 64 MiB, then nothing
 *   (else)       a small honest reply "ok\n"
 * FILE_STAT gets a 40 MiB FILE_ENTRY. FILE_READ of any path answers a regular file of
 * 1 MiB + 100 bytes; its FILE_FETCH then lies by the path's name:
 *   /oversend    64 KiB frames past the end of the range (the 17th crosses it)
 *   /wrongtype   a FILE_ENTRY where the bytes should be
 *   /hugeframe   a FILE_DATA header announcing 64 MiB, then nothing
 *   (else)       half of the range, then an ERROR (EIO)
 * JOB_SUBSCRIBE is answered, then the channel gets
 * output for 200 jobs spaced never started and one 8 MiB event, and is kept open.
 * Every connection is served by a child process; libc only, built static by the test. */
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

enum { HELLO = 1, HELLO_REPLY = 2, EXEC = 3, EXEC_RESULT = 4, ERROR = 5, FILE_STAT = 40, FILE_ENTRY = 41,
       FILE_READ = 42, FILE_FETCH = 54, FILE_DATA = 55, JOB_SUBSCRIBE = 12, JOB_SUBSCRIBED = 13, JOB_OUTPUT = 14 };
enum { F_VERSION = 1, F_AGENT_PID = 2, F_ARGV = 10, F_EXIT_CODE = 20, F_TERM_SIGNAL = 21, F_STDOUT = 22,
       F_STDERR = 23, F_TRUNCATED = 24, F_ERRNO = 30, F_MESSAGE = 31, F_JOB_ID = 40, F_SEQ = 45, F_STREAM = 46,
       F_DATA = 47, F_FILE_PATH = 80, F_FILE_NAME = 90, F_FILE_TYPE = 91, F_FILE_SIZE = 92, F_FILE_OFFSET = 98 };

#define LIE_FILE_SIZE ((1u << 20) + 100)

static int write_all(int fd, const void *buf, size_t len)
{
        const uint8_t *p = buf;
        while (len > 0) {
                ssize_t n = write(fd, p, len);
                if (n <= 0)
                        return -1;
                p += n;
                len -= (size_t)n;
        }
        return 0;
}

static void le32(uint8_t *p, uint32_t v)
{
        for (int i = 0; i < 4; i++)
                p[i] = (uint8_t)(v >> (8 * i));
}

static int frame_header(int fd, uint8_t type, uint32_t payload)
{
        uint8_t h[8] = { 0 };
        le32(h, payload);
        h[4] = type;
        h[5] = 2; /* AGENT_PROTOCOL_VERSION */
        return write_all(fd, h, sizeof(h));
}

static int field_header(int fd, uint16_t tag, uint32_t len)
{
        uint8_t h[6] = { (uint8_t)tag, (uint8_t)(tag >> 8) };
        le32(h + 2, len);
        return write_all(fd, h, sizeof(h));
}

static int field(int fd, uint16_t tag, const void *data, uint32_t len)
{
        return field_header(fd, tag, len) < 0 ? -1 : write_all(fd, data, len);
}

static int filler(int fd, uint32_t len)
{
        static uint8_t block[65536];
        memset(block, 'A', sizeof(block));
        while (len > 0) {
                uint32_t n = len < sizeof(block) ? len : (uint32_t)sizeof(block);
                if (write_all(fd, block, n) < 0)
                        return -1;
                len -= n;
        }
        return 0;
}

static int read_all(int fd, void *buf, size_t len)
{
        uint8_t *p = buf;
        while (len > 0) {
                ssize_t n = read(fd, p, len);
                if (n <= 0)
                        return -1;
                p += n;
                len -= (size_t)n;
        }
        return 0;
}

/* argv[0] and argv[1] of an EXEC request. */
static void exec_args(const uint8_t *p, uint32_t len, char *a0, char *a1, size_t size)
{
        int seen = 0;
        for (uint32_t pos = 0; pos + 6 <= len;) {
                uint16_t tag = (uint16_t)(p[pos] | p[pos + 1] << 8);
                uint32_t flen = (uint32_t)p[pos + 2] | (uint32_t)p[pos + 3] << 8 | (uint32_t)p[pos + 4] << 16 |
                                (uint32_t)p[pos + 5] << 24;
                pos += 6;
                if (flen > len - pos)
                        return;
                if (tag == F_ARGV && seen < 2) {
                        char *dst = seen++ == 0 ? a0 : a1;
                        size_t n = flen < size - 1 ? flen : size - 1;
                        memcpy(dst, p + pos, n);
                        dst[n] = 0;
                }
                pos += flen;
        }
}

static void serve_exec(int fd, const char *a0, const char *a1)
{
        uint32_t mib = (uint32_t)atoi(a1) << 20;
        uint8_t zero4[4] = { 0 }, no = 0;
        if (!strcmp(a0, "flood") || !strcmp(a0, "fields")) {
                uint32_t pieces = !strcmp(a0, "fields") ? 64 : 1, piece = mib / pieces;
                uint32_t payload = pieces * (6 + piece) + (6 + 4) + (6 + 4) + (6 + 1);
                frame_header(fd, EXEC_RESULT, payload);
                field(fd, F_EXIT_CODE, zero4, 4);
                field(fd, F_TERM_SIGNAL, zero4, 4);
                field(fd, F_TRUNCATED, &no, 1); /* a lie */
                for (uint32_t i = 0; i < pieces; i++)
                        if (field_header(fd, F_STDOUT, piece) < 0 || filler(fd, piece) < 0)
                                return;
        } else if (!strcmp(a0, "trickle")) {
                frame_header(fd, EXEC_RESULT, 1024);
                for (;;) {
                        if (write_all(fd, "A", 1) < 0)
                                return;
                        sleep(1);
                }
        } else if (!strcmp(a0, "bigerror")) {
                uint8_t e[4];
                le32(e, 5);
                frame_header(fd, ERROR, (6 + 4) + 6 + mib);
                field(fd, F_ERRNO, e, 4);
                field_header(fd, F_MESSAGE, mib);
                filler(fd, mib);
        } else if (!strcmp(a0, "hugeframe")) {
                frame_header(fd, EXEC_RESULT, (64u << 20) - 8);
                pause();
        } else {
                frame_header(fd, EXEC_RESULT, (6 + 4) + (6 + 4) + (6 + 3));
                field(fd, F_EXIT_CODE, zero4, 4);
                field(fd, F_TERM_SIGNAL, zero4, 4);
                field(fd, F_STDOUT, "ok\n", 3);
        }
}

static void le64(uint8_t *p, uint64_t v)
{
        for (int i = 0; i < 8; i++)
                p[i] = (uint8_t)(v >> (8 * i));
}

static void data_frame(int fd, uint64_t offset, uint32_t n)
{
        uint8_t off[8];
        le64(off, offset);
        frame_header(fd, FILE_DATA, (6 + 8) + (6 + n));
        field(fd, F_FILE_OFFSET, off, 8);
        field_header(fd, F_DATA, n);
        filler(fd, n);
}

/* The FILE_PATH of a request, NUL-terminated into buf ("" when absent). */
static void request_path(const uint8_t *p, uint32_t len, char *buf, size_t size)
{
        buf[0] = 0;
        for (uint32_t pos = 0; pos + 6 <= len;) {
                uint16_t tag = (uint16_t)(p[pos] | p[pos + 1] << 8);
                uint32_t n = (uint32_t)p[pos + 2] | (uint32_t)p[pos + 3] << 8 | (uint32_t)p[pos + 4] << 16 |
                             (uint32_t)p[pos + 5] << 24;
                if (n > len - pos - 6)
                        return;
                if (tag == F_FILE_PATH && n < size) {
                        memcpy(buf, p + pos + 6, n);
                        buf[n] = 0;
                }
                pos += 6 + n;
        }
}

static void serve_fetch(int fd, const char *path)
{
        if (strcmp(path, "/oversend") == 0) {
                for (uint64_t at = 0; at < 2 * LIE_FILE_SIZE; at += 64u << 10)
                        data_frame(fd, at, 64u << 10);
        } else if (strcmp(path, "/wrongtype") == 0) {
                uint8_t type = 1;
                frame_header(fd, FILE_ENTRY, (6 + 2) + (6 + 1));
                field(fd, F_FILE_PATH, "/x", 2);
                field(fd, F_FILE_TYPE, &type, 1);
        } else if (strcmp(path, "/hugeframe") == 0) {
                frame_header(fd, FILE_DATA, 64u << 20);
        } else {
                data_frame(fd, 0, LIE_FILE_SIZE / 2);
                uint8_t e[4];
                le32(e, 5); /* EIO */
                frame_header(fd, ERROR, (6 + 4) + (6 + 10));
                field(fd, F_ERRNO, e, 4);
                field(fd, F_MESSAGE, "read: lies", 10);
        }
        pause();
}

static void serve(int fd)
{
        char path[256] = "";
        for (;;) {
                uint8_t h[8];
                if (read_all(fd, h, sizeof(h)) < 0)
                        return;
                uint32_t len = (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 24;
                if (len > (64u << 20))
                        return;
                uint8_t *p = malloc(len ? len : 1);
                if (!p || read_all(fd, p, len) < 0)
                        return;
                if (h[4] == HELLO) {
                        uint8_t pid[4];
                        le32(pid, (uint32_t)getpid());
                        frame_header(fd, HELLO_REPLY, (6 + 7) + (6 + 4));
                        field(fd, F_VERSION, "hostile", 7);
                        field(fd, F_AGENT_PID, pid, 4);
                } else if (h[4] == EXEC) {
                        char a0[64] = "", a1[64] = "0";
                        exec_args(p, len, a0, a1, sizeof(a0));
                        serve_exec(fd, a0, a1);
                        return;
                } else if (h[4] == JOB_SUBSCRIBE) {
                        frame_header(fd, JOB_SUBSCRIBED, 0);
                        uint8_t seq[8] = { 1 }, stream = 1;
                        uint32_t piece = 64u << 10;
                        for (int i = 0; i < 200; i++) {
                                char id[32];
                                int n = 0;
                                memcpy(id, "fake-", 5);
                                n = 5;
                                id[n++] = (char)('0' + i / 100);
                                id[n++] = (char)('0' + i / 10 % 10);
                                id[n++] = (char)('0' + i % 10);
                                frame_header(fd, JOB_OUTPUT, (6 + (uint32_t)n) + (6 + 8) + (6 + 1) + (6 + piece));
                                field(fd, F_JOB_ID, id, (uint32_t)n);
                                field(fd, F_SEQ, seq, 8);
                                field(fd, F_STREAM, &stream, 1);
                                field_header(fd, F_DATA, piece);
                                filler(fd, piece);
                        }
                        uint32_t big = 8u << 20;
                        frame_header(fd, JOB_OUTPUT, (6 + 8) + (6 + 8) + (6 + 1) + (6 + big));
                        field(fd, F_JOB_ID, "fake-big", 8);
                        field(fd, F_SEQ, seq, 8);
                        field(fd, F_STREAM, &stream, 1);
                        field_header(fd, F_DATA, big);
                        filler(fd, big);
                        pause();
                } else if (h[4] == FILE_READ) {
                        uint8_t type = 1, size[8];
                        le64(size, LIE_FILE_SIZE);
                        request_path(p, len, path, sizeof(path));
                        frame_header(fd, FILE_ENTRY, (6 + 2) + (6 + 1) + (6 + 8));
                        field(fd, F_FILE_PATH, "/x", 2);
                        field(fd, F_FILE_TYPE, &type, 1);
                        field(fd, F_FILE_SIZE, size, 8);
                } else if (h[4] == FILE_FETCH) {
                        serve_fetch(fd, path);
                        return;
                } else if (h[4] == FILE_STAT) {
                        uint32_t big = 40u << 20;
                        frame_header(fd, FILE_ENTRY, (6 + 1) + 6 + big);
                        field(fd, F_FILE_PATH, "/", 1);
                        field_header(fd, F_FILE_NAME, big);
                        filler(fd, big);
                } else {
                        uint8_t e[4];
                        le32(e, 38); /* ENOSYS */
                        frame_header(fd, ERROR, 6 + 4);
                        field(fd, F_ERRNO, e, 4);
                }
                free(p);
        }
}

int main(void)
{
        signal(SIGCHLD, SIG_IGN); /* children are reaped by the kernel */
        signal(SIGPIPE, SIG_IGN);
        for (;;) {
                struct pollfd p = { .fd = 3, .events = POLLIN };
                if (poll(&p, 1, -1) < 0)
                        continue;
                int c = accept(3, NULL, NULL);
                if (c < 0)
                        continue;
                if (fork() == 0) {
                        close(3);
                        serve(c);
                        _exit(0);
                }
                close(c);
        }
}
