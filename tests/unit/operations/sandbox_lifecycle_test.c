/* Unit tests of the sandbox state machine (sandbox_lifecycle.c, sandbox_history.c) on a
 * fake driver: every action from every state is accepted or refused as documented, and
 * what runs leaves the rows and the fake host in agreement. */
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
#include "operations/sandbox_lifecycle.h"

#define M(s) (1u << (s))

static void act(struct fake_daemon *fd, const char *id, enum sandbox_action a, enum sandbox_state want)
{
        fake_test_act(fd, id, a, want);
        fake_test_assert_consistent(fd);
}

static void create_running(struct fake_daemon *fd, char *id)
{
        fake_test_create_running(fd, NULL, id);
        fake_test_assert_consistent(fd);
}

/* create, pause, resume, stop, start, destroy: each lands where it says, on the host too. */
static void test_lifecycle_round_trip(void **state)
{
        struct fake_daemon *fd = *state;
        char id[32];
        struct fake_resources res;
        create_running(fd, id);
        assert_true(fake_driver_get(fd->driver, id, &res));
        assert_true(res.rootfs && res.running && !res.paused);
        assert_non_null(strstr(res.source, "/templates/" FAKE_TEMPLATE));
        act(fd, id, SANDBOX_ACTION_PAUSE, SANDBOX_PAUSED);
        fake_driver_get(fd->driver, id, &res);
        assert_true(res.paused);
        act(fd, id, SANDBOX_ACTION_RESUME, SANDBOX_RUNNING);
        act(fd, id, SANDBOX_ACTION_STOP, SANDBOX_STOPPED);
        fake_driver_get(fd->driver, id, &res);
        assert_true(res.rootfs && !res.running);
        long boot = res.boot;
        act(fd, id, SANDBOX_ACTION_START, SANDBOX_RUNNING);
        fake_driver_get(fd->driver, id, &res);
        assert_true(res.boot > boot); /* a new init, and the row has its handle (checked) */
        act(fd, id, SANDBOX_ACTION_PAUSE, SANDBOX_PAUSED);
        act(fd, id, SANDBOX_ACTION_STOP, SANDBOX_STOPPED); /* a paused one stops */
        act(fd, id, SANDBOX_ACTION_DESTROY, SANDBOX_DESTROYED);
        assert_false(fake_driver_get(fd->driver, id, &res));
}

static void snapshot_of(struct fake_daemon *fd, const char *id, char *ret_snap)
{
        struct snapshot snap;
        struct operation op;
        struct space_error err = { 0 };
        if (sandbox_history_snapshot(&fd->ctx, id, "l", false, false, &snap, &op, &err) < 0)
                fail_msg("snapshot refused: %s", err.message);
        fake_test_run_ok(fd, &op);
        snprintf(ret_snap, 32, "%s", snap.id);
        struct sandbox sb;
        assert_int_equal(fake_daemon_sandbox(fd, id, &sb), 0);
        assert_string_equal(sb.head_snapshot_id, snap.id);
        sandbox_release(&sb);
        fake_test_assert_consistent(fd);
}

static void restore_to(struct fake_daemon *fd, const char *id, const char *snap, enum sandbox_state want)
{
        struct operation op;
        struct space_error err = { 0 };
        if (sandbox_history_restore(&fd->ctx, id, snap, &op, &err) < 0)
                fail_msg("restore refused: %s", err.message);
        fake_test_run_ok(fd, &op);
        assert_int_equal(fake_test_state(fd, id), want);
        struct fake_resources res;
        fake_driver_get(fd->driver, id, &res);
        assert_non_null(strstr(res.source, snap)); /* the rootfs is now a copy of the snapshot */
        fake_test_assert_consistent(fd);
}

/* snapshot (running, paused, stopped), restore (a running one runs again, a stopped one
 * stays stopped), fork (children run on copies of the snapshot). */
