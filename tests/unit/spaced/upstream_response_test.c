/* Unit tests of upstream_response: the answer of a sandbox's server (hostile) read from a
 * socket, through a socketpair whose other end the test writes and closes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

#include "api/upstream_response.h"

/* A socket that reads text (its writer closed after it), with a short receive timeout. */
static int feed(const char *text, size_t len, bool close_writer)
{
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
        struct timeval tv = { .tv_sec = 0, .tv_usec = 200 * 1000 };
        setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        size_t off = 0;
        while (off < len) {
                ssize_t n = write(sv[1], text + off, len - off);
                assert_true(n > 0);
                off += (size_t)n;
        }
        if (close_writer)
                close(sv[1]);
        return sv[0];
}

static struct upstream_response *head_of(const char *text, int *ret_fd, int *ret_r, struct space_error *err)
{
        struct upstream_response *u = calloc(1, sizeof(*u));
        assert_non_null(u);
        *ret_fd = feed(text, strlen(text), true);
        *ret_r = upstream_response_read_head(u, *ret_fd, true, err);
        return u;
}

/* The whole body, or NULL when the reader reports it broken. */
static char *body_of(struct upstream_response *u)
{
        static char out[1 << 16];
        size_t len = 0;
        for (;;) {
                ssize_t n = upstream_response_read_body(u, out + len, sizeof(out) - 1 - len);
                if (n < 0)
                        return NULL;
                if (n == 0)
                        break;
                len += (size_t)n;
        }
        out[len] = '\0';
        return out;
}

static void test_length_body(void **state)
{
        (void)state;
        int fd, r;
        struct space_error err = { 0 };
        struct upstream_response *u =
                head_of("HTTP/1.1 201 Created\r\nContent-Length: 5\r\nX-A:  b \r\nx-a: c\r\n\r\nhelloTRAILING", &fd, &r, &err);
        assert_int_equal(r, 0);
        assert_int_equal(u->status, 201);
        assert_string_equal(upstream_response_header(u, "X-A"), "b");
        assert_int_equal(u->nheaders, 3);
        assert_true(u->has_length);
        assert_string_equal(body_of(u), "hello");
        close(fd);
        free(u);
}

static void test_chunked_body_and_interim_answers(void **state)
{
        (void)state;
        int fd, r;
        struct space_error err = { 0 };
        struct upstream_response *u =
                head_of("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                        "5;ext=1\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nTrailer: x\r\n\r\n",
                        &fd, &r, &err);
        assert_int_equal(r, 0);
        assert_int_equal(u->status, 200);
        assert_string_equal(body_of(u), "hello world");
        close(fd);
        free(u);
}

static void test_until_close_body(void **state)
{
        (void)state;
        int fd, r;
        struct space_error err = { 0 };
        struct upstream_response *u = head_of("HTTP/1.0 200 OK\n\nall of it", &fd, &r, &err);
        assert_int_equal(r, 0);
        assert_string_equal(body_of(u), "all of it");
        close(fd);
        free(u);
}

/* What a hostile server may send instead: each is refused (bad_gateway), never trusted. */
static void test_malformed_heads(void **state)
{
        (void)state;
        static const char *const heads[] = {
                "",
                "hello\r\n\r\n",
                "HTTP/2 200 OK\r\n\r\n",
                "HTTP/1.1 99 Low\r\n\r\n",
                "HTTP/1.1 600 High\r\n\r\n",
                "HTTP/1.1 200 OK\r\nNo colon here\r\n\r\n",
                "HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n",
                "HTTP/1.1 200 OK\r\n: empty name\r\n\r\n",
                "HTTP/1.1 200 OK\r\nX: a\001b\r\n\r\n",
                "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
                "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
                "HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n",
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
                "HTTP/1.1 200 OK\r\nX: never ends",
        };
        for (size_t i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
                int fd, r;
                struct space_error err = { 0 };
                struct upstream_response *u = head_of(heads[i], &fd, &r, &err);
                if (r != -1 || err.code != SPACE_E_BAD_GATEWAY)
                        fail_msg("head %zu (%s) gave %d %s", i, heads[i], r, err.message);
                close(fd);
                free(u);
        }
}

static void test_oversized_and_too_many_headers(void **state)
{
        (void)state;
        size_t size = 64 << 10;
        char *big = malloc(size + 1);
        strcpy(big, "HTTP/1.1 200 OK\r\n");
        while (strlen(big) + 16 < size)
                strcat(big, "X-Pad: aaaaaa\r\n");
        strcat(big, "\r\n");
        int fd, r;
        struct space_error err = { 0 };
        struct upstream_response *u = head_of(big, &fd, &r, &err);
        assert_int_equal(r, -1);
        assert_int_equal(err.code, SPACE_E_BAD_GATEWAY);
        close(fd);
        free(u);
        strcpy(big, "HTTP/1.1 200 OK\r\n");
        for (int i = 0; i <= UPSTREAM_HEADERS_MAX; i++)
                strcat(big, "X: y\r\n");
        strcat(big, "\r\n");
        u = head_of(big, &fd, &r, &err);
        assert_int_equal(r, -1);
        assert_int_equal(err.code, SPACE_E_BAD_GATEWAY);
        close(fd);
        free(u);
        free(big);
}

/* A server that says nothing: timeout, with the socket's receive timeout. */
static void test_silence_is_a_timeout(void **state)
{
        (void)state;
        struct upstream_response *u = calloc(1, sizeof(*u));
        int fd = feed("HTTP/1.1 200", 12, false);
        struct space_error err = { 0 };
        assert_int_equal(upstream_response_read_head(u, fd, true, &err), -1);
        assert_int_equal(err.code, SPACE_E_TIMEOUT);
        close(fd);
        free(u);
}

/* Bodies broken off: closed before the length, a malformed chunk, a chunk without its end. */
static void test_broken_bodies(void **state)
{
        (void)state;
        static const char *const answers[] = {
                "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloX\r\n0\r\n\r\n",
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
        };
        for (size_t i = 0; i < sizeof(answers) / sizeof(answers[0]); i++) {
                int fd, r;
                struct space_error err = { 0 };
                struct upstream_response *u = head_of(answers[i], &fd, &r, &err);
                assert_int_equal(r, 0);
                if (body_of(u))
                        fail_msg("answer %zu gave a whole body", i);
                close(fd);
                free(u);
        }
}

/* HEAD, 204 and 304 have no body whatever their headers say; a 101's next bytes are kept. */
static void test_bodiless_answers(void **state)
{
        (void)state;
        int fd, r;
        struct space_error err = { 0 };
        struct upstream_response *u = head_of("HTTP/1.1 304 Not Modified\r\nContent-Length: 50\r\n\r\n", &fd, &r, &err);
        assert_int_equal(r, 0);
        assert_string_equal(body_of(u), "");
        close(fd);
        free(u);
        u = head_of("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n\x81\x02hi", &fd, &r, &err);
        assert_int_equal(r, 0);
        size_t n;
        const char *pending = upstream_response_pending(u, &n);
        assert_int_equal(n, 4);
        assert_memory_equal(pending, "\x81\x02hi", 4);
        close(fd);
        free(u);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_length_body),
                cmocka_unit_test(test_chunked_body_and_interim_answers),
                cmocka_unit_test(test_until_close_body),
                cmocka_unit_test(test_malformed_heads),
                cmocka_unit_test(test_oversized_and_too_many_headers),
                cmocka_unit_test(test_silence_is_a_timeout),
                cmocka_unit_test(test_broken_bodies),
                cmocka_unit_test(test_bodiless_answers),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
