/* Unit tests of operation_queue.c on the fakes: submit and wait, wait deadlines, one
 * operation at a time per target (and no waiting behind another target), stopping with work
 * queued, and unfinished operations run again after a restart. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "fake_test.h"
#include "operations/operation_queue.h"
#include "operations/sandbox_history.h"
#include "operations/sandbox_lifecycle.h"
#include "spaced/wallclock.h"

static int start_with(void **state, int workers)
{
        struct fake_daemon *fd = calloc(1, sizeof(*fd));
        if (!fd || fake_daemon_start(fd, workers) < 0)
                return -1;
        *state = fd;
        return 0;
}

static int setup(void **state)
{
        return start_with(state, 3);
}

static int setup_idle(void **state)
{
        return start_with(state, 0); /* nothing runs: what is submitted stays pending */
}

static int teardown(void **state)
{
        fake_daemon_stop(*state);
        free(*state);
        return 0;
}

static void create(struct fake_daemon *fd, char *id, struct operation *op)
{
        struct space_error err = { 0 };
        assert_int_equal(fake_daemon_create(fd, 0, NULL, id, op, &err), 0);
}

static struct operation inner_op(struct fake_daemon *fd, const char *id)
{
        struct state_handle in = fault_store_inner(fd->ctx.store.st);
        struct operation op;
        assert_int_equal(in.ops->operation_get(in.st, id, &op), 0);
        return op;
}

static void create_running(struct fake_daemon *fd, char *id)
{
        struct operation op, done;
        create(fd, id, &op);
        assert_int_equal(operation_queue_wait(fd->ctx.queue, op.id, 5000, &done), 0);
        assert_int_equal(done.state, OPERATION_SUCCEEDED);
}

static void test_submit_and_wait(void **state)
{
        struct fake_daemon *fd = *state;
        char id[32];
        struct operation op, done;
        create(fd, id, &op);
        assert_int_equal(op.state, OPERATION_PENDING);
        assert_int_equal(operation_queue_wait(fd->ctx.queue, op.id, 5000, &done), 0);
        assert_int_equal(done.state, OPERATION_SUCCEEDED);
        assert_true(done.started_at_ms >= done.created_at_ms);
        assert_true(done.finished_at_ms >= done.started_at_ms);
        assert_string_equal(done.target, id);
        /* Waiting on an ended one returns at once; an unknown id is not found. */
        assert_int_equal(operation_queue_wait(fd->ctx.queue, op.id, 0, &done), 0);
        assert_int_equal(operation_queue_wait(fd->ctx.queue, "op-nope", 100, &done), -ENOENT);
}

static void test_wait_deadline(void **state)
{
        struct fake_daemon *fd = *state;
        char id[32];
        struct operation op, got;
        create(fd, id, &op);
        int64_t t0 = monotonic_now_us();
        assert_int_equal(operation_queue_wait(fd->ctx.queue, op.id, 150, &got), -ETIMEDOUT);
        int64_t waited_ms = (monotonic_now_us() - t0) / 1000;
        assert_true(waited_ms >= 150);
        assert_true(waited_ms < 5000);
        assert_int_equal(got.state, OPERATION_PENDING); /* the latest row, still pending */
}

/* Three workers, two snapshots of A and one of B: A's second waits for its first although
 * a worker is free, B's does not wait for A's. Then they run in the order accepted. */
static void test_one_at_a_time_per_target(void **state)
{
        struct fake_daemon *fd = *state;
        char a[32], b[32];
        struct snapshot snap;
        struct operation a1, a2, b1, done;
        struct space_error err = { 0 };
        create_running(fd, a);
        create_running(fd, b);
        fake_driver_hold(fd->driver, "snapshot_rootfs");
        assert_int_equal(sandbox_history_snapshot(&fd->ctx, a, "1", false, false, &snap, &a1, &err), 0);
        assert_int_equal(sandbox_history_snapshot(&fd->ctx, a, "2", false, false, &snap, &a2, &err), 0);
        assert_int_equal(sandbox_history_snapshot(&fd->ctx, b, "1", false, false, &snap, &b1, &err), 0);
        assert_int_equal(fake_driver_await_held(fd->driver, 2, 5000), 2); /* a1 and b1 */
        assert_int_equal(fake_driver_await_held(fd->driver, 3, 200), 2);  /* a2 does not start */
        assert_int_equal(inner_op(fd, a2.id).state, OPERATION_PENDING);
        assert_int_equal(inner_op(fd, a1.id).state, OPERATION_RUNNING);
        assert_int_equal(inner_op(fd, b1.id).state, OPERATION_RUNNING);
        fake_driver_hold(fd->driver, NULL);
        const struct operation *all[] = { &a1, &a2, &b1 };
        for (int i = 0; i < 3; i++) {
                assert_int_equal(operation_queue_wait(fd->ctx.queue, all[i]->id, 5000, &done), 0);
                assert_int_equal(done.state, OPERATION_SUCCEEDED);
        }
        struct operation first = inner_op(fd, a1.id), second = inner_op(fd, a2.id);
        assert_true(second.started_at_ms >= first.finished_at_ms);
        fake_test_assert_consistent(fd);
}

