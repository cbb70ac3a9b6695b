/* Unit tests of the agent_frame codec: writer, decoder, blocking and incremental reads. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent_protocol/agent_frame.h"

static struct agent_frame frame_of(const struct agent_frame_writer *w)
{
        uint8_t type = 0;
        int64_t len = agent_frame_header_decode(w->data, &type);

        assert_true(len >= 0);
        assert_int_equal(len, w->len - AGENT_FRAME_HEADER_SIZE);
        return (struct agent_frame){ .type = type, .payload = w->data + AGENT_FRAME_HEADER_SIZE, .payload_len = (uint32_t)len };
}

static void test_round_trip(void **state)
{
        struct agent_frame_writer w;

        agent_frame_writer_begin(&w, AGENT_MSG_EXEC_RESULT);
        agent_frame_writer_put_i32(&w, AGENT_F_EXIT_CODE, -7);
        agent_frame_writer_put_u32(&w, AGENT_F_AGENT_PID, 0xdeadbeefu);
        agent_frame_writer_put_u64(&w, AGENT_F_DURATION_US, 0x0123456789abcdefull);
        agent_frame_writer_put_u8(&w, AGENT_F_TRUNCATED, 3);
        agent_frame_writer_put_str(&w, AGENT_F_MESSAGE, "hello");
        agent_frame_writer_put(&w, AGENT_F_STDOUT, "a\0b", 3);
        agent_frame_writer_put(&w, AGENT_F_STDERR, NULL, 0);
        assert_int_equal(agent_frame_writer_finish(&w), 0);

        /* Header: length, type, version, reserved. */
        assert_int_equal(w.data[4], AGENT_MSG_EXEC_RESULT);
        assert_int_equal(w.data[5], AGENT_PROTOCOL_VERSION);
        assert_int_equal(w.data[6], 0);
        assert_int_equal(w.data[7], 0);
        uint32_t le = (uint32_t)w.data[0] | (uint32_t)w.data[1] << 8 | (uint32_t)w.data[2] << 16 | (uint32_t)w.data[3] << 24;
        assert_int_equal(le, w.len - 8);

        struct agent_frame f = frame_of(&w);
        assert_int_equal(f.type, AGENT_MSG_EXEC_RESULT);

        int32_t i32;
        uint32_t u32;
        uint64_t u64;
        uint8_t u8;
        const uint8_t *data;
        uint32_t len;
        assert_int_equal(agent_frame_get_i32(&f, AGENT_F_EXIT_CODE, &i32), 1);
        assert_int_equal(i32, -7);
        assert_int_equal(agent_frame_get_u32(&f, AGENT_F_AGENT_PID, &u32), 1);
        assert_int_equal(u32, 0xdeadbeefu);
        assert_int_equal(agent_frame_get_u64(&f, AGENT_F_DURATION_US, &u64), 1);
        assert_true(u64 == 0x0123456789abcdefull);
        assert_int_equal(agent_frame_get_u8(&f, AGENT_F_TRUNCATED, &u8), 1);
        assert_int_equal(u8, 3);
        assert_int_equal(agent_frame_find(&f, AGENT_F_MESSAGE, &data, &len), 1);
        assert_int_equal(len, 5);
        assert_memory_equal(data, "hello", 5);
        assert_int_equal(agent_frame_find(&f, AGENT_F_STDOUT, &data, &len), 1);
        assert_int_equal(len, 3);
        assert_memory_equal(data, "a\0b", 3);
        assert_int_equal(agent_frame_find(&f, AGENT_F_STDERR, &data, &len), 1);
        assert_int_equal(len, 0);

        /* Absent fields and wrong sizes. */
        assert_int_equal(agent_frame_get_u32(&f, AGENT_F_TIMEOUT_MS, &u32), 0);
        assert_int_equal(agent_frame_get_u32(&f, AGENT_F_DURATION_US, &u32), -EPROTO);
        assert_int_equal(agent_frame_get_u8(&f, AGENT_F_EXIT_CODE, &u8), -EPROTO);

        agent_frame_writer_release(&w);
        assert_null(w.data);
        agent_frame_writer_release(NULL);
}

