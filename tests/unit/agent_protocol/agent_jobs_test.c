/* Black-box tests of space-agent's jobs (JOB_* messages, docs/agent-protocol.md "Jobs"):
 * the real binary, started with --listen, driven over the agent protocol.
 * Usage: agent_jobs_test PATH-TO-space-agent
 *
 * Every test leaves no job behind: it acknowledges the exit of each job it started and
 * waits until the agent has forgotten it, so the next test's JOB_SUBSCRIBED is empty. */
#include <errno.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent_test_harness.h"
#include "agent_test_jobs.h"

#define MIB (1024u * 1024u)

/* ---- tests ---- */

static void test_output_then_exit(void **state)
{
        static const char *const argv[] = { "sh", "-c", "echo one; echo two >&2; echo three; exit 7", NULL };
        struct agent_test_job_watch jw;

        agent_test_job_run(&(struct agent_test_job_spec){ .id = "basic", .argv = argv }, &jw);
        agent_test_job_assert_output(&jw, AGENT_STREAM_STDOUT, "one\nthree\n");
        agent_test_job_assert_output(&jw, AGENT_STREAM_STDERR, "two\n");
        agent_test_job_assert_exit(&jw, 7, 0, 0);
        assert_int_equal(agent_frame_find(&jw.exit.f, AGENT_F_ERRNO, &(const uint8_t *){ NULL }, &(uint32_t){ 0 }), 0);
        agent_test_job_run_close(&jw);
}

static void test_output_before_subscribe(void **state)
{
        static const char *const argv[] = { "sh", "-c", "echo early; echo late >&2", NULL };
        static const char *const listed[] = { "early", NULL };
        struct agent_test_job_watch jw;

        pid_t pid = agent_test_job_start(&(struct agent_test_job_spec){ .id = "early", .argv = argv });
        agent_test_wait_pid_gone(pid);
        agent_test_sleep_ms(200);

        agent_test_job_watch_init(&jw, agent_test_job_subscribe(listed), "early");
        agent_test_job_watch_until_exit(&jw);
        agent_test_job_assert_output(&jw, AGENT_STREAM_STDOUT, "early\n");
        agent_test_job_assert_output(&jw, AGENT_STREAM_STDERR, "late\n");
        agent_test_job_assert_exit(&jw, 0, 0, 0);
        agent_test_job_run_close(&jw);
}

/* Copies of the frames a subscriber received, to compare with a replay. */
struct frame_copy {
        uint8_t type;
        uint8_t *payload;
        uint32_t len;
};

static void test_replay_unacked(void **state)
{
        static const char *const argv[] = { "sh", "-c", "echo a; sleep 0.2; echo b; sleep 0.2; echo c; sleep 0.2; echo d", NULL };
        static const char *const listed[] = { "replay", NULL };
        struct frame_copy got[5];
        struct agent_test_job_watch jw;

        /* The first subscriber receives everything but acknowledges only up to SEQ 2. */
        int fd = agent_test_job_subscribe(agent_test_no_jobs);
        agent_test_job_start(&(struct agent_test_job_spec){ .id = "replay", .argv = argv });
        agent_test_job_watch_init(&jw, fd, "replay");
        jw.ack = false;
        for (int i = 0; i < 5; i++) {
                agent_test_job_watch_step(&jw);
                struct agent_test_reply *r = jw.exited ? &jw.exit : &jw.last;
                got[i] = (struct frame_copy){ r->f.type, malloc(r->f.payload_len + 1), r->f.payload_len };
                memcpy(got[i].payload, r->f.payload, r->f.payload_len);
        }
        assert_true(jw.exited);
        agent_test_job_assert_output(&jw, AGENT_STREAM_STDOUT, "a\nb\nc\nd\n");
        agent_test_job_watch_release(&jw);
        agent_test_job_ack(fd, "replay", 2);
        agent_test_job_channel_sync(fd);
        close(fd);

        /* The second one is sent SEQ 3, 4, 5 again, byte for byte, and nothing before. */
        fd = agent_test_job_subscribe(listed);
        for (int i = 2; i < 5; i++) {
                struct agent_test_reply r;
                agent_test_read(fd, &r);
                assert_int_equal(r.f.type, got[i].type);
                assert_int_equal(r.f.payload_len, got[i].len);
                assert_memory_equal(r.f.payload, got[i].payload, got[i].len);
                agent_test_reply_release(&r);
        }
        struct pollfd p = { .fd = fd, .events = POLLIN };
        assert_int_equal(poll(&p, 1, 200), 0);

        /* Acknowledging the exit ends it; a third subscriber is told of no job. */
        agent_test_job_ack(fd, "replay", 5);
        agent_test_job_wait_forgotten("replay");
        close(fd);
        close(agent_test_job_subscribe(agent_test_no_jobs));
        for (int i = 0; i < 5; i++)
                free(got[i].payload);
}

