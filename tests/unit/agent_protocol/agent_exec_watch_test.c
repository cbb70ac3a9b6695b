/* Black-box tests of space-agent's exec watch (JOB_START with WATCH_EXEC,
 * docs/agent-protocol.md "Exec watch"): the real binary, started with --listen; this test
 * is the subscriber and answers the JOB_EXEC_CHECKs itself.
 * Usage: agent_exec_watch_test PATH-TO-space-agent */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_test_harness.h"
#include "agent_test_jobs.h"

/* What one job's channel carried, with every check answered by verdict(). */
struct watched_run {
        char out[4][4096];
        size_t out_len[4];
        int checks;
        char reals[16][256]; /* the first checks' EXEC_REAL */
        char argv0[16][256];
        int32_t exit_code;
        uint8_t timed_out;
};

static void copy_field(const struct agent_test_reply *r, uint16_t tag, char *buf, size_t size)
{
        const uint8_t *data;
        uint32_t len = agent_test_get_bytes(r, tag, &data);
        snprintf(buf, size, "%.*s", (int)len, (const char *)data);
}

static void send_verdict(int fd, uint64_t id, bool allow, const char *msg)
{
        struct agent_frame_writer w;
        agent_frame_writer_begin(&w, AGENT_MSG_JOB_EXEC_VERDICT);
        agent_frame_writer_put_u64(&w, AGENT_F_EXEC_CHECK_ID, id);
        agent_frame_writer_put_u8(&w, AGENT_F_EXEC_ALLOW, allow);
        if (msg)
                agent_frame_writer_put_str(&w, AGENT_F_MESSAGE, msg);
        agent_test_send(fd, &w);
}

/* Reads the channel until the job's exit; deny_real: EXEC_REAL denied (NULL: answer
 * nothing at all). */
static void run_watched(int fd, const char *id, const char *deny_real, struct watched_run *ret)
{
        memset(ret, 0, sizeof *ret);
        for (;;) {
                struct agent_test_reply r;
                agent_test_read(fd, &r);
                if (r.f.type == AGENT_MSG_JOB_EXEC_CHECK) {
                        agent_test_assert_str(&r, AGENT_F_JOB_ID, id);
                        assert_true(agent_test_get_u32(&r, AGENT_F_JOB_PID) > 1);
                        char real[256], argv0[256];
                        copy_field(&r, AGENT_F_EXEC_REAL, real, sizeof real);
                        copy_field(&r, AGENT_F_ARGV, argv0, sizeof argv0);
                        if (ret->checks < 16) {
                                snprintf(ret->reals[ret->checks], sizeof ret->reals[0], "%s", real);
                                snprintf(ret->argv0[ret->checks], sizeof ret->argv0[0], "%s", argv0);
                        }
                        ret->checks++;
                        if (deny_real) {
                                bool deny = strcmp(real, deny_real) == 0;
                                send_verdict(fd, agent_test_get_u64(&r, AGENT_F_EXEC_CHECK_ID), !deny,
                                             deny ? "that one is not allowed" : NULL);
                        }
                } else if (r.f.type == AGENT_MSG_JOB_OUTPUT) {
                        uint8_t stream = agent_test_get_u8(&r, AGENT_F_STREAM);
                        const uint8_t *data;
                        uint32_t len = agent_test_get_bytes(&r, AGENT_F_DATA, &data);
                        assert_true(stream < 4 && ret->out_len[stream] + len < sizeof ret->out[0]);
                        memcpy(ret->out[stream] + ret->out_len[stream], data, len);
                        ret->out_len[stream] += len;
                        agent_test_job_ack(fd, id, agent_test_get_u64(&r, AGENT_F_SEQ));
                } else if (r.f.type == AGENT_MSG_JOB_EXIT) {
                        ret->exit_code = agent_test_get_i32(&r, AGENT_F_EXIT_CODE);
                        ret->timed_out = agent_test_get_u8(&r, AGENT_F_TIMED_OUT);
                        agent_test_job_ack(fd, id, agent_test_get_u64(&r, AGENT_F_SEQ));
                        agent_test_reply_release(&r);
                        return;
                }
                agent_test_reply_release(&r);
        }
}

static void test_checks_and_verdicts(void **state)
{
        char echo_real[256];
        assert_non_null(realpath("/bin/echo", echo_real));
        static const char *const argv[] = { "sh", "-c", "/bin/true && echo first; /bin/echo hidden; echo rc=$?", NULL };
        int fd = agent_test_job_subscribe((const char *const[]){ NULL });
        agent_test_job_start(&(struct agent_test_job_spec){ .id = "watched", .argv = argv, .watch_exec = true });
        struct watched_run run;
        run_watched(fd, "watched", echo_real, &run);
        /* The job's own exec (each PATH attempt that exists), /bin/true, /bin/echo. */
        assert_true(run.checks >= 3);
        bool saw_sh = false, saw_true = false;
        for (int i = 0; i < run.checks && i < 16; i++) {
                saw_sh |= strcmp(run.argv0[i], "sh") == 0;
                saw_true |= strcmp(run.argv0[i], "/bin/true") == 0;
        }
        assert_true(saw_sh && saw_true);
        run.out[AGENT_STREAM_STDOUT][run.out_len[AGENT_STREAM_STDOUT]] = '\0';
        run.out[AGENT_STREAM_STDERR][run.out_len[AGENT_STREAM_STDERR]] = '\0';
        /* The denied exec failed with EACCES (the shell's 126) and said why on stderr. */
        assert_string_equal(run.out[AGENT_STREAM_STDOUT], "first\nrc=126\n");
        assert_non_null(strstr(run.out[AGENT_STREAM_STDERR], "space: that one is not allowed\n"));
        assert_int_equal(run.exit_code, 0);
        agent_test_job_wait_forgotten("watched");
        close(fd);
}

static void test_no_verdict_waits(void **state)
{
        /* Nobody answers: the job's own exec waits (nothing runs unchecked) until its timeout. */
        static const char *const argv[] = { "sh", "-c", "echo ran", NULL };
        int fd = agent_test_job_subscribe((const char *const[]){ NULL });
        agent_test_job_start(
                &(struct agent_test_job_spec){ .id = "unanswered", .argv = argv, .watch_exec = true, .timeout_ms = 500 });
        struct watched_run run;
        run_watched(fd, "unanswered", NULL, &run);
        assert_true(run.checks >= 1);
        assert_int_equal(run.out_len[AGENT_STREAM_STDOUT], 0);
        assert_int_equal(run.timed_out, 1);
        agent_test_job_wait_forgotten("unanswered");
        close(fd);
}

int main(int argc, char **argv)
{
        if (agent_test_init(argc, argv) != 0)
                return 2;

        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_checks_and_verdicts),
                cmocka_unit_test(test_no_verdict_waits),
        };
        return agent_test_exit(cmocka_run_group_tests(tests, agent_test_setup, agent_test_teardown));
}