static void test_empty_frame(void **state)
{
        struct agent_frame_writer w;

        agent_frame_writer_begin(&w, AGENT_MSG_HELLO);
        assert_int_equal(agent_frame_writer_finish(&w), 0);
        assert_int_equal(w.len, AGENT_FRAME_HEADER_SIZE);

        struct agent_frame f = frame_of(&w);
        size_t cursor = 0;
        uint16_t tag;
        const uint8_t *data;
        uint32_t len;
        assert_int_equal(f.payload_len, 0);
        assert_int_equal(agent_frame_next_field(&f, &cursor, &tag, &data, &len), 0);
        agent_frame_writer_release(&w);
}

static void test_repeated_fields_in_order(void **state)
{
        static const char *args[] = { "sh", "-c", "echo hi", "" };
        struct agent_frame_writer w;

        agent_frame_writer_begin(&w, AGENT_MSG_EXEC);
        for (size_t i = 0; i < 4; i++) {
                agent_frame_writer_put_str(&w, AGENT_F_ARGV, args[i]);
                agent_frame_writer_put_str(&w, AGENT_F_ENV, "K=V");
        }
        assert_int_equal(agent_frame_writer_finish(&w), 0);

        struct agent_frame f = frame_of(&w);
        size_t cursor = 0, n_argv = 0, n_env = 0;
        uint16_t tag;
        const uint8_t *data;
        uint32_t len;
        int r;
        while ((r = agent_frame_next_field(&f, &cursor, &tag, &data, &len)) > 0) {
                if (tag == AGENT_F_ARGV) {
                        assert_int_equal(len, strlen(args[n_argv]));
                        assert_memory_equal(data, args[n_argv], len);
                        n_argv++;
                } else {
                        assert_int_equal(tag, AGENT_F_ENV);
                        n_env++;
                }
        }
        assert_int_equal(r, 0);
        assert_int_equal(n_argv, 4);
        assert_int_equal(n_env, 4);
        assert_int_equal(cursor, f.payload_len);
        /* find returns the first one. */
        assert_int_equal(agent_frame_find(&f, AGENT_F_ARGV, &data, &len), 1);
        assert_memory_equal(data, "sh", 2);
        agent_frame_writer_release(&w);
}

static void test_unknown_tags_skipped(void **state)
{
        struct agent_frame_writer w;

        agent_frame_writer_begin(&w, AGENT_MSG_EXEC);
        agent_frame_writer_put_str(&w, 999, "future field");
        agent_frame_writer_put_u32(&w, AGENT_F_TIMEOUT_MS, 200);
        agent_frame_writer_put(&w, 0xffff, "\x01\x02\x03", 3);
        agent_frame_writer_put_str(&w, AGENT_F_ARGV, "true");
        assert_int_equal(agent_frame_writer_finish(&w), 0);

        struct agent_frame f = frame_of(&w);
        uint32_t timeout;
        const uint8_t *data;
        uint32_t len;
        assert_int_equal(agent_frame_get_u32(&f, AGENT_F_TIMEOUT_MS, &timeout), 1);
        assert_int_equal(timeout, 200);
        assert_int_equal(agent_frame_find(&f, AGENT_F_ARGV, &data, &len), 1);
        assert_memory_equal(data, "true", 4);
        agent_frame_writer_release(&w);
}