static void test_new_subscriber_closes_old(void **state)
{
        struct agent_test_reply r;
        int old = agent_test_job_subscribe(agent_test_no_jobs);
        int fd = agent_test_job_subscribe(agent_test_no_jobs);

        assert_int_equal(agent_frame_read(old, &r.f, &r.buf), -ECONNRESET);
        close(old);
        agent_test_job_channel_sync(fd);
        close(fd);
}

static void test_runs_without_connection(void **state)
{
        char marker[192], script[512];
        static const char *const listed[] = { "alone", NULL };
        struct agent_test_job_watch jw;
        struct stat st;

        agent_test_path_in_dir("alone", marker, sizeof marker);
        snprintf(script, sizeof script, "sleep 0.3; echo ran > %s; echo late", marker);
        const char *const argv[] = { "sh", "-c", script, NULL };
        pid_t pid = agent_test_job_start(&(struct agent_test_job_spec){ .id = "alone", .argv = argv });

        /* No connection at all now (agent_test_job_start closed its own). */
        agent_test_wait_pid_gone(pid);
        assert_int_equal(stat(marker, &st), 0);
        assert_int_equal(st.st_size, 4);

        agent_test_job_watch_init(&jw, agent_test_job_subscribe(listed), "alone");
        agent_test_job_watch_until_exit(&jw);
        agent_test_job_assert_output(&jw, AGENT_STREAM_STDOUT, "late\n");
        agent_test_job_assert_exit(&jw, 0, 0, 0);
        agent_test_job_run_close(&jw);
}

static void test_binary_output(void **state)
{
        char path[192];
        uint8_t all[256 * 4];
        struct agent_test_job_watch jw;

        for (size_t i = 0; i < sizeof all; i++)
                all[i] = (uint8_t)(i * 131);
        agent_test_path_in_dir("bytes", path, sizeof path);
        FILE *f = fopen(path, "we");
        assert_non_null(f);
        assert_int_equal(fwrite(all, 1, sizeof all, f), sizeof all);
        fclose(f);

        const char *const argv[] = { "cat", path, NULL };
        agent_test_job_run(&(struct agent_test_job_spec){ .id = "binary", .argv = argv }, &jw);
        assert_int_equal(jw.out_len[AGENT_STREAM_STDOUT], sizeof all);
        assert_memory_equal(jw.out[AGENT_STREAM_STDOUT], all, sizeof all);
        agent_test_job_run_close(&jw);

        static const char *const nul[] = { "printf", "a\\000b\\377\\300\\000", NULL };
        agent_test_job_run(&(struct agent_test_job_spec){ .id = "nul", .argv = nul }, &jw);
        assert_int_equal(jw.out_len[AGENT_STREAM_STDOUT], 6);
        assert_memory_equal(jw.out[AGENT_STREAM_STDOUT], "a\0b\377\300\0", 6);
        agent_test_job_run_close(&jw);
}

/* Checks a stream against the output of `seq 1 N`, as it arrives. */
struct seq_check {
        uint64_t n;
        char line[24];
        size_t line_len, line_off;
        uint64_t bytes;
};

static void seq_check_feed(void *ctx, const uint8_t *data, size_t len)
{
        struct seq_check *c = ctx;

        for (size_t i = 0; i < len; i++) {
                if (c->line_off == c->line_len) {
                        c->line_len = (size_t)snprintf(c->line, sizeof c->line, "%llu\n", (unsigned long long)++c->n);
                        c->line_off = 0;
                }
                if (data[i] != (uint8_t)c->line[c->line_off++])
                        fail_msg("large output differs at byte %llu", (unsigned long long)(c->bytes + i));
        }
        c->bytes += len;
}

static const char *const seq_64m[] = { "sh", "-c", "seq 1 100000000 | head -c 67108864", NULL };

static void test_large_output_acked(void **state)
{
        struct seq_check check = {};
        struct agent_test_job_watch jw;

        int fd = agent_test_job_subscribe(agent_test_no_jobs);
        agent_test_job_start(&(struct agent_test_job_spec){ .id = "large", .argv = seq_64m });
        agent_test_job_watch_init(&jw, fd, "large");
        jw.sink = seq_check_feed;
        jw.sink_ctx = &check;
        agent_test_job_watch_until_exit(&jw);
        assert_int_equal(check.bytes, 64 * MIB);
        assert_int_equal(jw.out_total, 64 * MIB);
        agent_test_job_assert_exit(&jw, 0, 0, 0);
        agent_test_job_run_close(&jw);
}

/* Without acknowledgements the agent stops at its 4 MiB backlog: the command blocks and the
 * agent does not grow. Acknowledgements let it finish, nothing lost. */
