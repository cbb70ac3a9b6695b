/* Unit tests of spaced's side of in-band file transfers (agent_file_fetch, agent_file_data)
 * against a stand-in agent on a socketpair that lies: more bytes than asked, a file cut
 * short, a stall, frames of the wrong type or out of order, frames over the bound. Every
 * case must end the transfer with its own error, at once or at the deadline, and never
 * hand out a byte outside the range asked for. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent_protocol/agent_client.h"
#include "agent_protocol/agent_file_data.h"
#include "agent_protocol/agent_file_fetch.h"
#include "agent_protocol/agent_frame.h"

/* ---- the stand-in agent ---- */

static void send_frame(int fd, struct agent_frame_writer *w)
{
        if (agent_frame_writer_finish(w) < 0 || agent_frame_send(fd, w) < 0)
                _exit(3);
        agent_frame_writer_release(w);
}

/* A FILE_DATA frame built by hand, so it can lie. */
static void data_frame(int fd, uint64_t offset, const void *data, size_t len)
{
        struct agent_frame_writer w;
        agent_frame_writer_begin(&w, AGENT_MSG_FILE_DATA);
        agent_frame_writer_put_u64(&w, AGENT_F_FILE_OFFSET, offset);
        agent_frame_writer_put(&w, AGENT_F_DATA, data, len);
        send_frame(fd, &w);
}

/* Reads the FILE_FETCH the client sends and checks it asks for [offset, offset + length). */
static void expect_fetch(int fd, uint64_t offset, uint64_t length)
{
        struct agent_frame f;
        uint8_t *buf;
        uint64_t o = 0, l = 0;
        if (agent_frame_read(fd, &f, &buf) < 0 || f.type != AGENT_MSG_FILE_FETCH ||
            agent_frame_get_u64(&f, AGENT_F_FILE_OFFSET, &o) != 1 || agent_frame_get_u64(&f, AGENT_F_FILE_LENGTH, &l) != 1 ||
            o != offset || l != length)
                _exit(4);
        free(buf);
}

static uint8_t pattern(uint64_t i)
{
        return (uint8_t)(i * 131 + (i >> 12));
}

enum behaviour { HONEST, OVERSEND, SHORT_EOF, SHORT_ERROR, STALL, WRONG_TYPE, OUT_OF_ORDER, OVERSIZE, EMPTY, OLD_VERSION };