static void test_truncated_field(void **state)
{
        /* tag 10, len 100, but only 3 bytes follow. */
        static const uint8_t long_field[] = { 10, 0, 100, 0, 0, 0, 'a', 'b', 'c' };
        /* A valid empty field followed by 3 stray bytes (shorter than a field header). */
        static const uint8_t stray[] = { 10, 0, 0, 0, 0, 0, 1, 2, 3 };
        struct agent_frame f = { .type = AGENT_MSG_EXEC, .payload = long_field, .payload_len = sizeof long_field };
        size_t cursor = 0;
        uint16_t tag;
        const uint8_t *data;
        uint32_t len;

        assert_int_equal(agent_frame_next_field(&f, &cursor, &tag, &data, &len), -EPROTO);
        assert_int_equal(cursor, 0);
        assert_int_equal(agent_frame_find(&f, AGENT_F_CWD, &data, &len), -EPROTO);

        f.payload = stray;
        f.payload_len = sizeof stray;
        assert_int_equal(agent_frame_next_field(&f, &cursor, &tag, &data, &len), 1);
        assert_int_equal(tag, 10);
        assert_int_equal(len, 0);
        assert_int_equal(agent_frame_next_field(&f, &cursor, &tag, &data, &len), -EPROTO);

        /* A field length that would overflow 32-bit arithmetic. */
        static const uint8_t huge[] = { 10, 0, 0xff, 0xff, 0xff, 0xff, 'x' };
        f.payload = huge;
        f.payload_len = sizeof huge;
        cursor = 0;
        assert_int_equal(agent_frame_next_field(&f, &cursor, &tag, &data, &len), -EPROTO);
}

static void test_header_errors(void **state)
{
        uint8_t h[AGENT_FRAME_HEADER_SIZE] = { 0, 0, 0, 0, AGENT_MSG_HELLO, AGENT_PROTOCOL_VERSION, 0, 0 };
        uint8_t type = 77;

        assert_int_equal(agent_frame_header_decode(h, &type), 0);
        assert_int_equal(type, AGENT_MSG_HELLO);

        /* Largest allowed payload, then one more. */
        uint32_t max = AGENT_FRAME_MAX - AGENT_FRAME_HEADER_SIZE;
        h[0] = (uint8_t)max, h[1] = (uint8_t)(max >> 8), h[2] = (uint8_t)(max >> 16), h[3] = (uint8_t)(max >> 24);
        assert_int_equal(agent_frame_header_decode(h, &type), max);
        max++;
        h[0] = (uint8_t)max, h[1] = (uint8_t)(max >> 8), h[2] = (uint8_t)(max >> 16), h[3] = (uint8_t)(max >> 24);
        type = 77;
        assert_int_equal(agent_frame_header_decode(h, &type), -E2BIG);
        assert_int_equal(type, 77);
        memset(h, 0xff, 4);
        assert_int_equal(agent_frame_header_decode(h, &type), -E2BIG);

        /* Wrong protocol version. */
        memset(h, 0, 4);
        h[5] = AGENT_PROTOCOL_VERSION + 1;
        assert_int_equal(agent_frame_header_decode(h, &type), -EPROTONOSUPPORT);
        assert_int_equal(type, 77);
        /* HELLO, the version probe, is accepted in version 1 (only HELLO). */
        h[4] = AGENT_MSG_HELLO;
        h[5] = AGENT_HELLO_VERSION;
        assert_int_equal(agent_frame_header_decode(h, &type), 0);
        assert_int_equal(type, AGENT_MSG_HELLO);
        h[4] = AGENT_MSG_HELLO_REPLY;
        assert_int_equal(agent_frame_header_decode(h, &type), -EPROTONOSUPPORT);
}

static void test_writer_too_big_is_sticky(void **state)
{
        struct agent_frame_writer w;

        agent_frame_writer_begin(&w, AGENT_MSG_EXEC_RESULT);
        agent_frame_writer_put(&w, AGENT_F_STDOUT, "", (size_t)AGENT_FRAME_MAX + 1);
        agent_frame_writer_put_str(&w, AGENT_F_MESSAGE, "ignored");
        assert_int_equal(agent_frame_writer_finish(&w), -E2BIG);
        agent_frame_writer_release(&w);
}

