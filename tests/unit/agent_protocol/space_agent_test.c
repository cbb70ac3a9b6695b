/* Black-box tests of the real space-agent binary: started with --listen on a temporary
 * socket, driven over the agent protocol. Usage: space_agent_test PATH-TO-space-agent */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent_test_harness.h"

/* Builds an EXEC of argv (NULL-terminated); the caller may add fields before sending. */
static void exec_begin(struct agent_frame_writer *w, const char *const *argv)
{
        agent_frame_writer_begin(w, AGENT_MSG_EXEC);
        for (; *argv; argv++)
                agent_frame_writer_put_str(w, AGENT_F_ARGV, *argv);
}

static void exec_simple(const char *const *argv, struct agent_test_reply *r)
{
        struct agent_frame_writer w;
        int fd = agent_test_connect();

        exec_begin(&w, argv);
        agent_test_send(fd, &w);
        agent_test_read(fd, r);
        assert_int_equal(r->f.type, AGENT_MSG_EXEC_RESULT);
        close(fd);
}

static void assert_stdout(struct agent_test_reply *r, const char *expected)
{
        agent_test_assert_str(r, AGENT_F_STDOUT, expected);
}

/* ---- tests ---- */

static void test_hello(void **state)
{
        struct agent_frame_writer w;
        struct agent_test_reply r;
        const uint8_t *data;
        uint32_t pid;
        int fd = agent_test_connect();

        agent_frame_writer_begin(&w, AGENT_MSG_HELLO);
        agent_test_send(fd, &w);
        agent_test_read(fd, &r);
        assert_int_equal(r.f.type, AGENT_MSG_HELLO_REPLY);
        assert_true(agent_test_get_bytes(&r, AGENT_F_VERSION, &data) > 0);
        assert_int_equal(agent_frame_get_u32(&r.f, AGENT_F_AGENT_PID, &pid), 1);
        assert_int_equal(pid, agent_test.pid);
        assert_int_equal(agent_test_get_bytes(&r, AGENT_F_BOOT_ID, &data), 32);
        agent_test_reply_release(&r);
        close(fd);
}

static void test_echo(void **state)
{
        static const char *const argv[] = { "echo", "hi", NULL };
        struct agent_test_reply r;
        const uint8_t *data;
        uint64_t duration;

        exec_simple(argv, &r);
        assert_int_equal(agent_test_get_i32(&r, AGENT_F_EXIT_CODE), 0);
        assert_int_equal(agent_test_get_i32(&r, AGENT_F_TERM_SIGNAL), 0);
        assert_stdout(&r, "hi\n");
        assert_int_equal(agent_test_get_bytes(&r, AGENT_F_STDERR, &data), 0);
        assert_int_equal(agent_test_get_u8(&r, AGENT_F_TRUNCATED), 0);
        assert_int_equal(agent_test_get_u8(&r, AGENT_F_TIMED_OUT), 0);
        assert_int_equal(agent_frame_get_u64(&r.f, AGENT_F_DURATION_US, &duration), 1);
        assert_true(duration > 0);
        assert_int_equal(agent_frame_find(&r.f, AGENT_F_ERRNO, &data, &(uint32_t){ 0 }), 0);
        agent_test_reply_release(&r);
}

static void test_nonzero_exit_and_stderr(void **state)
{
        static const char *const argv[] = { "sh", "-c", "echo out; echo err >&2; exit 3", NULL };
        struct agent_test_reply r;
        const uint8_t *data;

        exec_simple(argv, &r);
        assert_int_equal(agent_test_get_i32(&r, AGENT_F_EXIT_CODE), 3);
        assert_int_equal(agent_test_get_i32(&r, AGENT_F_TERM_SIGNAL), 0);
        assert_stdout(&r, "out\n");
        assert_int_equal(agent_test_get_bytes(&r, AGENT_F_STDERR, &data), 4);
        assert_memory_equal(data, "err\n", 4);
        agent_test_reply_release(&r);
}

static void test_killed_by_signal(void **state)
{
        static const char *const argv[] = { "sh", "-c", "kill -TERM $$", NULL };
        struct agent_test_reply r;

        exec_simple(argv, &r);
        assert_int_equal(agent_test_get_i32(&r, AGENT_F_TERM_SIGNAL), SIGTERM);
        assert_int_equal(agent_test_get_i32(&r, AGENT_F_EXIT_CODE), 128 + SIGTERM);
        agent_test_reply_release(&r);
}

