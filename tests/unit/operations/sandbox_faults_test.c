/* Fault injection over every operation kind: for N = 1, 2, … the Nth state-store write or
 * driver call of the operation (its submission included) fails, once (a transient error)
 * or as a crash (nothing after it happens; then a restart). Afterwards the controller
 * (a tick that finds stuck states overdue) and a restart (reconciler_startup, the queue
 * resuming what was unfinished) must leave the rows and the fake host in agreement, every
 * operation ended, and nothing leaked: destroying every sandbox then empties the host.
 * An operation that reports success must have done what it says, repair or not. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "controller/reconciler.h"
#include "fake_test.h"
#include "operations/operation_queue.h"
#include "operations/sandbox_history.h"
#include "operations/sandbox_lifecycle.h"

#define STEPS_MAX 200
#define OVERDUE_MS (61 * 1000) /* past the controller's deadline for transient states */

struct world {
        char id[32];   /* the sandbox the operation acts on */
        char snap[32]; /* a ready snapshot of it, where the scenario made one */
};

struct scenario {
        const char *name;
        /* Brings a fresh daemon to the operation's starting point (no faults armed). */
        void (*prepare)(struct fake_daemon *fd, struct world *w);
        /* Submits the operation; 0 with op, or -1 with err. */
        int (*submit)(struct fake_daemon *fd, struct world *w, struct operation *op, struct space_error *err);
        enum sandbox_state success; /* the sandbox's state when the operation succeeded */
};

static void must(int r, const char *what, const struct space_error *err)
{
        if (r < 0)
                fail_msg("%s: %s", what, err ? err->message : strerror(-r));
}

static void lifecycle(struct fake_daemon *fd, const char *id, enum sandbox_action a)
{
        struct operation op;
        struct space_error err = { 0 };
        must(sandbox_lifecycle_submit(&fd->ctx, id, a, &op, &err), "submit", &err);
        fake_test_run_ok(fd, &op);
}

static void prepare_none(struct fake_daemon *fd, struct world *w)
{
}

static void prepare_running(struct fake_daemon *fd, struct world *w)
{
        fake_test_create_running(fd, "stop", w->id);
}

static void prepare_stopped(struct fake_daemon *fd, struct world *w)
{
        prepare_running(fd, w);
        lifecycle(fd, w->id, SANDBOX_ACTION_STOP);
}

static void prepare_paused(struct fake_daemon *fd, struct world *w)
{
        prepare_running(fd, w);
        lifecycle(fd, w->id, SANDBOX_ACTION_PAUSE);
}

static void prepare_snapshotted(struct fake_daemon *fd, struct world *w)
{
        struct snapshot snap;
        struct operation op;
        struct space_error err = { 0 };
        prepare_running(fd, w);
        must(sandbox_history_snapshot(&fd->ctx, w->id, "before", false, false, &snap, &op, &err), "snapshot", &err);
        fake_test_run_ok(fd, &op);
        snprintf(w->snap, sizeof(w->snap), "%s", snap.id);
}

static void prepare_snapshotted_stopped(struct fake_daemon *fd, struct world *w)
{
        prepare_snapshotted(fd, w);
        lifecycle(fd, w->id, SANDBOX_ACTION_STOP);
}

static int submit_create(struct fake_daemon *fd, struct world *w, struct operation *op, struct space_error *err)
{
        return fake_daemon_create(fd, 3600, "stop", w->id, op, err);
}

#define SUBMIT_ACTION(fn, action)                                                                             \
        static int fn(struct fake_daemon *fd, struct world *w, struct operation *op, struct space_error *err) \
        {                                                                                                     \
                return sandbox_lifecycle_submit(&fd->ctx, w->id, action, op, err);                            \
        }
SUBMIT_ACTION(submit_start, SANDBOX_ACTION_START)
SUBMIT_ACTION(submit_stop, SANDBOX_ACTION_STOP)
SUBMIT_ACTION(submit_pause, SANDBOX_ACTION_PAUSE)
SUBMIT_ACTION(submit_resume, SANDBOX_ACTION_RESUME)
SUBMIT_ACTION(submit_destroy, SANDBOX_ACTION_DESTROY)