static void test_history(void **state)
{
        struct fake_daemon *fd = *state;
        char id[32], s1[32], s2[32], s3[32];
        create_running(fd, id);
        snapshot_of(fd, id, s1);
        act(fd, id, SANDBOX_ACTION_PAUSE, SANDBOX_PAUSED);
        snapshot_of(fd, id, s2);
        struct snapshot snap;
        assert_int_equal(STORE(&fd->ctx, snapshot_get, s2, &snap), 0);
        assert_string_equal(snap.parent_snapshot_id, s1); /* lineage: the head before it */
        restore_to(fd, id, s1, SANDBOX_RUNNING);          /* was paused: runs again */
        act(fd, id, SANDBOX_ACTION_STOP, SANDBOX_STOPPED);
        snapshot_of(fd, id, s3);
        restore_to(fd, id, s2, SANDBOX_STOPPED);

        char(*kids)[32] = NULL;
        struct operation op;
        struct space_error err = { 0 };
        assert_int_equal(sandbox_history_fork(&fd->ctx, id, s3, 2, false, NULL, &kids, &op, &err), 0);
        fake_test_run_ok(fd, &op);
        for (int i = 0; i < 2; i++) {
                struct fake_resources res;
                assert_int_equal(fake_test_state(fd, kids[i]), SANDBOX_RUNNING);
                fake_driver_get(fd->driver, kids[i], &res);
                assert_non_null(strstr(res.source, s3));
        }
        free(kids);
        /* A fork that takes its own snapshot of the (stopped) parent. */
        assert_int_equal(sandbox_history_fork(&fd->ctx, id, NULL, 1, false, NULL, &kids, &op, &err), 0);
        fake_test_run_ok(fd, &op);
        assert_int_equal(fake_test_state(fd, kids[0]), SANDBOX_RUNNING);
        free(kids);
        fake_test_assert_consistent(fd);
}

/* ---- every action from every state, accepted or refused ---- */

enum probe_action { P_STOP, P_START, P_PAUSE, P_RESUME, P_DESTROY, P_SNAPSHOT, P_RESTORE, P_FORK, P_MAX };
static const char *const probe_names[] = { "stop", "start", "pause", "resume", "destroy", "snapshot", "restore", "fork" };

#define SNAPSHOTTABLE (M(SANDBOX_RUNNING) | M(SANDBOX_PAUSED) | M(SANDBOX_STOPPED))
/* The documented table: where each action may start. */
static const unsigned allowed_from[P_MAX] = {
        [P_STOP] = M(SANDBOX_RUNNING) | M(SANDBOX_PAUSED),
        [P_START] = M(SANDBOX_STOPPED),
        [P_PAUSE] = M(SANDBOX_RUNNING),
        [P_RESUME] = M(SANDBOX_PAUSED),
        [P_DESTROY] = ~(M(SANDBOX_DESTROYING) | M(SANDBOX_DESTROYED)) & ((1u << _SANDBOX_STATE_MAX) - 1),
        [P_SNAPSHOT] = SNAPSHOTTABLE,
        [P_RESTORE] = SNAPSHOTTABLE,
        [P_FORK] = SNAPSHOTTABLE,
};

/* A row in state s with a ready snapshot of it (written directly: no handler runs here). */
static void plant(struct fake_daemon *fd, const char *id, enum sandbox_state s, const char *snap_id)
{
        struct sandbox sb = { 0 };
        snprintf(sb.id, sizeof(sb.id), "%s", id);
        snprintf(sb.project_id, sizeof(sb.project_id), PROJECT_DEFAULT);
        snprintf(sb.template_name, sizeof(sb.template_name), FAKE_TEMPLATE);
        snprintf(sb.runtime, sizeof(sb.runtime), FAKE_DRIVER_NAME);
        snprintf(sb.on_timeout, sizeof(sb.on_timeout), "stop");
        sb.state = s;
        sb.environment = json_pack("{s:s}", "driver", FAKE_DRIVER_NAME);
        sb.env = json_object();
        sb.metadata = json_object();
        sb.created_at_ms = sb.updated_at_ms = 1;
        struct snapshot snap = { 0 };
        snprintf(snap.id, sizeof(snap.id), "%s", snap_id);
        snprintf(snap.sandbox_id, sizeof(snap.sandbox_id), "%s", id);
        snprintf(snap.state, sizeof(snap.state), "ready");
        snprintf(snap.kind, sizeof(snap.kind), "filesystem");
        snap.bytes_exclusive = -1;
        assert_int_equal(STORE(&fd->ctx, insert_batch, &sb, 1, &snap, 1, NULL), 0);
        sandbox_release(&sb);
}