static void check_missing(const char *name)
{
        const char *const argv[] = { name, NULL };
        struct agent_test_reply r;
        const uint8_t *data;
        uint32_t len;
        char expected[256];

        exec_simple(argv, &r);
        assert_int_equal(agent_test_get_i32(&r, AGENT_F_EXIT_CODE), 127);
        assert_int_equal(agent_test_get_i32(&r, AGENT_F_ERRNO), ENOENT);
        snprintf(expected, sizeof expected, "exec \"%s\": %s", name, strerror(ENOENT));
        len = agent_test_get_bytes(&r, AGENT_F_MESSAGE, &data);
        assert_int_equal(len, strlen(expected));
        assert_memory_equal(data, expected, len);
        len = agent_test_get_bytes(&r, AGENT_F_STDERR, &data);
        assert_true(len >= strlen(expected));
        assert_memory_equal(data, expected, strlen(expected));
        agent_test_reply_release(&r);
}

static void test_missing_binary(void **state)
{
        check_missing("/nonexistent/space-agent-test-binary");
        check_missing("space-agent-test-no-such-command");
}

static void test_bad_cwd(void **state)
{
        static const char *const argv[] = { "true", NULL };
        struct agent_frame_writer w;
        struct agent_test_reply r;
        const uint8_t *data;
        uint32_t len;
        int fd = agent_test_connect();

        exec_begin(&w, argv);
        agent_frame_writer_put_str(&w, AGENT_F_CWD, "/nonexistent-dir");
        agent_test_send(fd, &w);
        agent_test_read(fd, &r);
        assert_int_equal(agent_test_get_i32(&r, AGENT_F_EXIT_CODE), 127);
        assert_int_equal(agent_test_get_i32(&r, AGENT_F_ERRNO), ENOENT);
        len = agent_test_get_bytes(&r, AGENT_F_MESSAGE, &data);
        assert_true(len > 6 && memcmp(data, "chdir ", 6) == 0);
        agent_test_reply_release(&r);
        close(fd);
}

static void test_env_cwd(void **state)
{
        static const char *const argv[] = { "/bin/sh", "-c", "echo $FOO:$HOME:$(pwd)", NULL };
        static const char *const argv_default[] = { "sh", "-c", "echo $PATH:$HOME:$(pwd)", NULL };
        struct agent_frame_writer w;
        struct agent_test_reply r;
        int fd = agent_test_connect();

        exec_begin(&w, argv);
        agent_frame_writer_put_str(&w, AGENT_F_ENV, "FOO=bar");
        agent_frame_writer_put_str(&w, AGENT_F_CWD, "/tmp");
        agent_test_send(fd, &w);
        agent_test_read(fd, &r);
        assert_stdout(&r, "bar::/tmp\n");
        agent_test_reply_release(&r);

        /* Same connection, next request: the defaults. */
        exec_begin(&w, argv_default);
        agent_test_send(fd, &w);
        agent_test_read(fd, &r);
        assert_stdout(&r, "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/root:/\n");
        agent_test_reply_release(&r);
        close(fd);
}

static void test_stdin_large_truncated(void **state)
{
        static const char *const argv[] = { "cat", NULL };
        size_t in_len = 3u << 20, cap = 1u << 20;
        struct agent_frame_writer w;
        struct agent_test_reply r;
        const uint8_t *data;
        int fd = agent_test_connect();

        uint8_t *in = malloc(in_len);
        assert_non_null(in);
        for (size_t i = 0; i < in_len; i++)
                in[i] = (uint8_t)(i * 7 + (i >> 13));

        exec_begin(&w, argv);
        agent_frame_writer_put(&w, AGENT_F_STDIN, in, in_len);
        agent_test_send(fd, &w);
        agent_test_read(fd, &r);
        assert_int_equal(agent_test_get_i32(&r, AGENT_F_EXIT_CODE), 0);
        assert_int_equal(agent_test_get_bytes(&r, AGENT_F_STDOUT, &data), cap);
        assert_memory_equal(data, in, cap);
        assert_int_equal(agent_test_get_u8(&r, AGENT_F_TRUNCATED), 1);
        agent_test_reply_release(&r);

        /* Under the cap: everything comes back. */
        exec_begin(&w, argv);
        agent_frame_writer_put(&w, AGENT_F_STDIN, in, 100000);
        agent_test_send(fd, &w);
        agent_test_read(fd, &r);
        assert_int_equal(agent_test_get_bytes(&r, AGENT_F_STDOUT, &data), 100000);
        assert_memory_equal(data, in, 100000);
        assert_int_equal(agent_test_get_u8(&r, AGENT_F_TRUNCATED), 0);
        agent_test_reply_release(&r);

        /* A small explicit cap on stderr. */
        static const char *const argv_err[] = { "sh", "-c", "cat >&2", NULL };
        exec_begin(&w, argv_err);
        agent_frame_writer_put(&w, AGENT_F_STDIN, in, 5000);
        agent_frame_writer_put_u32(&w, AGENT_F_OUTPUT_CAP, 10);
        agent_test_send(fd, &w);
        agent_test_read(fd, &r);
        assert_int_equal(agent_test_get_bytes(&r, AGENT_F_STDERR, &data), 10);
        assert_memory_equal(data, in, 10);
        assert_int_equal(agent_test_get_u8(&r, AGENT_F_TRUNCATED), 2);
        agent_test_reply_release(&r);

        free(in);
        close(fd);
}