/* Forks the agent: it answers a FILE_FETCH of [offset, offset + length) as told. */
static pid_t agent_start(int fd, enum behaviour how, uint64_t offset, uint64_t length)
{
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid > 0)
                return pid;
        static uint8_t chunk[AGENT_FILE_CHUNK + 1];
        alarm(10); /* never outlives a failed test */
        expect_fetch(fd, offset, length);
        uint64_t at = offset, end = offset + length;
        if (how == SHORT_EOF || how == SHORT_ERROR)
                end = offset + length / 2;
        switch (how) {
        case OVERSEND:
                /* All it was asked for but one chunk, then a chunk past the end. */
                for (; at + AGENT_FILE_CHUNK < offset + length; at += AGENT_FILE_CHUNK) {
                        for (uint32_t i = 0; i < AGENT_FILE_CHUNK; i++)
                                chunk[i] = pattern(at + i);
                        data_frame(fd, at, chunk, AGENT_FILE_CHUNK);
                }
                data_frame(fd, at, chunk, AGENT_FILE_CHUNK);
                _exit(0);
        case STALL:
                pause();
                _exit(0);
        case WRONG_TYPE: {
                struct agent_frame_writer w;
                agent_frame_writer_begin(&w, AGENT_MSG_FILE_ENTRY);
                agent_frame_writer_put_str(&w, AGENT_F_FILE_PATH, "/x");
                send_frame(fd, &w);
                pause();
                _exit(0);
        }
        case OUT_OF_ORDER:
                for (uint32_t i = 0; i < 12; i++)
                        chunk[i] = pattern(offset + i);
                data_frame(fd, offset, chunk, 2);
                data_frame(fd, offset + 10, chunk + 10, 2);
                pause();
                _exit(0);
        case OVERSIZE: {
                uint8_t h[8] = { 0, 0, 0x10, 0, AGENT_MSG_FILE_DATA, AGENT_PROTOCOL_VERSION, 0, 0 }; /* 1 MiB */
                if (write(fd, h, sizeof h) != sizeof h)
                        _exit(5);
                pause();
                _exit(0);
        }
        case EMPTY:
                data_frame(fd, offset, "", 0);
                pause();
                _exit(0);
        case OLD_VERSION: {
                uint8_t h[8] = { 0, 0, 0, 0, AGENT_MSG_FILE_DATA, AGENT_PROTOCOL_VERSION - 1, 0, 0 };
                if (write(fd, h, sizeof h) != sizeof h)
                        _exit(5);
                pause();
                _exit(0);
        }
        default:
                break;
        }
        while (at < end) {
                uint32_t n = end - at > AGENT_FILE_CHUNK ? AGENT_FILE_CHUNK : (uint32_t)(end - at);
                for (uint32_t i = 0; i < n; i++)
                        chunk[i] = pattern(at + i);
                data_frame(fd, at, chunk, n);
                at += n;
        }
        if (how == SHORT_ERROR) {
                struct agent_frame_writer w;
                agent_frame_writer_begin(&w, AGENT_MSG_ERROR);
                agent_frame_writer_put_i32(&w, AGENT_F_ERRNO, EIO);
                agent_frame_writer_put_str(&w, AGENT_F_MESSAGE, "read /f: the file ended before the range asked for");
                send_frame(fd, &w);
        }
        if (how == HONEST)
                data_frame(fd, end, "extra", 5); /* past the end: never read */
        _exit(0);
}

static void agent_stop(pid_t pid)
{
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
}

/* ---- the client ---- */

struct run {
        ssize_t result; /* the last read: 0 at the end, or the error */
        uint64_t got;   /* bytes handed out, all checked against the pattern */
        char message[256];
        double seconds;
};