static void test_large_output_backpressure(void **state)
{
        struct seq_check check = {};
        struct agent_test_job_watch jw;
        long rss_before = agent_test_rss_kib(agent_test.pid);

        int fd = agent_test_job_subscribe(agent_test_no_jobs);
        pid_t pid = agent_test_job_start(&(struct agent_test_job_spec){ .id = "blocked", .argv = seq_64m });
        agent_test_job_watch_init(&jw, fd, "blocked");
        jw.ack = false;
        jw.sink = seq_check_feed;
        jw.sink_ctx = &check;
        for (;;) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                if (poll(&p, 1, 1000) == 0)
                        break;
                agent_test_job_watch_step(&jw);
        }
        assert_false(jw.exited);
        print_message("unacknowledged: %zu bytes of output\n", jw.out_total);
        assert_true(jw.out_total >= 4 * MIB - 64 * 1024);
        assert_true(jw.out_total <= 4 * MIB + 512 * 1024);
        assert_int_equal(kill(pid, 0), 0);

        long rss = agent_test_rss_kib(agent_test.pid);
        if (rss_before > 0 && rss > 0) {
                print_message("agent VmRSS %ld kB before, %ld kB with the backlog\n", rss_before, rss);
                assert_true(rss - rss_before < 24 * 1024);
        }

        /* Acknowledging what arrived lets the rest flow. */
        agent_test_job_ack(fd, "blocked", jw.next_seq - 1);
        jw.ack = true;
        agent_test_job_watch_until_exit(&jw);
        assert_int_equal(check.bytes, 64 * MIB);
        agent_test_job_assert_exit(&jw, 0, 0, 0);
        agent_test_job_run_close(&jw);
}

/* A job killed while held back: the rest of its output still comes before its exit, once
 * acknowledgements let it. */
static void test_exit_while_held_back(void **state)
{
        struct seq_check check = {};
        struct agent_test_job_watch jw;

        int fd = agent_test_job_subscribe(agent_test_no_jobs);
        pid_t pid = agent_test_job_start(&(struct agent_test_job_spec){ .id = "held", .argv = seq_64m });
        agent_test_job_watch_init(&jw, fd, "held");
        jw.ack = false;
        jw.sink = seq_check_feed;
        jw.sink_ctx = &check;
        for (;;) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                if (poll(&p, 1, 500) == 0)
                        break;
                agent_test_job_watch_step(&jw);
        }
        uint64_t before = check.bytes;
        agent_test_job_signal("held", SIGKILL, 0);
        agent_test_wait_pid_gone(pid);
        struct pollfd p = { .fd = fd, .events = POLLIN };
        assert_int_equal(poll(&p, 1, 300), 0); /* nothing while the backlog is full */

        agent_test_job_ack(fd, "held", jw.next_seq - 1);
        jw.ack = true;
        agent_test_job_watch_until_exit(&jw);
        agent_test_job_assert_exit(&jw, 128 + SIGKILL, SIGKILL, 0);
        /* What the pipe held when the command died (its 1 MiB buffer, full) was not dropped. */
        print_message("held back: %llu bytes, then %llu more after the kill\n", (unsigned long long)before,
                      (unsigned long long)(check.bytes - before));
        assert_true(check.bytes - before >= 64 * 1024);
        assert_true(check.bytes < 64 * MIB);
        agent_test_job_run_close(&jw);
}

/* With no subscriber at all the backlog fills and the command waits; a subscriber that
 * comes later gets all of it. */
static void test_backlog_without_subscriber(void **state)
{
        static const char *const argv[] = { "sh", "-c", "seq 1 100000000 | head -c 16777216", NULL };
        static const char *const listed[] = { "nobody-listens", NULL };
        struct seq_check check = {};
        struct agent_test_job_watch jw;

        pid_t pid = agent_test_job_start(&(struct agent_test_job_spec){ .id = "nobody-listens", .argv = argv });
        agent_test_sleep_ms(1000);
        assert_int_equal(kill(pid, 0), 0); /* blocked on its full pipe */

        agent_test_job_watch_init(&jw, agent_test_job_subscribe(listed), "nobody-listens");
        jw.sink = seq_check_feed;
        jw.sink_ctx = &check;
        agent_test_job_watch_until_exit(&jw);
        assert_int_equal(check.bytes, 16 * MIB);
        agent_test_job_assert_exit(&jw, 0, 0, 0);
        agent_test_job_run_close(&jw);
}