static int submit(struct fake_daemon *fd, enum probe_action a, const char *id, const char *snap, struct operation *op,
                  struct space_error *err)
{
        static const enum sandbox_action lifecycle[] = { [P_STOP] = SANDBOX_ACTION_STOP,
                                                         [P_START] = SANDBOX_ACTION_START,
                                                         [P_PAUSE] = SANDBOX_ACTION_PAUSE,
                                                         [P_RESUME] = SANDBOX_ACTION_RESUME,
                                                         [P_DESTROY] = SANDBOX_ACTION_DESTROY };
        struct snapshot s;
        char(*kids)[32] = NULL;
        int r;
        switch (a) {
        case P_SNAPSHOT:
                return sandbox_history_snapshot(&fd->ctx, id, NULL, false, false, &s, op, err);
        case P_RESTORE:
                return sandbox_history_restore(&fd->ctx, id, snap, op, err);
        case P_FORK:
                r = sandbox_history_fork(&fd->ctx, id, NULL, 1, false, NULL, &kids, op, err);
                free(kids);
                return r;
        default:
                return sandbox_lifecycle_submit(&fd->ctx, id, lifecycle[a], op, err);
        }
}

static void test_transition_table(void **state)
{
        struct fake_daemon *fd = *state;
        /* No workers: what is accepted stays pending, so each row keeps the state it was given. */
        operation_queue_free(fd->ctx.queue);
        assert_int_equal(operation_queue_new(&fd->ctx, 0, &fd->ctx.queue), 0);
        for (int s = 0; s < _SANDBOX_STATE_MAX; s++)
                for (int a = 0; a < P_MAX; a++) {
                        char id[32], snap[32];
                        snprintf(id, sizeof(id), "sb-t%02d%02d", s, a);
                        snprintf(snap, sizeof(snap), "snap-t%02d%02d", s, a);
                        plant(fd, id, (enum sandbox_state)s, snap);
                        struct operation op;
                        struct space_error err = { 0 };
                        int r = submit(fd, (enum probe_action)a, id, snap, &op, &err);
                        bool ok = allowed_from[a] & M(s);
                        if (ok != (r == 0))
                                fail_msg("%s from %s: %s (%s)", probe_names[a], sandbox_state_name((enum sandbox_state)s),
                                         r == 0 ? "accepted" : "refused", err.message);
                        struct operation *ops = NULL;
                        size_t n = 0;
                        assert_int_equal(STORE(&fd->ctx, operation_list, id, -1, false, NULL, NULL, &ops, &n), 0);
                        free(ops);
                        if (!ok) {
                                /* A destroyed sandbox is not found; the others are in the wrong state. */
                                assert_int_equal(err.code,
                                                 s == SANDBOX_DESTROYED && a >= P_SNAPSHOT ? SPACE_E_NOT_FOUND
                                                                                           : SPACE_E_INVALID_STATE);
                                assert_int_equal(n, 0);                       /* nothing stored */
                                assert_int_equal(fake_test_state(fd, id), s); /* nothing moved */
                                continue;
                        }
                        assert_int_equal(n, 1);
                        assert_int_equal(op.state, OPERATION_PENDING);
                        enum sandbox_state shown = fake_test_state(fd, id);
                        enum sandbox_state want = (enum sandbox_state)s;
                        if (a == P_STOP)
                                want = SANDBOX_STOPPING;
                        else if (a == P_START)
                                want = SANDBOX_STARTING;
                        else if (a == P_DESTROY)
                                want = SANDBOX_DESTROYING;
                        else if (a == P_RESTORE)
                                want = SANDBOX_RESTORING;
                        assert_int_equal(shown, want);
                }
}