static void test_timeout(void **state)
{
        static const char *const argv[] = { "sleep", "10", NULL };
        struct agent_frame_writer w;
        struct agent_test_reply r;
        int fd = agent_test_connect();
        uint64_t t0 = agent_test_now_ms();

        exec_begin(&w, argv);
        agent_frame_writer_put_u32(&w, AGENT_F_TIMEOUT_MS, 200);
        agent_test_send(fd, &w);
        agent_test_read(fd, &r);
        assert_true(agent_test_now_ms() - t0 < 5000);
        assert_int_equal(agent_test_get_u8(&r, AGENT_F_TIMED_OUT), 1);
        assert_int_equal(agent_test_get_i32(&r, AGENT_F_TERM_SIGNAL), SIGKILL);
        assert_int_equal(agent_test_get_i32(&r, AGENT_F_EXIT_CODE), 128 + SIGKILL);
        agent_test_reply_release(&r);
        close(fd);
}

static void test_nul_bytes(void **state)
{
        static const char *const argv[] = { "printf", "a\\000b\\000", NULL };
        struct agent_test_reply r;
        const uint8_t *data;

        exec_simple(argv, &r);
        assert_int_equal(agent_test_get_bytes(&r, AGENT_F_STDOUT, &data), 4);
        assert_memory_equal(data, "a\0b\0", 4);
        agent_test_reply_release(&r);
}

static void test_concurrent_connections(void **state)
{
        static const char *const slow[] = { "sh", "-c", "sleep 2; echo one", NULL };
        static const char *const fast[] = { "echo", "two", NULL };
        struct agent_frame_writer w;
        struct agent_test_reply r;
        int a = agent_test_connect(), b = agent_test_connect();

        exec_begin(&w, slow);
        agent_test_send(a, &w);
        exec_begin(&w, fast);
        agent_test_send(b, &w);

        /* The fast one answers while the slow one is still running. */
        agent_test_read(b, &r);
        assert_stdout(&r, "two\n");
        agent_test_reply_release(&r);
        struct pollfd p = { .fd = a, .events = POLLIN };
        assert_int_equal(poll(&p, 1, 0), 0);

        agent_test_read(a, &r);
        assert_stdout(&r, "one\n");
        agent_test_reply_release(&r);
        close(a);
        close(b);
}

static void test_background_grandchild(void **state)
{
        static const char *const argv[] = { "sh", "-c", "sleep 5 & echo done", NULL };
        struct agent_test_reply r;
        uint64_t t0 = agent_test_now_ms();

        exec_simple(argv, &r);
        /* Generous: the agent waits ~100 ms after the exit, not for the sleep. */
        assert_true(agent_test_now_ms() - t0 < 3000);
        assert_int_equal(agent_test_get_i32(&r, AGENT_F_EXIT_CODE), 0);
        assert_stdout(&r, "done\n");
        agent_test_reply_release(&r);
}