/* Two jobs on one channel: their events interleave and each job's SEQ stays its own. */
static void test_two_jobs_interleave(void **state)
{
        static const char *const chatty[] = { "sh", "-c", "seq 1 100000000 | head -c 16777216", NULL };
        static const char *const quiet[] = { "sh", "-c", "sleep 0.2; echo quiet", NULL };
        struct seq_check check = {};
        struct agent_test_job_watch a, b;

        int fd = agent_test_job_subscribe(agent_test_no_jobs);
        agent_test_job_start(&(struct agent_test_job_spec){ .id = "chatty", .argv = chatty });
        agent_test_job_start(&(struct agent_test_job_spec){ .id = "quiet", .argv = quiet });
        agent_test_job_watch_init(&a, fd, "chatty");
        agent_test_job_watch_init(&b, fd, "quiet");
        a.sink = seq_check_feed;
        a.sink_ctx = &check;
        while (!a.exited || !b.exited) {
                struct agent_test_reply r;
                const uint8_t *id;
                agent_test_read(fd, &r);
                uint32_t len = agent_test_get_bytes(&r, AGENT_F_JOB_ID, &id);
                bool is_a = len == strlen(a.id) && memcmp(id, a.id, len) == 0;
                agent_test_job_watch_take(is_a ? &a : &b, &r);
        }
        assert_int_equal(check.bytes, 16 * MIB);
        agent_test_job_assert_output(&b, AGENT_STREAM_STDOUT, "quiet\n");
        agent_test_job_watch_finish(&a);
        agent_test_job_watch_finish(&b);
        close(fd);
}

static void test_stdin_stream(void **state)
{
        static const char *const cat[] = { "cat", NULL };
        static const char *const head[] = { "head", "-n1", NULL };
        struct agent_test_job_watch jw;

        /* cat echoes each piece as it comes; CLOSE_STDIN is its EOF. */
        int fd = agent_test_job_subscribe(agent_test_no_jobs);
        agent_test_job_start(&(struct agent_test_job_spec){ .id = "cat", .argv = cat, .stdin_open = true });
        agent_test_job_watch_init(&jw, fd, "cat");
        agent_test_job_input("cat", "hello\n", 6, 0);
        agent_test_job_watch_until_contains(&jw, AGENT_STREAM_STDOUT, "hello\n");
        agent_test_job_input("cat", "wor", 3, 0);
        agent_test_job_input("cat", "ld\n", 3, 0);
        agent_test_job_watch_until_contains(&jw, AGENT_STREAM_STDOUT, "world\n");
        agent_test_job_close_stdin("cat", 0);
        agent_test_job_input("cat", "late\n", 5, EPIPE);
        agent_test_job_watch_until_exit(&jw);
        agent_test_job_assert_output(&jw, AGENT_STREAM_STDOUT, "hello\nworld\n");
        agent_test_job_assert_exit(&jw, 0, 0, 0);
        agent_test_job_watch_finish(&jw);

        /* head reads one line and exits without waiting for the end of its input. */
        agent_test_job_start(&(struct agent_test_job_spec){ .id = "head", .argv = head, .stdin_open = true });
        agent_test_job_watch_init(&jw, fd, "head");
        jw.ack = false;
        agent_test_job_input("head", "first\nsecond\n", 13, 0);
        agent_test_job_watch_until_exit(&jw);
        agent_test_job_assert_output(&jw, AGENT_STREAM_STDOUT, "first\n");
        agent_test_job_assert_exit(&jw, 0, 0, 0);
        agent_test_job_input("head", "more\n", 5, EPIPE); /* exited; known until its exit is acknowledged */
        agent_test_job_ack(fd, "head", jw.next_seq - 1);
        jw.ack = true;
        agent_test_job_watch_finish(&jw);

        /* Without STDIN_OPEN, stdin is /dev/null. */
        agent_test_job_start(&(struct agent_test_job_spec){ .id = "nostdin", .argv = cat });
        agent_test_job_watch_init(&jw, fd, "nostdin");
        agent_test_job_watch_until_exit(&jw);
        assert_int_equal(jw.out_len[AGENT_STREAM_STDOUT], 0);
        agent_test_job_assert_exit(&jw, 0, 0, 0);
        agent_test_job_watch_finish(&jw);
        close(fd);
}

static void test_stdin_queue_full(void **state)
{
        static const char *const argv[] = { "sleep", "30", NULL };
        struct agent_test_job_watch jw;
        uint8_t *chunk = calloc(1, MIB);
        int i;

        assert_non_null(chunk);
        int fd = agent_test_job_subscribe(agent_test_no_jobs);
        agent_test_job_start(&(struct agent_test_job_spec){ .id = "full", .argv = argv, .stdin_open = true });
        agent_test_job_watch_init(&jw, fd, "full");
        /* Nobody reads: past the pipe and the 4 MiB queue the agent says EAGAIN. */
        for (i = 0; i < 4; i++)
                agent_test_job_input("full", chunk, MIB - 4096, 0);
        agent_test_job_input("full", chunk, MIB, EAGAIN);
        agent_test_job_input("full", chunk, 1, 0); /* what still fits is taken */
        agent_test_job_signal("full", SIGKILL, 0);
        agent_test_job_watch_until_exit(&jw);
        agent_test_job_assert_exit(&jw, 128 + SIGKILL, SIGKILL, 0);
        agent_test_job_watch_finish(&jw);
        close(fd);
        free(chunk);
}