/* Two submits racing for one state change: exactly one wins. */
static void test_submit_is_compare_and_set(void **state)
{
        struct fake_daemon *fd = *state;
        char id[32];
        create_running(fd, id);
        operation_queue_free(fd->ctx.queue);
        assert_int_equal(operation_queue_new(&fd->ctx, 0, &fd->ctx.queue), 0);
        struct operation a, b;
        struct space_error err = { 0 };
        assert_int_equal(sandbox_lifecycle_submit(&fd->ctx, id, SANDBOX_ACTION_STOP, &a, &err), 0);
        assert_int_equal(sandbox_lifecycle_submit(&fd->ctx, id, SANDBOX_ACTION_PAUSE, &b, &err), -1);
        assert_int_equal(err.code, SPACE_E_INVALID_STATE);
        assert_int_equal(sandbox_lifecycle_submit(&fd->ctx, "sb-nope", SANDBOX_ACTION_STOP, &b, &err), -1);
        assert_int_equal(err.code, SPACE_E_NOT_FOUND);
}

/* ---- a single failure where it hurts ---- */

static struct operation failed_run(struct fake_daemon *fd, const struct operation *op)
{
        struct operation done;
        assert_int_equal(fake_daemon_wait(fd, op->id, &done), 0);
        assert_int_equal(done.state, OPERATION_FAILED);
        assert_true(done.error_message[0] != '\0');
        return done;
}

/* The pause (resume) is done on the host but its end cannot be stored: the sandbox goes back
 * to what its row says, or it would stay frozen while shown running, and no check would ever
 * notice (it is alive). */
static void test_freeze_undone_when_settle_fails(void **state)
{
        struct fake_daemon *fd = *state;
        char id[32];
        struct operation op;
        struct space_error err = { 0 };
        struct fake_resources res;
        create_running(fd, id);
        fault_plan_arm(&fd->faults, FAULT_ONCE, 1, "sandbox_settle");
        assert_int_equal(sandbox_lifecycle_submit(&fd->ctx, id, SANDBOX_ACTION_PAUSE, &op, &err), 0);
        failed_run(fd, &op);
        assert_int_equal(fake_test_state(fd, id), SANDBOX_RUNNING);
        fake_driver_get(fd->driver, id, &res);
        assert_false(res.paused);
        fake_test_assert_consistent(fd);

        act(fd, id, SANDBOX_ACTION_PAUSE, SANDBOX_PAUSED);
        fault_plan_arm(&fd->faults, FAULT_ONCE, 1, "sandbox_settle");
        assert_int_equal(sandbox_lifecycle_submit(&fd->ctx, id, SANDBOX_ACTION_RESUME, &op, &err), 0);
        failed_run(fd, &op);
        assert_int_equal(fake_test_state(fd, id), SANDBOX_PAUSED);
        fake_driver_get(fd->driver, id, &res);
        assert_true(res.paused);
        fake_test_assert_consistent(fd);
}

/* A restore whose first step (stopping the sandbox) fails must not show the sandbox stopped
 * while it runs. */
static void test_restore_failure_shows_no_stopped_runner(void **state)
{
        struct fake_daemon *fd = *state;
        char id[32], snap[32];
        struct operation op;
        struct space_error err = { 0 };
        create_running(fd, id);
        snapshot_of(fd, id, snap);
        fault_plan_arm(&fd->faults, FAULT_ONCE, 1, "stop");
        assert_int_equal(sandbox_history_restore(&fd->ctx, id, snap, &op, &err), 0);
        failed_run(fd, &op);
        assert_int_equal(fake_test_state(fd, id), SANDBOX_STOPPED);
        fake_test_assert_consistent(fd); /* stopped on the host too */
}

/* A fork child that came up but whose move to running cannot be stored: the fork fails, the
 * child is failed and holds nothing (not left creating while the fork reports success). */
static void test_fork_child_settle_failure(void **state)
{
        struct fake_daemon *fd = *state;
        char id[32], snap[32];
        char(*kids)[32] = NULL;
        struct operation op;
        struct space_error err = { 0 };
        create_running(fd, id);
        snapshot_of(fd, id, snap);
        fault_plan_arm(&fd->faults, FAULT_ONCE, 1, "sandbox_settle");
        assert_int_equal(sandbox_history_fork(&fd->ctx, id, snap, 1, false, NULL, &kids, &op, &err), 0);
        failed_run(fd, &op);
        assert_int_equal(fake_test_state(fd, kids[0]), SANDBOX_FAILED);
        struct fake_resources res;
        assert_false(fake_driver_get(fd->driver, kids[0], &res));
        free(kids);
        fake_test_assert_consistent(fd);
}

