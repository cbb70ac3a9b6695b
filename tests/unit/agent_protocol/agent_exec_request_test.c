/* Unit tests of space-agent's EXEC request decoding. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "space_agent/agent_exec_request.h"

static struct agent_frame frame_of(struct agent_frame_writer *w)
{
        assert_int_equal(agent_frame_writer_finish(w), 0);
        return (struct agent_frame){ .type = w->data[4],
                                     .payload = w->data + AGENT_FRAME_HEADER_SIZE,
                                     .payload_len = (uint32_t)(w->len - AGENT_FRAME_HEADER_SIZE) };
}

static void test_defaults(void **state)
{
        struct agent_frame_writer w;
        struct agent_exec_request req;
        const char *reason = NULL;

        agent_frame_writer_begin(&w, AGENT_MSG_EXEC);
        agent_frame_writer_put_str(&w, AGENT_F_ARGV, "echo");
        agent_frame_writer_put_str(&w, AGENT_F_ARGV, "hi");
        struct agent_frame f = frame_of(&w);

        assert_int_equal(agent_exec_request_parse(&f, &req, &reason), 0);
        assert_string_equal(req.argv[0], "echo");
        assert_string_equal(req.argv[1], "hi");
        assert_null(req.argv[2]);
        assert_string_equal(req.envp[0], "PATH=" AGENT_EXEC_DEFAULT_PATH);
        assert_string_equal(req.envp[1], "HOME=/root");
        assert_null(req.envp[2]);
        assert_string_equal(req.cwd, "/");
        assert_false(req.has_stdin);
        assert_int_equal(req.timeout_ms, 0);
        assert_int_equal(req.output_cap, AGENT_EXEC_OUTPUT_CAP_DEFAULT);
        agent_exec_request_release(&req);
        agent_frame_writer_release(&w);
}

static void test_all_fields(void **state)
{
        struct agent_frame_writer w;
        struct agent_exec_request req;
        const char *reason = NULL;

        agent_frame_writer_begin(&w, AGENT_MSG_EXEC);
        agent_frame_writer_put_str(&w, AGENT_F_ENV, "A=1");
        agent_frame_writer_put_str(&w, AGENT_F_ARGV, "cat");
        agent_frame_writer_put_str(&w, AGENT_F_ENV, "B=");
        agent_frame_writer_put_str(&w, AGENT_F_CWD, "/tmp");
        agent_frame_writer_put(&w, AGENT_F_STDIN, "in\0put", 6);
        agent_frame_writer_put_u32(&w, AGENT_F_TIMEOUT_MS, 1500);
        agent_frame_writer_put_u32(&w, AGENT_F_OUTPUT_CAP, 0xffffffffu);
        agent_frame_writer_put_str(&w, 4242, "unknown, ignored");
        struct agent_frame f = frame_of(&w);

        assert_int_equal(agent_exec_request_parse(&f, &req, &reason), 0);
        assert_string_equal(req.argv[0], "cat");
        assert_null(req.argv[1]);
        assert_string_equal(req.envp[0], "A=1");
        assert_string_equal(req.envp[1], "B=");
        assert_null(req.envp[2]);
        assert_string_equal(req.cwd, "/tmp");
        assert_true(req.has_stdin);
        assert_int_equal(req.stdin_len, 6);
        assert_memory_equal(req.stdin_data, "in\0put", 6);
        assert_int_equal(req.timeout_ms, 1500);
        assert_int_equal(req.output_cap, AGENT_EXEC_OUTPUT_CAP_MAX);
        agent_exec_request_release(&req);
        agent_exec_request_release(NULL);
        agent_frame_writer_release(&w);
}

static void test_empty_stdin_is_present(void **state)
{
        struct agent_frame_writer w;
        struct agent_exec_request req;
        const char *reason = NULL;

        agent_frame_writer_begin(&w, AGENT_MSG_EXEC);
        agent_frame_writer_put_str(&w, AGENT_F_ARGV, "cat");
        agent_frame_writer_put(&w, AGENT_F_STDIN, NULL, 0);
        agent_frame_writer_put_u32(&w, AGENT_F_OUTPUT_CAP, 0);
        struct agent_frame f = frame_of(&w);

        assert_int_equal(agent_exec_request_parse(&f, &req, &reason), 0);
        assert_true(req.has_stdin);
        assert_int_equal(req.stdin_len, 0);
        assert_int_equal(req.output_cap, 0);
        agent_exec_request_release(&req);
        agent_frame_writer_release(&w);
}

static void expect_invalid(void (*build)(struct agent_frame_writer *w))
{
        struct agent_frame_writer w;
        struct agent_exec_request req = {};
        const char *reason = NULL;

        agent_frame_writer_begin(&w, AGENT_MSG_EXEC);
        build(&w);
        struct agent_frame f = frame_of(&w);
        assert_int_equal(agent_exec_request_parse(&f, &req, &reason), -EINVAL);
        assert_non_null(reason);
        assert_null(req.storage);
        agent_frame_writer_release(&w);
}

static void build_no_argv(struct agent_frame_writer *w)
{
        agent_frame_writer_put_str(w, AGENT_F_ENV, "A=1");
}

static void build_nul_in_argv(struct agent_frame_writer *w)
{
        agent_frame_writer_put(w, AGENT_F_ARGV, "ec\0ho", 5);
}

static void build_env_without_equals(struct agent_frame_writer *w)
{
        agent_frame_writer_put_str(w, AGENT_F_ARGV, "env");
        agent_frame_writer_put_str(w, AGENT_F_ENV, "JUSTKEY");
}

static void build_env_empty_key(struct agent_frame_writer *w)
{
        agent_frame_writer_put_str(w, AGENT_F_ARGV, "env");
        agent_frame_writer_put_str(w, AGENT_F_ENV, "=value");
}

static void build_bad_timeout_size(struct agent_frame_writer *w)
{
        agent_frame_writer_put_str(w, AGENT_F_ARGV, "true");
        agent_frame_writer_put_u8(w, AGENT_F_TIMEOUT_MS, 5);
}

static void build_empty_cwd(struct agent_frame_writer *w)
{
        agent_frame_writer_put_str(w, AGENT_F_ARGV, "true");
        agent_frame_writer_put_str(w, AGENT_F_CWD, "");
}

static void test_invalid(void **state)
{
        expect_invalid(build_no_argv);
        expect_invalid(build_nul_in_argv);
        expect_invalid(build_env_without_equals);
        expect_invalid(build_env_empty_key);
        expect_invalid(build_bad_timeout_size);
        expect_invalid(build_empty_cwd);
}

static void test_malformed(void **state)
{
        static const uint8_t payload[] = { AGENT_F_ARGV, 0, 9, 0, 0, 0, 'x' };
        struct agent_frame f = { .type = AGENT_MSG_EXEC, .payload = payload, .payload_len = sizeof payload };
        struct agent_exec_request req = {};
        const char *reason = NULL;

        assert_int_equal(agent_exec_request_parse(&f, &req, &reason), -EPROTO);
        assert_null(req.storage);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_defaults), cmocka_unit_test(test_all_fields), cmocka_unit_test(test_empty_stdin_is_present),
                cmocka_unit_test(test_invalid),  cmocka_unit_test(test_malformed),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