static void test_signal(void **state)
{
        static const char *const argv[] = { "sleep", "30", NULL };
        struct agent_test_job_watch jw;

        int fd = agent_test_job_subscribe(agent_test_no_jobs);
        agent_test_job_start(&(struct agent_test_job_spec){ .id = "sig", .argv = argv });
        agent_test_job_watch_init(&jw, fd, "sig");
        jw.ack = false;
        agent_test_job_signal("sig", 0, EINVAL);
        agent_test_job_signal("sig", 1000, EINVAL);
        agent_test_job_signal("sig", SIGTERM, 0);
        agent_test_job_watch_until_exit(&jw);
        agent_test_job_assert_exit(&jw, 128 + SIGTERM, SIGTERM, 0);
        /* Exited but not acknowledged: known, not signalable. */
        agent_test_job_signal("sig", SIGTERM, ESRCH);
        agent_test_job_ack(fd, "sig", jw.next_seq - 1);
        jw.ack = true;
        agent_test_job_watch_finish(&jw);
        close(fd);
}

static void test_timeout(void **state)
{
        static const char *const argv[] = { "sleep", "30", NULL };
        struct agent_test_job_watch jw;
        uint64_t t0 = agent_test_now_ms();

        agent_test_job_run(&(struct agent_test_job_spec){ .id = "slow", .argv = argv, .timeout_ms = 300 }, &jw);
        assert_true(agent_test_now_ms() - t0 < 5000);
        agent_test_job_assert_exit(&jw, 128 + SIGKILL, SIGKILL, 1);
        assert_true(agent_test_get_u64(&jw.exit, AGENT_F_DURATION_US) >= 300000);
        agent_test_job_run_close(&jw);
}

static void test_linger(void **state)
{
        static const char *const argv[] = { "sh", "-c", "sleep 3 & echo done", NULL };
        struct agent_test_job_watch jw;
        uint64_t t0 = agent_test_now_ms();

        /* The background sleep holds the pipes; the exit comes ~100 ms after sh's. */
        agent_test_job_run(&(struct agent_test_job_spec){ .id = "linger", .argv = argv }, &jw);
        assert_true(agent_test_now_ms() - t0 < 2500);
        agent_test_job_assert_output(&jw, AGENT_STREAM_STDOUT, "done\n");
        agent_test_job_assert_exit(&jw, 0, 0, 0);
        agent_test_job_run_close(&jw);
}

static void test_pty(void **state)
{
        static const char *const argv[] = { "sh", "-c", "stty size; tty; read line; stty size; echo got:$line", NULL };
        static const char *const cat[] = { "cat", NULL };
        struct agent_test_job_watch jw;

        int fd = agent_test_job_subscribe(agent_test_no_jobs);
        agent_test_job_start(&(struct agent_test_job_spec){ .id = "pty", .argv = argv, .cols = 91, .rows = 27 });
        agent_test_job_watch_init(&jw, fd, "pty");
        jw.want_stream = AGENT_STREAM_PTY;
        agent_test_job_watch_until_contains(&jw, AGENT_STREAM_PTY, "27 91\r\n");
        agent_test_job_watch_until_contains(&jw, AGENT_STREAM_PTY, "/dev/pts/");
        agent_test_job_resize("pty", 100, 40, 0);
        agent_test_job_resize("pty", 0, 40, EINVAL);
        agent_test_job_input("pty", "hi\n", 3, 0);
        agent_test_job_watch_until_exit(&jw);
        assert_non_null(memmem(jw.out[AGENT_STREAM_PTY], jw.out_len[AGENT_STREAM_PTY], "40 100\r\ngot:hi\r\n", 16));
        agent_test_job_assert_exit(&jw, 0, 0, 0);
        agent_test_job_watch_finish(&jw);

        /* CLOSE_STDIN on a terminal is its end-of-file character. */
        agent_test_job_start(&(struct agent_test_job_spec){ .id = "ptycat", .argv = cat, .cols = 80, .rows = 24 });
        agent_test_job_watch_init(&jw, fd, "ptycat");
        jw.want_stream = AGENT_STREAM_PTY;
        agent_test_job_input("ptycat", "abc\n", 4, 0);
        agent_test_job_watch_until_contains(&jw, AGENT_STREAM_PTY, "abc\r\nabc\r\n");
        agent_test_job_close_stdin("ptycat", 0);
        agent_test_job_watch_until_exit(&jw);
        agent_test_job_assert_exit(&jw, 0, 0, 0);
        agent_test_job_watch_finish(&jw);

        /* Without a terminal there is nothing to resize. */
        static const char *const sleep30[] = { "sleep", "30", NULL };
        agent_test_job_start(&(struct agent_test_job_spec){ .id = "notty", .argv = sleep30 });
        agent_test_job_watch_init(&jw, fd, "notty");
        agent_test_job_resize("notty", 80, 24, ENOTTY);
        agent_test_job_signal("notty", SIGKILL, 0);
        agent_test_job_watch_until_exit(&jw);
        agent_test_job_watch_finish(&jw);
        close(fd);
}