static int submit_snapshot(struct fake_daemon *fd, struct world *w, struct operation *op, struct space_error *err)
{
        struct snapshot snap;
        return sandbox_history_snapshot(&fd->ctx, w->id, "under test", false, false, &snap, op, err);
}

static int submit_restore(struct fake_daemon *fd, struct world *w, struct operation *op, struct space_error *err)
{
        return sandbox_history_restore(&fd->ctx, w->id, w->snap, op, err);
}

static int fork_from(struct fake_daemon *fd, struct world *w, const char *snap, struct operation *op, struct space_error *err)
{
        char(*kids)[32] = NULL;
        int r = sandbox_history_fork(&fd->ctx, w->id, snap, 2, false, NULL, &kids, op, err);
        free(kids);
        return r;
}

static int submit_fork(struct fake_daemon *fd, struct world *w, struct operation *op, struct space_error *err)
{
        return fork_from(fd, w, NULL, op, err); /* takes its own snapshot */
}

static int submit_fork_from_snapshot(struct fake_daemon *fd, struct world *w, struct operation *op, struct space_error *err)
{
        return fork_from(fd, w, w->snap, op, err);
}

static const struct scenario scenarios[] = {
        { "create", prepare_none, submit_create, SANDBOX_RUNNING },
        { "start", prepare_stopped, submit_start, SANDBOX_RUNNING },
        { "stop", prepare_running, submit_stop, SANDBOX_STOPPED },
        { "stop-paused", prepare_paused, submit_stop, SANDBOX_STOPPED },
        { "pause", prepare_running, submit_pause, SANDBOX_PAUSED },
        { "resume", prepare_paused, submit_resume, SANDBOX_RUNNING },
        { "destroy", prepare_running, submit_destroy, SANDBOX_DESTROYED },
        { "destroy-stopped", prepare_stopped, submit_destroy, SANDBOX_DESTROYED },
        { "snapshot", prepare_running, submit_snapshot, SANDBOX_RUNNING },
        { "snapshot-paused", prepare_paused, submit_snapshot, SANDBOX_PAUSED },
        { "restore-running", prepare_snapshotted, submit_restore, SANDBOX_RUNNING },
        { "restore-stopped", prepare_snapshotted_stopped, submit_restore, SANDBOX_STOPPED },
        { "fork", prepare_running, submit_fork, SANDBOX_RUNNING },
        { "fork-from-snapshot", prepare_snapshotted, submit_fork_from_snapshot, SANDBOX_RUNNING },
};

static void assert_consistent(struct fake_daemon *fd, const char *scenario, const char *mode, long n, const char *when)
{
        char why[512];
        if (fake_daemon_check(fd, why, sizeof(why)) < 0)
                fail_msg("%s, %s at step %ld (%s), %s: %s", scenario, mode, n, fd->faults.fired_at, when, why);
}

/* Every sandbox left is destroyed; then the host must hold nothing. */
static void destroy_all(struct fake_daemon *fd, const char *scenario, const char *mode, long n)
{
        struct sandbox *all = NULL;
        size_t count = 0;
        must(STORE(&fd->ctx, sandbox_list, -1, NULL, NULL, &all, &count), "list", NULL);
        for (size_t i = 0; i < count; i++) {
                struct operation op;
                struct space_error err = { 0 };
                if (sandbox_lifecycle_submit(&fd->ctx, all[i].id, SANDBOX_ACTION_DESTROY, &op, &err) < 0)
                        fail_msg("%s, %s at step %ld: destroy of %s (%s) refused: %s", scenario, mode, n, all[i].id,
                                 sandbox_state_name(all[i].state), err.message);
                struct operation done;
                must(fake_daemon_wait(fd, op.id, &done), "wait for destroy", NULL);
                if (done.state != OPERATION_SUCCEEDED)
                        fail_msg("%s, %s at step %ld: destroy of %s failed: %s", scenario, mode, n, all[i].id,
                                 done.error_message);
        }
        sandbox_array_free(all, count);
        assert_consistent(fd, scenario, mode, n, "after destroying everything");
        char **ids = NULL;
        size_t left = fake_driver_ids(fd->driver, &ids);
        for (size_t i = 0; i < left; i++)
                free(ids[i]);
        free(ids);
        if (left)
                fail_msg("%s, %s at step %ld: the host still holds %zu sandboxes' resources", scenario, mode, n, left);
}