static double now_s(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static struct run fetch(enum behaviour how, uint64_t offset, uint64_t length, int timeout_ms)
{
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        pid_t pid = agent_start(sv[1], how, offset, length);
        close(sv[1]);
        struct agent_file_fetch f;
        struct run run = { 0 };
        double t0 = now_s();
        assert_int_equal(agent_file_fetch_start(&f, sv[0], offset, length, timeout_ms), 0);
        static uint8_t buf[100000]; /* not a divisor of the chunk: frames are handed out in pieces */
        for (;;) {
                ssize_t n = agent_file_fetch_read(&f, buf, sizeof buf);
                if (n <= 0) {
                        run.result = n;
                        break;
                }
                assert_true(run.got + (uint64_t)n <= length);
                for (ssize_t i = 0; i < n; i++)
                        if (buf[i] != pattern(offset + run.got + (uint64_t)i))
                                fail_msg("byte %llu differs", (unsigned long long)(run.got + (uint64_t)i));
                run.got += (uint64_t)n;
        }
        /* A failed transfer stays failed. */
        assert_int_equal(agent_file_fetch_read(&f, buf, sizeof buf), run.result);
        snprintf(run.message, sizeof run.message, "%s", f.message);
        run.seconds = now_s() - t0;
        agent_file_fetch_release(&f);
        agent_stop(pid);
        return run;
}

static void test_honest_range(void **state)
{
        struct run r = fetch(HONEST, 1000, 3 * AGENT_FILE_CHUNK + 17, 5000);
        assert_int_equal(r.result, 0);
        assert_int_equal(r.got, 3 * AGENT_FILE_CHUNK + 17);
}

static void test_zero_length_sends_nothing(void **state)
{
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        struct agent_file_fetch f;
        char b[4];
        assert_int_equal(agent_file_fetch_start(&f, sv[0], 0, 0, 1000), 0);
        assert_int_equal(agent_file_fetch_read(&f, b, sizeof b), 0);
        agent_file_fetch_release(&f);
        assert_int_equal(read(sv[1], b, sizeof b), 0); /* closed, nothing sent */
        close(sv[1]);
}

static void test_oversend_is_refused(void **state)
{
        struct run r = fetch(OVERSEND, 0, 2 * AGENT_FILE_CHUNK + 5, 5000);
        assert_int_equal(r.result, -EOVERFLOW);
        assert_int_equal(r.got, 2 * AGENT_FILE_CHUNK); /* what came before the lie, all of it right */
        assert_non_null(strstr(r.message, "more bytes"));
}

static void test_short_file(void **state)
{
        struct run r = fetch(SHORT_EOF, 0, 600000, 5000);
        assert_int_equal(r.result, -EPROTO);
        assert_int_equal(r.got, 300000);
        assert_non_null(strstr(r.message, "closed the connection"));
        r = fetch(SHORT_ERROR, 0, 600000, 5000);
        assert_int_equal(r.result, -EIO);
        assert_int_equal(r.got, 300000);
        assert_string_equal(r.message, "read /f: the file ended before the range asked for");
}

static void test_stall_times_out(void **state)
{
        struct run r = fetch(STALL, 0, 100, 300);
        assert_int_equal(r.result, -ETIMEDOUT);
        assert_int_equal(r.got, 0);
        assert_true(r.seconds >= 0.25 && r.seconds < 5);
}

static void test_wrong_frame_type(void **state)
{
        struct run r = fetch(WRONG_TYPE, 0, 100, 2000);
        assert_int_equal(r.result, -EBADMSG);
        assert_true(r.seconds < 1.5); /* at once, not at the deadline */
}

static void test_out_of_order(void **state)
{
        struct run r = fetch(OUT_OF_ORDER, 7, 100, 2000);
        assert_int_equal(r.result, -ESPIPE);
        assert_int_equal(r.got, 2);
}

static void test_frame_over_the_bound(void **state)
{
        struct run r = fetch(OVERSIZE, 0, 10u << 20, 2000);
        assert_int_equal(r.result, -EMSGSIZE);
        assert_true(r.seconds < 1.5); /* refused on the header, the payload is never awaited */
        r = fetch(EMPTY, 0, 100, 2000);
        assert_int_equal(r.result, -EPROTO);
        r = fetch(OLD_VERSION, 0, 100, 2000);
        assert_int_equal(r.result, -EPROTONOSUPPORT);
}

/* The frame checker on its own: every malformed shape has its error. */
static void test_data_check(void **state)
{
        struct agent_frame_writer w;
        struct agent_frame f;
        const uint8_t *data;
        uint32_t len;
#define FRAME(build)                                                                                    \
        do {                                                                                            \
                agent_frame_writer_begin(&w, AGENT_MSG_FILE_DATA);                                      \
                build;                                                                                  \
                assert_int_equal(agent_frame_writer_finish(&w), 0);                                     \
                f = (struct agent_frame){ .type = w.data[4],                                            \
                                          .payload = w.data + AGENT_FRAME_HEADER_SIZE,                  \
                                          .payload_len = (uint32_t)(w.len - AGENT_FRAME_HEADER_SIZE) }; \
        } while (0)
        FRAME((agent_frame_writer_put_u64(&w, AGENT_F_FILE_OFFSET, 5), agent_frame_writer_put(&w, AGENT_F_DATA, "abc", 3),
               agent_frame_writer_put_u8(&w, 999, 1)));
        assert_int_equal(agent_file_data_check(&f, 5, 3, &data, &len), 0); /* unknown tags skipped */
        assert_int_equal(len, 3);
        assert_memory_equal(data, "abc", 3);
        assert_int_equal(agent_file_data_check(&f, 5, 2, &data, &len), -EOVERFLOW);
        assert_int_equal(agent_file_data_check(&f, 4, 3, &data, &len), -ESPIPE);
        f.type = AGENT_MSG_FILE_ENTRY;
        assert_int_equal(agent_file_data_check(&f, 5, 3, &data, &len), -EBADMSG);
        agent_frame_writer_release(&w);
        FRAME(agent_frame_writer_put(&w, AGENT_F_DATA, "abc", 3)); /* no offset */
        assert_int_equal(agent_file_data_check(&f, 0, 3, &data, &len), -EPROTO);
        agent_frame_writer_release(&w);
        FRAME((agent_frame_writer_put_u32(&w, AGENT_F_FILE_OFFSET, 0), agent_frame_writer_put(&w, AGENT_F_DATA, "a", 1)));
        assert_int_equal(agent_file_data_check(&f, 0, 3, &data, &len), -EPROTO); /* offset not a u64 */
        agent_frame_writer_release(&w);
        FRAME((agent_frame_writer_put_u64(&w, AGENT_F_FILE_OFFSET, 0), agent_frame_writer_put(&w, AGENT_F_DATA, "a", 1),
               agent_frame_writer_put(&w, AGENT_F_DATA, "b", 1)));
        assert_int_equal(agent_file_data_check(&f, 0, 3, &data, &len), -EPROTO); /* two DATA */
        f.payload_len -= 1;                                                      /* the last field overruns */
        assert_int_equal(agent_file_data_check(&f, 0, 3, &data, &len), -EPROTO);
        agent_frame_writer_release(&w);
        static uint8_t big[AGENT_FILE_CHUNK + 1];
        FRAME((agent_frame_writer_put_u64(&w, AGENT_F_FILE_OFFSET, 0),
               agent_frame_writer_put(&w, AGENT_F_DATA, big, sizeof big)));
        assert_int_equal(agent_file_data_check(&f, 0, UINT64_MAX, &data, &len), -EPROTO); /* over a chunk */
        agent_frame_writer_release(&w);
#undef FRAME
}

/* An upload to an agent that stops reading ends at the socket's send timeout. */
static void test_upload_to_a_stalled_agent(void **state)
{
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        struct timeval tv = { .tv_sec = 0, .tv_usec = 300000 };
        assert_int_equal(setsockopt(sv[0], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv), 0);
        static uint8_t piece[4096];
        uint64_t sent = 0;
        int r;
        double t0 = now_s();
        while ((r = agent_file_data_send(sv[0], sent, piece, sizeof piece)) == 0)
                sent += sizeof piece;
        assert_int_equal(r, -EAGAIN);
        assert_true(now_s() - t0 < 5);
        assert_true(sent > 0);
        /* What did go out is whole frames in order, as far as the socket took them. */
        close(sv[0]);
        struct agent_frame f;
        uint8_t *buf;
        uint64_t at = 0;
        while ((r = agent_frame_read(sv[1], &f, &buf)) == 0) {
                const uint8_t *data;
                uint32_t len;
                assert_int_equal(agent_file_data_check(&f, at, UINT64_MAX - at, &data, &len), 0);
                at += len;
                free(buf);
        }
        assert_true(r == -ECONNRESET || r == -EPROTO); /* the frame being sent may be cut */
        assert_true(at >= sent && at <= sent + sizeof piece);
        close(sv[1]);
}

int main(void)
{
        signal(SIGPIPE, SIG_IGN);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_honest_range),        cmocka_unit_test(test_zero_length_sends_nothing),
                cmocka_unit_test(test_oversend_is_refused), cmocka_unit_test(test_short_file),
                cmocka_unit_test(test_stall_times_out),     cmocka_unit_test(test_wrong_frame_type),
                cmocka_unit_test(test_out_of_order),        cmocka_unit_test(test_frame_over_the_bound),
                cmocka_unit_test(test_data_check),          cmocka_unit_test(test_upload_to_a_stalled_agent),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