static void test_user(void **state)
{
        static const char *const argv[] = { "sh", "-c", "id -u; id -g; pwd; echo \"$HOME $USER\"", NULL };
        struct agent_test_job_watch jw;
        char expected[1024];
        struct stat st;

        if (geteuid() != 0)
                agent_test_skip("switching users needs root");
        struct passwd *pw = getpwnam("nobody");
        if (!pw)
                agent_test_skip("no user nobody on this host");
        const char *cwd = stat(pw->pw_dir, &st) == 0 && S_ISDIR(st.st_mode) ? pw->pw_dir : "/";
        snprintf(expected, sizeof expected, "%u\n%u\n%s\n%s nobody\n", (unsigned)pw->pw_uid, (unsigned)pw->pw_gid, cwd,
                 pw->pw_dir);

        agent_test_job_run(&(struct agent_test_job_spec){ .id = "nobody", .argv = argv, .user = "nobody" }, &jw);
        agent_test_job_assert_output(&jw, AGENT_STREAM_STDOUT, expected);
        agent_test_job_run_close(&jw);

        char uid[16];
        snprintf(uid, sizeof uid, "%u", (unsigned)pw->pw_uid);
        agent_test_job_run(&(struct agent_test_job_spec){ .id = "uid", .argv = argv, .user = uid }, &jw);
        agent_test_job_assert_output(&jw, AGENT_STREAM_STDOUT, expected);
        agent_test_job_run_close(&jw);

        /* A uid /etc/passwd does not know runs with the same gid, in /. */
        if (!getpwuid(4242)) {
                agent_test_job_run(&(struct agent_test_job_spec){ .id = "anon", .argv = argv, .user = "4242" }, &jw);
                agent_test_job_assert_output(&jw, AGENT_STREAM_STDOUT, "4242\n4242\n/\n/ 4242\n");
                agent_test_job_run_close(&jw);
        }

        /* An environment sent with the request wins over the user's. */
        static const char *const env[] = { "PATH=/usr/bin:/bin", "HOME=/custom", NULL };
        snprintf(expected, sizeof expected, "%u\n%u\n%s\n/custom nobody\n", (unsigned)pw->pw_uid, (unsigned)pw->pw_gid, cwd);
        agent_test_job_run(&(struct agent_test_job_spec){ .id = "env", .argv = argv, .user = "nobody", .env = env }, &jw);
        agent_test_job_assert_output(&jw, AGENT_STREAM_STDOUT, expected);
        agent_test_job_run_close(&jw);

        agent_test_job_start_fails(&(struct agent_test_job_spec){ .id = "nouser", .argv = argv, .user = "no-such-user" }, ENOENT);
}

static void test_missing_command(void **state)
{
        static const char *const argv[] = { "space-agent-test-no-such-command", NULL };
        static const char *const sh[] = { "true", NULL };
        char expected[256];
        struct agent_test_job_watch jw;

        snprintf(expected, sizeof expected, "exec \"%s\": %s", argv[0], strerror(ENOENT));
        agent_test_job_run(&(struct agent_test_job_spec){ .id = "missing", .argv = argv }, &jw);
        agent_test_job_assert_exit(&jw, 127, 0, 0);
        assert_int_equal(agent_test_get_i32(&jw.exit, AGENT_F_ERRNO), ENOENT);
        agent_test_assert_str(&jw.exit, AGENT_F_MESSAGE, expected);
        strcat(expected, "\n");
        agent_test_job_assert_output(&jw, AGENT_STREAM_STDERR, expected);
        assert_int_equal(jw.out_len[AGENT_STREAM_STDOUT], 0);
        agent_test_job_run_close(&jw);

        agent_test_job_run(&(struct agent_test_job_spec){ .id = "badcwd", .argv = sh, .cwd = "/nonexistent-dir" }, &jw);
        agent_test_job_assert_exit(&jw, 127, 0, 0);
        assert_int_equal(agent_test_get_i32(&jw.exit, AGENT_F_ERRNO), ENOENT);
        snprintf(expected, sizeof expected, "chdir \"/nonexistent-dir\": %s", strerror(ENOENT));
        agent_test_assert_str(&jw.exit, AGENT_F_MESSAGE, expected);
        agent_test_job_run_close(&jw);
}