/* Accepted while nothing ran (spaced stopped before it started): the next start runs it. */
static void test_pending_resumed_after_restart(void **state)
{
        struct fake_daemon *fd = *state;
        char id[32];
        struct operation op, done;
        create(fd, id, &op);
        assert_int_equal(fake_driver_calls(fd->driver, "start"), 0);
        fd->workers = 2;
        assert_int_equal(fake_daemon_restart(fd), 0);
        assert_int_equal(fake_daemon_wait(fd, op.id, &done), 0);
        assert_int_equal(done.state, OPERATION_SUCCEEDED);
        fake_test_assert_consistent(fd);
}

/* Killed in the middle of its handler (the launch and everything after it never happen):
 * the row says running; the next start does it again from the top. */
static void test_running_redone_after_crash(void **state)
{
        struct fake_daemon *fd = *state;
        char id[32];
        struct operation op, done;
        fault_plan_arm(&fd->faults, FAULT_CRASH, 1, "start");
        create(fd, id, &op);
        assert_true(fake_daemon_halt(fd, op.id));
        assert_int_equal(inner_op(fd, op.id).state, OPERATION_RUNNING);
        struct fake_resources res;
        assert_true(fake_driver_get(fd->driver, id, &res));
        assert_true(res.rootfs && !res.running); /* half done */
        assert_int_equal(fake_daemon_restart(fd), 0);
        assert_int_equal(fake_daemon_wait(fd, op.id, &done), 0);
        assert_int_equal(done.state, OPERATION_SUCCEEDED);
        fake_test_assert_consistent(fd);
}

static void *free_queue(void *arg)
{
        operation_queue_free(arg);
        return NULL;
}

/* Stopping lets the running handler finish and leaves what was queued pending in the store
 * for the next start, as it does one accepted while no worker ran. */
static void test_stop_with_work_queued(void **state)
{
        struct fake_daemon *fd = *state;
        char x[32], y[32], z[32];
        struct operation ox, oy, oz, done;
        fd->workers = 1;
        operation_queue_free(fd->ctx.queue);
        assert_int_equal(operation_queue_new(&fd->ctx, 1, &fd->ctx.queue), 0);
        fake_driver_hold(fd->driver, "start");
        create(fd, x, &ox);
        assert_int_equal(fake_driver_await_held(fd->driver, 1, 5000), 1);
        create(fd, y, &oy); /* queued behind x: the only worker is busy */
        pthread_t t;
        struct operation_queue *q = fd->ctx.queue;
        assert_int_equal(pthread_create(&t, NULL, free_queue, q), 0);
        struct timespec ts = { 0, 50 * 1000 * 1000 };
        nanosleep(&ts, NULL);
        fake_driver_hold(fd->driver, NULL);
        pthread_join(t, NULL);
        fd->ctx.queue = NULL;
        assert_int_equal(inner_op(fd, ox.id).state, OPERATION_SUCCEEDED);
        assert_int_equal(inner_op(fd, oy.id).state, OPERATION_PENDING);
        assert_int_equal(operation_queue_new(&fd->ctx, 0, &fd->ctx.queue), 0);
        create(fd, z, &oz);
        assert_int_equal(fake_daemon_restart(fd), 0);
        assert_int_equal(fake_daemon_wait(fd, oy.id, &done), 0);
        assert_int_equal(done.state, OPERATION_SUCCEEDED);
        assert_int_equal(fake_daemon_wait(fd, oz.id, &done), 0);
        assert_int_equal(done.state, OPERATION_SUCCEEDED);
}

/* A read of the operation's row that fails once, when it is queued or when a worker takes
 * it, must not leave an accepted operation unqueued until the next start. */
static void test_read_failure_does_not_strand(void **state)
{
        struct fake_daemon *fd = *state;
        for (long n = 1; n <= 2; n++) {
                char id[32];
                struct operation op, done;
                fault_plan_arm(&fd->faults, FAULT_ONCE, n, "operation_get");
                create(fd, id, &op);
                assert_int_equal(fake_daemon_wait(fd, op.id, &done), 0);
                assert_true(fault_plan_fired(&fd->faults));
                assert_int_equal(done.state, OPERATION_SUCCEEDED);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_submit_and_wait, setup, teardown),
                cmocka_unit_test_setup_teardown(test_wait_deadline, setup_idle, teardown),
                cmocka_unit_test_setup_teardown(test_one_at_a_time_per_target, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pending_resumed_after_restart, setup_idle, teardown),
                cmocka_unit_test_setup_teardown(test_running_redone_after_crash, setup, teardown),
                cmocka_unit_test_setup_teardown(test_stop_with_work_queued, setup, teardown),
                cmocka_unit_test_setup_teardown(test_read_failure_does_not_strand, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