/* What a succeeded operation promised holds (before any repair). */
static void assert_done(struct fake_daemon *fd, const struct scenario *sc, const struct world *w, const struct operation *op,
                        const char *mode, long n)
{
        struct sandbox sb;
        must(fake_daemon_sandbox(fd, op->target, &sb), "read target", NULL);
        if (sb.state != sc->success)
                fail_msg("%s, %s at step %ld (%s): the operation succeeded but the sandbox is %s", sc->name, mode, n,
                         fd->faults.fired_at, sandbox_state_name(sb.state));
        sandbox_release(&sb);
        assert_consistent(fd, sc->name, mode, n, "right after it succeeded");
}

/* One run with the fault at step n (of every write and driver call, or of the calls of
 * `only`); false when the operation has fewer steps than n. */
static bool run_with_fault(const struct scenario *sc, enum fault_mode mode, const char *only, long n)
{
        char mname[64];
        snprintf(mname, sizeof(mname), "%s%s%s", mode == FAULT_ONCE ? "fail-once" : "crash", only ? " of " : "",
                 only ? only : "");
        struct fake_daemon *fd = calloc(1, sizeof(*fd));
        struct world w = { 0 };
        assert_non_null(fd);
        must(fake_daemon_start(fd, 2), "start", NULL);
        sc->prepare(fd, &w);
        fault_plan_arm(&fd->faults, mode, n, only);
        struct operation op;
        struct space_error err = { 0 };
        bool accepted = sc->submit(fd, &w, &op, &err) == 0;
        if (!accepted && !fault_plan_fired(&fd->faults))
                fail_msg("%s: refused without a fault: %s", sc->name, err.message);
        bool fired;
        if (mode == FAULT_ONCE) {
                struct operation done = { 0 };
                if (accepted && fake_daemon_wait(fd, op.id, &done) < 0)
                        fail_msg("%s, %s at step %ld (%s): the operation never ended", sc->name, mname, n, fd->faults.fired_at);
                fired = fault_plan_fired(&fd->faults);
                fault_plan_disarm(&fd->faults);
                if (accepted && done.state == OPERATION_SUCCEEDED)
                        assert_done(fd, sc, &w, &done, mname, n);
                /* Before any repair: only what the controller finishes may disagree. */
                char why[512];
                if (fake_daemon_check_settled(fd, why, sizeof(why)) < 0)
                        fail_msg("%s, %s at step %ld (%s), as the operation left it: %s", sc->name, mname, n, fd->faults.fired_at,
                                 why);
                /* The controller finds what was left half way (as if a minute had passed). */
                fault_store_set_age(fd->ctx.store.st, OVERDUE_MS);
                reconciler_tick(&fd->ctx, true);
                must(fake_daemon_drain(fd), "drain", NULL);
                fault_store_set_age(fd->ctx.store.st, 0);
                assert_consistent(fd, sc->name, mname, n, "after the controller's tick");
        } else {
                fired = fake_daemon_halt(fd, accepted ? op.id : NULL);
        }
        must(fake_daemon_restart(fd), "restart", NULL);
        must(fake_daemon_drain(fd), "drain", NULL);
        assert_consistent(fd, sc->name, mname, n, "after a restart");
        if (!fired) { /* n is past its last step: it ran clean, and did what it says */
                struct operation done;
                assert_true(accepted);
                must(fake_daemon_wait(fd, op.id, &done), "wait", NULL);
                assert_int_equal(done.state, OPERATION_SUCCEEDED);
                assert_done(fd, sc, &w, &done, mname, n);
        }
        destroy_all(fd, sc->name, mname, n);
        fake_daemon_stop(fd);
        free(fd);
        return fired;
}