static void test_duplicate_id(void **state)
{
        static const char *const sleep30[] = { "sleep", "30", NULL };
        static const char *const echo[] = { "echo", "again", NULL };
        struct agent_test_job_watch jw;

        int fd = agent_test_job_subscribe(agent_test_no_jobs);
        agent_test_job_start(&(struct agent_test_job_spec){ .id = "dup", .argv = sleep30 });
        agent_test_job_start_fails(&(struct agent_test_job_spec){ .id = "dup", .argv = echo }, EEXIST);
        agent_test_job_watch_init(&jw, fd, "dup");
        jw.ack = false;
        agent_test_job_signal("dup", SIGKILL, 0);
        agent_test_job_watch_until_exit(&jw);
        /* Until its exit is acknowledged the id is taken. */
        agent_test_job_start_fails(&(struct agent_test_job_spec){ .id = "dup", .argv = echo }, EEXIST);
        agent_test_job_ack(fd, "dup", jw.next_seq - 1);
        jw.ack = true;
        agent_test_job_watch_finish(&jw);

        agent_test_job_start(&(struct agent_test_job_spec){ .id = "dup", .argv = echo });
        agent_test_job_watch_init(&jw, fd, "dup");
        agent_test_job_watch_until_exit(&jw);
        agent_test_job_assert_output(&jw, AGENT_STREAM_STDOUT, "again\n");
        agent_test_job_watch_finish(&jw);
        close(fd);
}

static void test_unknown_job(void **state)
{
        struct agent_frame_writer w;

        agent_test_job_input("nope", "x", 1, ENOENT);
        agent_test_job_close_stdin("nope", ENOENT);
        agent_test_job_signal("nope", SIGTERM, ENOENT);
        agent_test_job_resize("nope", 80, 24, ENOENT);
        agent_test_job_control_begin(&w, AGENT_MSG_JOB_SIGNAL, NULL);
        agent_frame_writer_put_i32(&w, AGENT_F_SIGNAL, SIGTERM);
        agent_test_job_control_expect(&w, ENOENT);
}

static void test_bad_job_ids(void **state)
{
        static const char *const argv[] = { "true", NULL };
        char longest[64], too_long[65];
        struct agent_test_job_watch jw;

        memset(longest, 'a', 63);
        longest[63] = '\0';
        memset(too_long, 'b', 64);
        too_long[64] = '\0';
        agent_test_job_start_fails(&(struct agent_test_job_spec){ .id = "", .argv = argv }, EINVAL);
        agent_test_job_start_fails(&(struct agent_test_job_spec){ .id = too_long, .argv = argv }, EINVAL);
        agent_test_job_start_fails(&(struct agent_test_job_spec){ .id = "a/b", .argv = argv }, EINVAL);
        agent_test_job_start_fails(&(struct agent_test_job_spec){ .id = "../x", .argv = argv }, EINVAL);
        agent_test_job_start_fails(&(struct agent_test_job_spec){ .id = NULL, .argv = argv }, EINVAL);
        agent_test_job_start_fails(&(struct agent_test_job_spec){ .id = "noargv", .argv = (const char *const[]){ NULL } },
                                   EINVAL);
        agent_test_job_start_fails(&(struct agent_test_job_spec){ .id = "halftty", .argv = argv, .cols = 80 }, EINVAL);

        /* STDIN is EXEC's: a job takes its input through JOB_INPUT. */
        struct agent_frame_writer w;
        struct agent_test_reply r;
        int fd = agent_test_connect();
        agent_frame_writer_begin(&w, AGENT_MSG_JOB_START);
        agent_frame_writer_put_str(&w, AGENT_F_JOB_ID, "stdin");
        agent_frame_writer_put_str(&w, AGENT_F_ARGV, "cat");
        agent_frame_writer_put(&w, AGENT_F_STDIN, "x", 1);
        agent_test_send(fd, &w);
        agent_test_read(fd, &r);
        agent_test_assert_error(&r, EINVAL);
        agent_test_reply_release(&r);
        close(fd);

        agent_test_job_run(&(struct agent_test_job_spec){ .id = longest, .argv = argv }, &jw);
        agent_test_job_assert_exit(&jw, 0, 0, 0);
        agent_test_job_run_close(&jw);
}

/* The subscriber may send requests on its channel while events stream out: each reply
 * goes between two events, never inside one. */
