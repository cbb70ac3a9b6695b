#include "fake_test.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

int fake_test_setup(void **state)
{
        struct fake_daemon *fd = calloc(1, sizeof(*fd));
        if (!fd || fake_daemon_start(fd, 2) < 0) {
                free(fd);
                return -1;
        }
        *state = fd;
        return 0;
}

int fake_test_teardown(void **state)
{
        fake_daemon_stop(*state);
        free(*state);
        return 0;
}

void fake_test_assert_consistent(struct fake_daemon *fd)
{
        char why[512];
        if (fake_daemon_check(fd, why, sizeof(why)) < 0)
                fail_msg("inconsistent: %s", why);
}

enum sandbox_state fake_test_state(struct fake_daemon *fd, const char *id)
{
        struct sandbox sb;
        assert_int_equal(fake_daemon_sandbox(fd, id, &sb), 0);
        sandbox_release(&sb);
        return sb.state;
}

void fake_test_run_ok(struct fake_daemon *fd, const struct operation *op)
{
        struct operation done;
        assert_int_equal(fake_daemon_wait(fd, op->id, &done), 0);
        if (done.state != OPERATION_SUCCEEDED)
                fail_msg("%s of %s failed: %s %s", done.kind, done.target, done.error_code, done.error_message);
}

void fake_test_create_running(struct fake_daemon *fd, const char *on_timeout, char *ret_id)
{
        struct operation op;
        struct space_error err = { 0 };
        if (fake_daemon_create(fd, 3600, on_timeout, ret_id, &op, &err) < 0)
                fail_msg("create refused: %s", err.message);
        fake_test_run_ok(fd, &op);
        assert_int_equal(fake_test_state(fd, ret_id), SANDBOX_RUNNING);
}

void fake_test_act(struct fake_daemon *fd, const char *id, enum sandbox_action a, enum sandbox_state want)
{
        struct operation op;
        struct space_error err = { 0 };
        if (sandbox_lifecycle_submit(&fd->ctx, id, a, &op, &err) < 0)
                fail_msg("refused: %s", err.message);
        fake_test_run_ok(fd, &op);
        assert_int_equal(fake_test_state(fd, id), want);
}