static void test_disconnect_kills(void **state)
{
        char script[1024], pid_path[192], buf[32] = "";
        struct agent_frame_writer w;
        int fd = agent_test_connect();

        agent_test_path_in_dir("pid", pid_path, sizeof pid_path);
        snprintf(script, sizeof script, "echo $$ > %s.tmp && mv %s.tmp %s && exec sleep 30", pid_path, pid_path, pid_path);
        const char *const argv[] = { "sh", "-c", script, NULL };
        exec_begin(&w, argv);
        agent_test_send(fd, &w);

        int pfd = -1;
        for (int i = 0; i < 500 && pfd < 0; i++) {
                pfd = open(pid_path, O_RDONLY | O_CLOEXEC);
                if (pfd < 0)
                        agent_test_sleep_ms(10);
        }
        assert_true(pfd >= 0);
        assert_true(read(pfd, buf, sizeof buf - 1) > 0);
        close(pfd);
        pid_t pid = atoi(buf);
        assert_true(pid > 1);
        assert_int_equal(kill(pid, 0), 0);

        close(fd);
        bool gone = false;
        for (int i = 0; i < 300 && !gone; i++) {
                gone = kill(pid, 0) < 0 && errno == ESRCH;
                if (!gone)
                        agent_test_sleep_ms(10);
        }
        assert_true(gone);
}

static void test_half_close_still_replies(void **state)
{
        static const char *const argv[] = { "sh", "-c", "sleep 0.2; echo late", NULL };
        struct agent_frame_writer w;
        struct agent_test_reply r;
        int fd = agent_test_connect();

        exec_begin(&w, argv);
        agent_test_send(fd, &w);
        assert_int_equal(shutdown(fd, SHUT_WR), 0);
        agent_test_read(fd, &r);
        assert_stdout(&r, "late\n");
        agent_test_reply_release(&r);
        close(fd);
}

static void test_pipelined_requests(void **state)
{
        static const char *const argv[] = { "echo", "x", NULL };
        struct agent_frame_writer w;
        struct agent_test_reply r;
        int fd = agent_test_connect();

        agent_frame_writer_begin(&w, AGENT_MSG_HELLO);
        agent_test_send(fd, &w);
        exec_begin(&w, argv);
        agent_test_send(fd, &w);
        agent_frame_writer_begin(&w, AGENT_MSG_HELLO);
        agent_test_send(fd, &w);

        agent_test_read(fd, &r);
        assert_int_equal(r.f.type, AGENT_MSG_HELLO_REPLY);
        agent_test_reply_release(&r);
        agent_test_read(fd, &r);
        assert_int_equal(r.f.type, AGENT_MSG_EXEC_RESULT);
        assert_stdout(&r, "x\n");
        agent_test_reply_release(&r);
        agent_test_read(fd, &r);
        assert_int_equal(r.f.type, AGENT_MSG_HELLO_REPLY);
        agent_test_reply_release(&r);
        close(fd);
}

static void test_bad_requests_get_errors(void **state)
{
        struct agent_frame_writer w;
        struct agent_test_reply r;
        int fd = agent_test_connect();

        /* EXEC without ARGV. */
        agent_frame_writer_begin(&w, AGENT_MSG_EXEC);
        agent_frame_writer_put_str(&w, AGENT_F_CWD, "/");
        agent_test_send(fd, &w);
        agent_test_read(fd, &r);
        assert_int_equal(r.f.type, AGENT_MSG_ERROR);
        assert_int_equal(agent_test_get_i32(&r, AGENT_F_ERRNO), EINVAL);
        agent_test_reply_release(&r);

        /* A message type the agent does not serve. */
        agent_frame_writer_begin(&w, 200);
        agent_test_send(fd, &w);
        agent_test_read(fd, &r);
        assert_int_equal(r.f.type, AGENT_MSG_ERROR);
        assert_int_equal(agent_test_get_i32(&r, AGENT_F_ERRNO), EOPNOTSUPP);
        agent_test_reply_release(&r);

        /* The connection is still usable. */
        agent_frame_writer_begin(&w, AGENT_MSG_HELLO);
        agent_test_send(fd, &w);
        agent_test_read(fd, &r);
        assert_int_equal(r.f.type, AGENT_MSG_HELLO_REPLY);
        agent_test_reply_release(&r);
        close(fd);
}

static void expect_closed(int fd)
{
        struct agent_frame f;
        uint8_t *buf = NULL;
        int r = agent_frame_read(fd, &f, &buf);
        assert_true(r == -ECONNRESET || r == -EPIPE);
        assert_null(buf);
}