/* A fork child destroyed while the fork launches it (its destroy removed the rootfs the
 * launch needs): the fork still succeeds, the child ends destroyed, the other one runs. */
static void test_fork_child_destroyed_while_launching(void **state)
{
        struct fake_daemon *fd = *state;
        char id[32], snap[32];
        char(*kids)[32] = NULL;
        struct operation op, gone;
        struct space_error err = { 0 };
        create_running(fd, id);
        snapshot_of(fd, id, snap);
        fake_driver_hold(fd->driver, "start");
        assert_int_equal(sandbox_history_fork(&fd->ctx, id, snap, 2, false, NULL, &kids, &op, &err), 0);
        assert_int_equal(fake_driver_await_held(fd->driver, 1, 5000), 1);
        assert_int_equal(sandbox_lifecycle_submit(&fd->ctx, kids[0], SANDBOX_ACTION_DESTROY, &gone, &err), 0);
        fake_test_run_ok(fd, &gone);
        fake_driver_hold(fd->driver, NULL);
        fake_test_run_ok(fd, &op);
        assert_int_equal(fake_test_state(fd, kids[0]), SANDBOX_DESTROYED);
        assert_int_equal(fake_test_state(fd, kids[1]), SANDBOX_RUNNING);
        free(kids);
        fake_test_assert_consistent(fd);
}

/* A snapshot (or a fork that takes one) whose handler cannot read the sandbox drops the
 * snapshot row it was to fill: none is left "creating" behind the failed operation. */
static void test_unread_sandbox_leaves_no_snapshot_creating(void **state)
{
        struct fake_daemon *fd = *state;
        char id[32];
        struct snapshot snap;
        char(*kids)[32] = NULL;
        struct operation op;
        struct space_error err = { 0 };
        create_running(fd, id);
        for (int fork = 0; fork < 2; fork++) {
                /* The submission reads the sandbox first; the handler's read is the second. */
                fault_plan_arm(&fd->faults, FAULT_ONCE, 2, "sandbox_get");
                if (fork)
                        assert_int_equal(sandbox_history_fork(&fd->ctx, id, NULL, 1, false, NULL, &kids, &op, &err), 0);
                else
                        assert_int_equal(sandbox_history_snapshot(&fd->ctx, id, NULL, false, false, &snap, &op, &err), 0);
                failed_run(fd, &op);
                assert_true(fault_plan_fired(&fd->faults));
                struct snapshot *all = NULL;
                size_t n = 0;
                assert_int_equal(STORE(&fd->ctx, snapshot_list, id, NULL, NULL, &all, &n), 0);
                free(all);
                assert_int_equal(n, 0);
        }
        assert_int_equal(fake_test_state(fd, kids[0]), SANDBOX_FAILED);
        free(kids);
        fake_test_assert_consistent(fd);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_lifecycle_round_trip, fake_test_setup, fake_test_teardown),
                cmocka_unit_test_setup_teardown(test_history, fake_test_setup, fake_test_teardown),
                cmocka_unit_test_setup_teardown(test_transition_table, fake_test_setup, fake_test_teardown),
                cmocka_unit_test_setup_teardown(test_submit_is_compare_and_set, fake_test_setup, fake_test_teardown),
                cmocka_unit_test_setup_teardown(test_freeze_undone_when_settle_fails, fake_test_setup, fake_test_teardown),
                cmocka_unit_test_setup_teardown(test_restore_failure_shows_no_stopped_runner, fake_test_setup,
                                                fake_test_teardown),
                cmocka_unit_test_setup_teardown(test_fork_child_settle_failure, fake_test_setup, fake_test_teardown),
                cmocka_unit_test_setup_teardown(test_fork_child_destroyed_while_launching, fake_test_setup, fake_test_teardown),
                cmocka_unit_test_setup_teardown(test_unread_sandbox_leaves_no_snapshot_creating, fake_test_setup,
                                                fake_test_teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
