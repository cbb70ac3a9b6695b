/* approval_request: a held command's request kept as JSON comes back as the same spec, and
 * a malformed one (a store row that was tampered with or cut) is refused, not half-read. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "service/approval_request.h"

static void round_trip(void **state)
{
        (void)state;
        char *argv[] = { "/bin/sh", "-c", "git push origin main", NULL };
        char *envp[] = { "PATH=/usr/bin:/bin", "HOME=/root", NULL };
        struct agent_job_spec spec = {
                .argv = argv,
                .envp = envp,
                .cwd = "/workspace",
                .user = "dev",
                .stdin_open = true,
                .tty_cols = 120,
                .tty_rows = 40,
                .timeout_ms = 30000,
        };
        json_t *j = approval_request_new(&spec, "input\n");
        assert_non_null(j);
        struct agent_job_spec back;
        const char *stdin_text = NULL;
        assert_int_equal(approval_request_spec(j, &back, &stdin_text), 0);
        for (int i = 0; argv[i]; i++)
                assert_string_equal(back.argv[i], argv[i]);
        assert_null(back.argv[3]);
        assert_string_equal(back.envp[1], "HOME=/root");
        assert_null(back.envp[2]);
        assert_string_equal(back.cwd, "/workspace");
        assert_string_equal(back.user, "dev");
        assert_true(back.stdin_open);
        assert_int_equal(back.tty_cols, 120);
        assert_int_equal(back.tty_rows, 40);
        assert_int_equal(back.timeout_ms, 30000);
        assert_string_equal(stdin_text, "input\n");
        approval_request_spec_release(&back);
        json_decref(j);

        /* Root, the default directory, no stdin: left out, and back as NULL. */
        struct agent_job_spec plain = { .argv = argv, .envp = envp };
        j = approval_request_new(&plain, NULL);
        assert_int_equal(approval_request_spec(j, &back, &stdin_text), 0);
        assert_null(back.cwd);
        assert_null(back.user);
        assert_null(stdin_text);
        assert_false(back.stdin_open);
        approval_request_spec_release(&back);
        json_decref(j);
}

static void malformed(void **state)
{
        (void)state;
        static const char *const bad[] = {
                "{}",
                "{\"argv\": [], \"envp\": []}",
                "{\"argv\": [\"ls\", 3], \"envp\": []}",
                "{\"argv\": [\"ls\"]}",
                "{\"argv\": \"ls\", \"envp\": []}",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                json_t *j = json_loads(bad[i], 0, NULL);
                struct agent_job_spec spec = { 0 };
                const char *stdin_text = NULL;
                assert_int_equal(approval_request_spec(j, &spec, &stdin_text), -EINVAL);
                assert_null(spec.argv);
                json_decref(j);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = { cmocka_unit_test(round_trip), cmocka_unit_test(malformed) };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
