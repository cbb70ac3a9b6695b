/* Unit tests of agent_client's bounds on what an agent sends: frame sizes, deadlines and
 * the exec output cap, which spaced enforces itself whatever the agent claims. */
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
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent_protocol/agent_client.h"
#include "agent_protocol/agent_frame.h"
#include "runtime/runtime_driver.h"

static void put32(uint8_t *p, uint32_t v)
{
        for (int i = 0; i < 4; i++)
                p[i] = (uint8_t)(v >> (8 * i));
}

static void header(int fd, uint8_t type, uint32_t payload)
{
        uint8_t h[8] = { 0 };
        put32(h, payload);
        h[4] = type;
        h[5] = AGENT_PROTOCOL_VERSION;
        assert_int_equal(write(fd, h, sizeof h), (ssize_t)sizeof h);
}

static void write_all(int fd, const void *buf, size_t len)
{
        const uint8_t *p = buf;
        while (len > 0) {
                ssize_t n = write(fd, p, len);
                if (n <= 0)
                        _exit(1);
                p += n;
                len -= (size_t)n;
        }
}

static void field(int fd, uint16_t tag, const void *data, uint32_t len)
{
        uint8_t h[6] = { (uint8_t)tag, (uint8_t)(tag >> 8) };
        put32(h + 2, len);
        write_all(fd, h, sizeof h);
        write_all(fd, data, len);
}

static void test_frame_over_the_bound_is_refused(void **state)
{
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        header(sv[1], AGENT_MSG_OK, AGENT_CLIENT_REPLY_MAX + 1);
        struct agent_frame f;
        uint8_t *buf = NULL;
        assert_int_equal(agent_client_read(sv[0], AGENT_CLIENT_REPLY_MAX, 0, &f, &buf), -EMSGSIZE);
        assert_null(buf);
        /* At the bound it is read. */
        header(sv[1], AGENT_MSG_OK, 4);
        assert_int_equal(write(sv[1], "abcd", 4), 4);
        assert_int_equal(agent_client_read(sv[0], 4, 0, &f, &buf), 0);
        assert_int_equal(f.payload_len, 4);
        free(buf);
        close(sv[0]);
        close(sv[1]);
}

static void test_deadline_bounds_the_whole_reply(void **state)
{
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        header(sv[1], AGENT_MSG_OK, 100); /* and only 1 byte of the 100 */
        assert_int_equal(write(sv[1], "x", 1), 1);
        struct agent_frame f;
        uint8_t *buf = NULL;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        assert_int_equal(agent_client_read(sv[0], 1000, agent_client_deadline(200), &f, &buf), -ETIMEDOUT);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        assert_true(took >= 0.15 && took < 2.0);
        close(sv[0]);
        close(sv[1]);
}

/* A fake agent on a unix socket that answers one EXEC with the given behaviour. */
enum fake { FAKE_FLOOD, FAKE_BAD_LENGTH, FAKE_HONEST, FAKE_BIG_ERROR };

static pid_t fake_agent(const char *path, enum fake how)
{
        int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
        unlink(path);
        assert_int_equal(bind(l, (struct sockaddr *)&sa, sizeof sa), 0);
        assert_int_equal(listen(l, 1), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid > 0) {
                close(l);
                return pid;
        }
        int c = accept(l, NULL, NULL);
        uint8_t h[8];
        if (c < 0 || read(c, h, sizeof h) != sizeof h)
                _exit(1);
        uint32_t len = (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 24;
        uint8_t *req = malloc(len + 1);
        for (uint32_t got = 0; got < len;) {
                ssize_t n = read(c, req + got, len - got);
                if (n <= 0)
                        _exit(1);
                got += (uint32_t)n;
        }
        uint8_t zero[4] = { 0 };
        if (how == FAKE_FLOOD) {
                uint32_t big = 8u << 20;
                uint8_t *out = malloc(big);
                memset(out, 'A', big);
                header(c, AGENT_MSG_EXEC_RESULT, (6 + 4) + 2 * (6 + big));
                field(c, AGENT_F_EXIT_CODE, zero, 4);
                field(c, AGENT_F_STDOUT, out, big);
                field(c, AGENT_F_STDERR, out, big);
        } else if (how == FAKE_BAD_LENGTH) {
                header(c, AGENT_MSG_EXEC_RESULT, 6 + 4);
                uint8_t fh[6] = { AGENT_F_STDOUT, 0 };
                put32(fh + 2, 1000); /* a field longer than its frame */
                write_all(c, fh, sizeof fh);
                write_all(c, zero, 4);
        } else if (how == FAKE_BIG_ERROR) {
                header(c, AGENT_MSG_ERROR, 6 + AGENT_CLIENT_REPLY_MAX);
        } else {
                uint8_t code[4], sig[4];
                put32(code, 3);
                put32(sig, 0);
                header(c, AGENT_MSG_EXEC_RESULT, (6 + 4) + (6 + 4) + (6 + 2) + (6 + 3));
                field(c, AGENT_F_EXIT_CODE, code, 4);
                field(c, AGENT_F_TERM_SIGNAL, sig, 4);
                field(c, AGENT_F_STDOUT, "hi", 2);
                field(c, AGENT_F_STDERR, "err", 3);
        }
        _exit(0);
}

static int run_exec(enum fake how, uint32_t cap, struct exec_result *ret)
{
        char dir[] = "/tmp/agent-client-test-XXXXXX", path[128];
        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof path, "%s/sock", dir);
        pid_t pid = fake_agent(path, how);
        char *argv[] = { "x", NULL };
        struct exec_request req = { .argv = argv, .timeout_ms = 5000, .output_cap = cap };
        char msg[256] = "";
        int r = agent_client_exec(path, &req, ret, msg, sizeof msg);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        unlink(path);
        rmdir(dir);
        return r;
}

static void test_exec_keeps_at_most_the_cap(void **state)
{
        struct exec_result res = { 0 };
        assert_int_equal(run_exec(FAKE_FLOOD, 64 << 10, &res), 0);
        assert_int_equal(res.out_len, 64 << 10);
        assert_int_equal(res.err_len, 64 << 10);
        assert_true(res.truncated);
        assert_int_equal(res.out[0], 'A');
        exec_result_release(&res);
}

static void test_exec_field_past_its_frame_is_a_protocol_error(void **state)
{
        struct exec_result res = { 0 };
        assert_int_equal(run_exec(FAKE_BAD_LENGTH, 64 << 10, &res), -EPROTO);
        assert_null(res.out);
}

static void test_exec_error_over_the_bound_is_refused(void **state)
{
        struct exec_result res = { 0 };
        assert_int_equal(run_exec(FAKE_BIG_ERROR, 64 << 10, &res), -EMSGSIZE);
}

static void test_exec_honest_reply(void **state)
{
        struct exec_result res = { 0 };
        assert_int_equal(run_exec(FAKE_HONEST, 64 << 10, &res), 0);
        assert_int_equal(res.exit_code, 3);
        assert_int_equal(res.out_len, 2);
        assert_string_equal((char *)res.out, "hi");
        assert_string_equal((char *)res.err, "err");
        assert_false(res.truncated);
        exec_result_release(&res);
}

int main(void)
{
        signal(SIGPIPE, SIG_IGN);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_frame_over_the_bound_is_refused),
                cmocka_unit_test(test_deadline_bounds_the_whole_reply),
                cmocka_unit_test(test_exec_keeps_at_most_the_cap),
                cmocka_unit_test(test_exec_field_past_its_frame_is_a_protocol_error),
                cmocka_unit_test(test_exec_error_over_the_bound_is_refused),
                cmocka_unit_test(test_exec_honest_reply),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