static void frame_hello_with_message(struct agent_frame_writer *w, const char *msg)
{
        agent_frame_writer_begin(w, AGENT_MSG_HELLO_REPLY);
        agent_frame_writer_put_str(w, AGENT_F_VERSION, "9.9.9");
        agent_frame_writer_put_str(w, AGENT_F_MESSAGE, msg);
        assert_int_equal(agent_frame_writer_finish(w), 0);
}

static void test_send_read_socketpair(void **state)
{
        struct agent_frame_writer w;
        int sv[2];
        struct agent_frame f;
        uint8_t *buf = NULL;

        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        frame_hello_with_message(&w, "round trip over a socket");
        assert_int_equal(agent_frame_send(sv[0], &w), 0);
        assert_int_equal(agent_frame_send(sv[0], &w), 0);
        for (int i = 0; i < 2; i++) {
                assert_int_equal(agent_frame_read(sv[1], &f, &buf), 0);
                assert_int_equal(f.type, AGENT_MSG_HELLO_REPLY);
                assert_int_equal(f.payload_len, w.len - AGENT_FRAME_HEADER_SIZE);
                assert_memory_equal(f.payload, w.data + AGENT_FRAME_HEADER_SIZE, f.payload_len);
                free(buf);
        }

        /* Clean EOF before a header. */
        close(sv[0]);
        assert_int_equal(agent_frame_read(sv[1], &f, &buf), -ECONNRESET);
        close(sv[1]);
        agent_frame_writer_release(&w);
}

/* A child dribbles the frame a few bytes at a time. */
static pid_t dribble(int fd, const uint8_t *data, size_t len, size_t chunk)
{
        pid_t pid = fork();

        assert_true(pid >= 0);
        if (pid == 0) {
                struct timespec ts = { 0, 200000 };
                for (size_t off = 0; off < len; off += chunk) {
                        size_t n = len - off < chunk ? len - off : chunk;
                        if (write(fd, data + off, n) != (ssize_t)n)
                                _exit(1);
                        nanosleep(&ts, NULL);
                }
                _exit(0);
        }
        return pid;
}

static void test_read_short_writes(void **state)
{
        struct agent_frame_writer w;
        struct agent_frame f;
        uint8_t *buf = NULL;
        int sv[2], status;

        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        frame_hello_with_message(&w, "dribbled one byte at a time, then three");
        pid_t pid = dribble(sv[0], w.data, w.len, 1);
        assert_int_equal(agent_frame_read(sv[1], &f, &buf), 0);
        assert_memory_equal(f.payload, w.data + AGENT_FRAME_HEADER_SIZE, f.payload_len);
        free(buf);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_int_equal(status, 0);

        /* Truncated: the writer stops half way through the payload. */
        pid = dribble(sv[0], w.data, w.len - 5, 3);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        shutdown(sv[0], SHUT_WR);
        assert_int_equal(agent_frame_read(sv[1], &f, &buf), -EPROTO);
        close(sv[0]);
        close(sv[1]);

        /* Truncated inside the header. */
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        assert_int_equal(write(sv[0], w.data, 5), 5);
        close(sv[0]);
        assert_int_equal(agent_frame_read(sv[1], &f, &buf), -EPROTO);
        close(sv[1]);
        agent_frame_writer_release(&w);
}

static void test_read_oversize_header(void **state)
{
        uint8_t h[AGENT_FRAME_HEADER_SIZE] = { 0xff, 0xff, 0xff, 0x7f, AGENT_MSG_EXEC, AGENT_PROTOCOL_VERSION, 0, 0 };
        struct agent_frame f;
        uint8_t *buf = NULL;
        int sv[2];

        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        assert_int_equal(write(sv[0], h, sizeof h), sizeof h);
        assert_int_equal(agent_frame_read(sv[1], &f, &buf), -E2BIG);
        assert_null(buf);
        close(sv[0]);
        close(sv[1]);
}