static void run_scenario(const struct scenario *sc, enum fault_mode mode, const char *only)
{
        long n = 1;
        while (run_with_fault(sc, mode, only, n))
                if (++n > STEPS_MAX)
                        fail_msg("%s: more than %d steps", sc->name, STEPS_MAX);
        /* Every operation writes and calls the driver: a plan that never fired found nothing. */
        if (!only && n < 3)
                fail_msg("%s: only %ld steps", sc->name, n - 1);
        print_message("%s (%s%s%s): %ld steps\n", sc->name, mode == FAULT_ONCE ? "fail-once" : "crash", only ? " of " : "",
                      only ? only : "", n - 1);
}

static void test_fail_once(void **state)
{
        for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
                run_scenario(&scenarios[i], FAULT_ONCE, NULL);
}

static void test_crash(void **state)
{
        for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
                run_scenario(&scenarios[i], FAULT_CRASH, NULL);
}

/* The reads the operations make, each failing in turn (once): a handler that cannot read
 * its sandbox, snapshot or operation must still end, and leave nothing the controller
 * cannot repair. */
static void test_read_fails_once(void **state)
{
        static const char *const reads[] = { "sandbox_get", "snapshot_get", "operation_get" };
        for (size_t r = 0; r < sizeof(reads) / sizeof(reads[0]); r++)
                for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
                        run_scenario(&scenarios[i], FAULT_ONCE, reads[r]);
}

/* A crash at step N of the operation, then another at step M of the start that recovers
 * from it (the reconciler's steps and the operations it resumes): the start after that must
 * still converge. Some kinds only: it is N x M runs. */
static void test_crash_during_recovery(void **state)
{
        static const char *const kinds[] = { "create", "destroy", "restore-running", "fork-from-snapshot" };
        for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
                const struct scenario *sc = NULL;
                for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
                        if (strcmp(scenarios[i].name, kinds[k]) == 0)
                                sc = &scenarios[i];
                assert_non_null(sc);
                long runs = 0;
                for (long n = 1;; n++) {
                        bool op_fired = true;
                        for (long m = 1; op_fired; m++, runs++) {
                                struct fake_daemon *fd = calloc(1, sizeof(*fd));
                                struct world w = { 0 };
                                struct operation op;
                                struct space_error err = { 0 };
                                assert_non_null(fd);
                                must(fake_daemon_start(fd, 2), "start", NULL);
                                sc->prepare(fd, &w);
                                fault_plan_arm(&fd->faults, FAULT_CRASH, n, NULL);
                                bool accepted = sc->submit(fd, &w, &op, &err) == 0;
                                op_fired = fake_daemon_halt(fd, accepted ? op.id : NULL);
                                if (!op_fired) { /* n is past the operation's last step */
                                        fake_daemon_stop(fd);
                                        free(fd);
                                        break;
                                }
                                fake_daemon_restart_faulty(fd, FAULT_CRASH, m, NULL);
                                bool recovery_fired = fake_daemon_halt(fd, NULL);
                                char fired_at[64];
                                snprintf(fired_at, sizeof(fired_at), "%s", fd->faults.fired_at);
                                must(fake_daemon_restart(fd), "restart", NULL);
                                must(fake_daemon_drain(fd), "drain", NULL);
                                char why[512];
                                if (fake_daemon_check(fd, why, sizeof(why)) < 0)
                                        fail_msg("%s: crash at step %ld, then at step %ld of the recovery (%s): %s", sc->name, n,
                                                 m, fired_at, why);
                                destroy_all(fd, sc->name, "crash twice", n);
                                fake_daemon_stop(fd);
                                free(fd);
                                if (!recovery_fired)
                                        break; /* m is past the recovery's last step */
                        }
                        if (!op_fired)
                                break;
                }
                print_message("%s (crash, then crash in recovery): %ld runs\n", sc->name, runs);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_fail_once),
                cmocka_unit_test(test_crash),
                cmocka_unit_test(test_read_fails_once),
                cmocka_unit_test(test_crash_during_recovery),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
