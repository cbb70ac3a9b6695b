/* The consistency check the fault injection tests rely on (fake_daemon_check) must see each
 * kind of disagreement between the rows and the fake host, or the sweeps could pass on a
 * world that is wrong. Each case breaks one thing on a consistent world. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_test.h"
#include "operations/operation_queue.h"
#include "operations/sandbox_history.h"

static void assert_flags(struct fake_daemon *fd, const char *want)
{
        char why[512] = "";
        if (fake_daemon_check(fd, why, sizeof(why)) == 0)
                fail_msg("the check passed; it should have found: %s", want);
        if (!strstr(why, want))
                fail_msg("the check found '%s', not '%s'", why, want);
}

static void change_host(struct fake_daemon *fd, const char *id, void (*edit)(struct fake_resources *res))
{
        struct fake_resources res;
        fake_driver_get(fd->driver, id, &res);
        edit(&res);
        fake_driver_put(fd->driver, id, &res);
}

static void die(struct fake_resources *res)
{
        res->running = false;
}

static void freeze(struct fake_resources *res)
{
        res->paused = true;
}

static void reboot(struct fake_resources *res)
{
        res->boot += 1;
}

static void launch(struct fake_resources *res)
{
        res->running = res->run_state = true;
}

static void keep_rootfs(struct fake_resources *res)
{
        res->rootfs = true;
}

static void test_check_sees_each_disagreement(void **state)
{
        struct fake_daemon *fd = *state;
        char id[32];
        fake_test_create_running(fd, NULL, id);
        fake_test_assert_consistent(fd);

        change_host(fd, id, die);
        assert_flags(fd, "is running but");
        change_host(fd, id, launch);
        change_host(fd, id, freeze);
        assert_flags(fd, "the host has it frozen");
        struct fake_resources res;
        fake_driver_get(fd->driver, id, &res);
        res.paused = false;
        fake_driver_put(fd->driver, id, &res);
        change_host(fd, id, reboot);
        assert_flags(fd, "with handle");
        fake_driver_put(fd->driver, id, &res); /* back to the init its row names */
        fake_test_assert_consistent(fd);

        fake_test_act(fd, id, SANDBOX_ACTION_STOP, SANDBOX_STOPPED);
        change_host(fd, id, launch);
        assert_flags(fd, "is stopped but");
        change_host(fd, id, die);
        fake_driver_get(fd->driver, id, &res);
        res.run_state = false;
        fake_driver_put(fd->driver, id, &res);
        fake_test_assert_consistent(fd);

        fake_test_act(fd, id, SANDBOX_ACTION_DESTROY, SANDBOX_DESTROYED);
        change_host(fd, id, keep_rootfs);
        assert_flags(fd, "is destroyed but holds");
        struct fake_resources nothing = { 0 };
        fake_driver_put(fd->driver, id, &nothing);
        fake_test_assert_consistent(fd);

        struct fake_resources orphan = { .rootfs = true };
        fake_driver_put(fd->driver, "sb-00000000000000dd", &orphan);
        assert_flags(fd, "which no live row owns");
        fake_driver_put(fd->driver, "sb-00000000000000dd", &nothing);
        fake_test_assert_consistent(fd);
}

static void test_check_sees_unfinished_work(void **state)
{
        struct fake_daemon *fd = *state;
        char id[32];
        fake_test_create_running(fd, NULL, id);
        operation_queue_free(fd->ctx.queue);
        assert_int_equal(operation_queue_new(&fd->ctx, 0, &fd->ctx.queue), 0);
        struct snapshot snap;
        struct operation op;
        struct space_error err = { 0 };
        assert_int_equal(sandbox_history_snapshot(&fd->ctx, id, NULL, false, false, &snap, &op, &err), 0);
        assert_flags(fd, "is left pending");
        fake_daemon_restart(fd); /* fd->workers is 2: it runs now */
        assert_int_equal(fake_daemon_drain(fd), 0);
        fake_test_assert_consistent(fd);

        /* A stuck transient state, and a snapshot row that no one will finish. */
        assert_int_equal(STORE(&fd->ctx, sandbox_transition, id, ~0u, SANDBOX_STOPPING, "", NULL, NULL), 0);
        assert_flags(fd, "is left stopping");
        assert_int_equal(STORE(&fd->ctx, sandbox_transition, id, ~0u, SANDBOX_RUNNING, "", NULL, NULL), 0);
        fake_test_assert_consistent(fd);
        snprintf(snap.id, sizeof(snap.id), "snap-stuck");
        snprintf(snap.state, sizeof(snap.state), "creating");
        assert_int_equal(STORE(&fd->ctx, insert_batch, NULL, 0, &snap, 1, NULL), 0);
        assert_flags(fd, "is left creating");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_check_sees_each_disagreement, fake_test_setup, fake_test_teardown),
                cmocka_unit_test_setup_teardown(test_check_sees_unfinished_work, fake_test_setup, fake_test_teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