static void test_reader_incremental(void **state)
{
        struct agent_frame_writer w;
        struct agent_frame_reader r = {};
        struct agent_frame f;
        uint8_t *buf = NULL;
        int sv[2];

        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv), 0);
        frame_hello_with_message(&w, "incremental");

        /* Nothing yet. */
        assert_int_equal(agent_frame_reader_fill(&r, sv[1]), 0);
        /* Byte by byte: 0 until the last byte arrives. */
        for (size_t i = 0; i < w.len; i++) {
                assert_int_equal(write(sv[0], w.data + i, 1), 1);
                assert_int_equal(agent_frame_reader_fill(&r, sv[1]), i + 1 == w.len ? 1 : 0);
        }
        /* Two frames back to back: the reader stops at the frame boundary. */
        assert_int_equal(write(sv[0], w.data, w.len), (ssize_t)w.len);
        assert_int_equal(agent_frame_reader_fill(&r, sv[1]), 1); /* still the first one */
        agent_frame_reader_take(&r, &f, &buf);
        assert_int_equal(f.type, AGENT_MSG_HELLO_REPLY);
        assert_memory_equal(f.payload, w.data + AGENT_FRAME_HEADER_SIZE, f.payload_len);
        free(buf);
        assert_int_equal(agent_frame_reader_fill(&r, sv[1]), 1);
        agent_frame_reader_take(&r, &f, &buf);
        assert_int_equal(f.payload_len, w.len - AGENT_FRAME_HEADER_SIZE);
        free(buf);

        /* EOF between frames vs inside one. */
        assert_int_equal(write(sv[0], w.data, 3), 3);
        assert_int_equal(agent_frame_reader_fill(&r, sv[1]), 0);
        close(sv[0]);
        assert_int_equal(agent_frame_reader_fill(&r, sv[1]), -EPROTO);
        agent_frame_reader_release(&r);
        close(sv[1]);

        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv), 0);
        close(sv[0]);
        assert_int_equal(agent_frame_reader_fill(&r, sv[1]), -ECONNRESET);
        close(sv[1]);

        /* Garbage header. */
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv), 0);
        assert_int_equal(write(sv[0], "GET / HTTP/1.1\r\n", 16), 16);
        assert_true(agent_frame_reader_fill(&r, sv[1]) < 0);
        agent_frame_reader_release(&r);
        close(sv[0]);
        close(sv[1]);
        agent_frame_writer_release(&w);
}

static void test_send_to_closed_peer(void **state)
{
        struct agent_frame_writer w;
        int sv[2];

        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        close(sv[1]);
        /* An unfinished writer is refused rather than sent with a wrong length. */
        agent_frame_writer_begin(&w, AGENT_MSG_HELLO);
        agent_frame_writer_put_str(&w, AGENT_F_VERSION, "x");
        assert_int_equal(agent_frame_send(sv[0], &w), -EINVAL);
        agent_frame_writer_release(&w);

        frame_hello_with_message(&w, "nobody listens");
        /* MSG_NOSIGNAL: an error, not a SIGPIPE. */
        assert_int_equal(agent_frame_send(sv[0], &w), -EPIPE);
        close(sv[0]);
        agent_frame_writer_release(&w);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_round_trip),
                cmocka_unit_test(test_empty_frame),
                cmocka_unit_test(test_repeated_fields_in_order),
                cmocka_unit_test(test_unknown_tags_skipped),
                cmocka_unit_test(test_truncated_field),
                cmocka_unit_test(test_header_errors),
                cmocka_unit_test(test_writer_too_big_is_sticky),
                cmocka_unit_test(test_send_read_socketpair),
                cmocka_unit_test(test_read_short_writes),
                cmocka_unit_test(test_read_oversize_header),
                cmocka_unit_test(test_reader_incremental),
                cmocka_unit_test(test_send_to_closed_peer),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
