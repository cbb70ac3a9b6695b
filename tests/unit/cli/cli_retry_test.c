/* Unit tests of cli_retry (src/cli/cli_retry.c): which failures a restart of spaced explains,
 * $SPACE_RETRY_S, and that the pauses stop at the deadline. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include <cmocka.h>

#include "cli/cli_retry.h"

static void test_transient(void **state)
{
        /* spaced away or stopping: always */
        assert_true(cli_retry_transient(-EHOSTUNREACH, 0, false));
        assert_true(cli_retry_transient(0, 503, false));
        assert_true(cli_retry_transient(0, 502, false));
        assert_true(cli_retry_transient(0, 504, true));
        /* cut short: only when the call may be sent again */
        assert_true(cli_retry_transient(-ECONNRESET, 0, true));
        assert_false(cli_retry_transient(-ECONNRESET, 0, false));
        assert_false(cli_retry_transient(-EIO, 0, false));
        assert_true(cli_retry_transient(-EIO, 0, true));
        /* answers and local failures: never */
        assert_false(cli_retry_transient(0, 200, true));
        assert_false(cli_retry_transient(0, 401, true));
        assert_false(cli_retry_transient(0, 404, true));
        assert_false(cli_retry_transient(0, 500, true));
        assert_false(cli_retry_transient(-ECANCELED, 0, true));
        assert_false(cli_retry_transient(-ENOMEM, 0, true));
        assert_false(cli_retry_transient(-EBADMSG, 0, true));
}

static void test_limit_from_environment(void **state)
{
        unsetenv("SPACE_RETRY_S");
        assert_int_equal(cli_retry_limit_s(), CLI_RETRY_DEFAULT_S);
        setenv("SPACE_RETRY_S", "5", 1);
        assert_int_equal(cli_retry_limit_s(), 5);
        setenv("SPACE_RETRY_S", "0", 1);
        assert_int_equal(cli_retry_limit_s(), 0);
        setenv("SPACE_RETRY_S", "-1", 1);
        assert_int_equal(cli_retry_limit_s(), CLI_RETRY_DEFAULT_S);
        setenv("SPACE_RETRY_S", "lots", 1);
        assert_int_equal(cli_retry_limit_s(), CLI_RETRY_DEFAULT_S);
        unsetenv("SPACE_RETRY_S");
}

static double now_s(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void test_pauses_stop_at_the_deadline(void **state)
{
        struct cli cli = { .url = "http://127.0.0.1:1" };
        struct cli_retry r;

        setenv("SPACE_RETRY_S", "0", 1);
        cli_retry_init(&r);
        assert_false(cli_retry_pause(&r, &cli));

        setenv("SPACE_RETRY_S", "1", 1);
        cli_retry_init(&r);
        double t0 = now_s();
        int pauses = 0;
        while (cli_retry_pause(&r, &cli))
                pauses++;
        double took = now_s() - t0;
        /* 0.1 + 0.2 + 0.4 + the 0.3 left: four pauses, the last cut to the deadline */
        assert_true(pauses >= 3 && pauses <= 5);
        assert_true(took >= 0.95 && took < 2.0);
        unsetenv("SPACE_RETRY_S");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_transient),
                cmocka_unit_test(test_limit_from_environment),
                cmocka_unit_test(test_pauses_stop_at_the_deadline),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