static void test_garbage_frames(void **state)
{
        static const uint8_t bad_field[] = { 7, 0, 0, 0,  AGENT_MSG_EXEC, AGENT_PROTOCOL_VERSION, 0, 0, AGENT_F_ARGV, 0, 50,
                                             0, 0, 0, 'x' };
        static const uint8_t huge[] = { 0xff, 0xff, 0xff, 0xff, AGENT_MSG_EXEC, AGENT_PROTOCOL_VERSION, 0, 0 };
        int fd;

        /* Bytes whose version byte is not the agent's: one ERROR saying so, then closed. */
        fd = agent_test_connect();
        assert_int_equal(write(fd, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27), 27);
        struct agent_test_reply r;
        agent_test_read(fd, &r);
        agent_test_assert_error(&r, EPROTONOSUPPORT);
        agent_test_reply_release(&r);
        expect_closed(fd);
        close(fd);

        fd = agent_test_connect();
        assert_int_equal(write(fd, bad_field, sizeof bad_field), sizeof bad_field);
        expect_closed(fd);
        close(fd);

        fd = agent_test_connect();
        assert_int_equal(write(fd, huge, sizeof huge), sizeof huge);
        expect_closed(fd);
        close(fd);

        /* Half a frame, then hang up. */
        fd = agent_test_connect();
        assert_int_equal(write(fd, huge, 3), 3);
        close(fd);

        /* The agent is still alive and serving. */
        assert_int_equal(waitpid(agent_test.pid, NULL, WNOHANG), 0);
        test_hello(state);
}

static void test_orphans_reaped(void **state)
{
        static const char *const argv[] = { "sh", "-c", "(sleep 0.2 &) ; true", NULL };
        struct agent_test_reply r;
        char path[64], buf[256];

        exec_simple(argv, &r);
        agent_test_reply_release(&r);
        agent_test_sleep_ms(800);

        /* No zombies left under the agent (it is a subreaper outside a pid namespace). */
        snprintf(path, sizeof path, "/proc/%d/task/%d/children", agent_test.pid, agent_test.pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                agent_test_skip("this kernel has no /proc/PID/task/TID/children");
        ssize_t n = read(fd, buf, sizeof buf - 1);
        close(fd);
        buf[n > 0 ? n : 0] = '\0';
        for (char *p = buf; *p;) {
                long child = strtol(p, &p, 10);
                if (child <= 0)
                        break;
                char stat_path[64], stat[256] = "";
                snprintf(stat_path, sizeof stat_path, "/proc/%ld/stat", child);
                int sfd = open(stat_path, O_RDONLY | O_CLOEXEC);
                if (sfd < 0)
                        continue;
                ssize_t k = read(sfd, stat, sizeof stat - 1);
                close(sfd);
                stat[k > 0 ? k : 0] = '\0';
                char *rp = strrchr(stat, ')');
                assert_false(rp && rp[1] == ' ' && rp[2] == 'Z');
        }
}

static void test_report_rss(void **state)
{
        long kib = agent_test_rss_kib(agent_test.pid);
        if (kib < 0)
                agent_test_skip("the agent's VmRSS is unreadable");
        print_message("space-agent VmRSS: %ld kB\n", kib);
}

int main(int argc, char **argv)
{
        if (agent_test_init(argc, argv) != 0)
                return 2;

        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_hello),
                cmocka_unit_test(test_echo),
                cmocka_unit_test(test_nonzero_exit_and_stderr),
                cmocka_unit_test(test_killed_by_signal),
                cmocka_unit_test(test_missing_binary),
                cmocka_unit_test(test_bad_cwd),
                cmocka_unit_test(test_env_cwd),
                cmocka_unit_test(test_stdin_large_truncated),
                cmocka_unit_test(test_timeout),
                cmocka_unit_test(test_nul_bytes),
                cmocka_unit_test(test_concurrent_connections),
                cmocka_unit_test(test_background_grandchild),
                cmocka_unit_test(test_disconnect_kills),
                cmocka_unit_test(test_half_close_still_replies),
                cmocka_unit_test(test_pipelined_requests),
                cmocka_unit_test(test_bad_requests_get_errors),
                cmocka_unit_test(test_garbage_frames),
                cmocka_unit_test(test_orphans_reaped),
                cmocka_unit_test(test_report_rss),
        };
        return agent_test_exit(cmocka_run_group_tests(tests, agent_test_setup, agent_test_teardown));
}