static void test_requests_on_channel(void **state)
{
        static const char *const argv[] = { "head", "-c", "8388608", "/dev/zero", NULL };
        struct agent_test_job_watch jw;
        struct agent_frame_writer w;
        bool hello_seen = false;

        int fd = agent_test_job_subscribe(agent_test_no_jobs);
        agent_test_job_start(&(struct agent_test_job_spec){ .id = "chatty", .argv = argv });
        agent_test_sleep_ms(300); /* the socket fills: an event is half written */
        agent_frame_writer_begin(&w, AGENT_MSG_HELLO);
        agent_test_send(fd, &w);
        agent_test_job_watch_init(&jw, fd, "chatty");
        jw.ack = false;
        while (!jw.exited) {
                struct agent_test_reply r;
                agent_test_read(fd, &r);
                if (r.f.type == AGENT_MSG_HELLO_REPLY) {
                        assert_false(hello_seen);
                        hello_seen = true;
                        agent_test_reply_release(&r);
                        agent_test_job_ack(fd, "chatty", jw.next_seq - 1);
                        jw.ack = true;
                        continue;
                }
                /* Not the HELLO_REPLY: hand it to the event checks. */
                agent_test_reply_release(&jw.last);
                assert_true(r.f.type == AGENT_MSG_JOB_OUTPUT || r.f.type == AGENT_MSG_JOB_EXIT);
                uint64_t seq = agent_test_get_u64(&r, AGENT_F_SEQ);
                assert_int_equal(seq, jw.next_seq);
                jw.next_seq++;
                if (jw.ack)
                        agent_test_job_ack(fd, "chatty", seq);
                if (r.f.type == AGENT_MSG_JOB_EXIT) {
                        jw.exit = r;
                        jw.exited = true;
                } else {
                        const uint8_t *data;
                        jw.out_total += agent_test_get_bytes(&r, AGENT_F_DATA, &data);
                        agent_test_reply_release(&r);
                }
        }
        assert_true(hello_seen);
        assert_int_equal(jw.out_total, 8 * MIB);
        agent_test_job_run_close(&jw);
}

/* A second JOB_SUBSCRIBE on the same channel, with an event half written: that event is
 * completed, JOB_SUBSCRIBED follows, then every unacknowledged event from SEQ 1 again. */
static void test_resubscribe_same_channel(void **state)
{
        static const char *const argv[] = { "head", "-c", "8388608", "/dev/zero", NULL };
        static const char *const listed[] = { "again", NULL };
        struct agent_frame_writer w;
        struct agent_test_reply r;
        struct agent_test_job_watch jw;
        uint64_t seq_before = 0;

        int fd = agent_test_job_subscribe(agent_test_no_jobs);
        agent_test_job_start(&(struct agent_test_job_spec){ .id = "again", .argv = argv });
        agent_test_sleep_ms(300);
        agent_frame_writer_begin(&w, AGENT_MSG_JOB_SUBSCRIBE);
        agent_test_send(fd, &w);
        for (;;) {
                agent_test_read(fd, &r);
                if (r.f.type == AGENT_MSG_JOB_SUBSCRIBED)
                        break;
                assert_int_equal(r.f.type, AGENT_MSG_JOB_OUTPUT);
                assert_int_equal(agent_test_get_u64(&r, AGENT_F_SEQ), ++seq_before);
                agent_test_reply_release(&r);
        }
        agent_test_assert_str(&r, AGENT_F_JOB_ID, listed[0]);
        agent_test_reply_release(&r);
        assert_true(seq_before > 0);

        agent_test_job_watch_init(&jw, fd, "again");
        agent_test_job_watch_until_exit(&jw);
        assert_int_equal(jw.out_total, 8 * MIB);
        agent_test_job_run_close(&jw);
}

int main(int argc, char **argv)
{
        if (agent_test_init(argc, argv) != 0)
                return 2;

        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_output_then_exit),
                cmocka_unit_test(test_output_before_subscribe),
                cmocka_unit_test(test_replay_unacked),
                cmocka_unit_test(test_new_subscriber_closes_old),
                cmocka_unit_test(test_runs_without_connection),
                cmocka_unit_test(test_binary_output),
                cmocka_unit_test(test_large_output_acked),
                cmocka_unit_test(test_large_output_backpressure),
                cmocka_unit_test(test_exit_while_held_back),
                cmocka_unit_test(test_backlog_without_subscriber),
                cmocka_unit_test(test_two_jobs_interleave),
                cmocka_unit_test(test_stdin_stream),
                cmocka_unit_test(test_stdin_queue_full),
                cmocka_unit_test(test_signal),
                cmocka_unit_test(test_timeout),
                cmocka_unit_test(test_linger),
                cmocka_unit_test(test_pty),
                cmocka_unit_test(test_user),
                cmocka_unit_test(test_missing_command),
                cmocka_unit_test(test_duplicate_id),
                cmocka_unit_test(test_unknown_job),
                cmocka_unit_test(test_bad_job_ids),
                cmocka_unit_test(test_requests_on_channel),
                cmocka_unit_test(test_resubscribe_same_channel),
        };
        return agent_test_exit(cmocka_run_group_tests(tests, agent_test_setup, agent_test_teardown));
}
