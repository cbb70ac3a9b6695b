/* Unit tests of the controller (reconciler.c) on the fakes: timeouts that expire, transient
 * states left with no operation to finish them, host resources no row owns, rows whose host
 * resources died or vanished, and failures of the reconciler's own steps. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "controller/idle_sweep.h"
#include "controller/reconciler.h"
#include "operations/idle_policy.h"
#include "fake_test.h"
#include "operations/operation_queue.h"
#include "operations/sandbox_lifecycle.h"
#include "spaced/wallclock.h"

#define M(s) (1u << (s))
#define OVERDUE_MS (61 * 1000)

static struct sandbox row(struct fake_daemon *fd, const char *id)
{
        struct sandbox sb;
        assert_int_equal(fake_daemon_sandbox(fd, id, &sb), 0);
        return sb;
}

/* ---- timeouts ---- */

static void test_timeouts_expire(void **state)
{
        struct fake_daemon *fd = *state;
        char stop[32], pause[32], destroy[32], later[32];
        fake_test_create_running(fd, "stop", stop);
        fake_test_create_running(fd, "pause", pause);
        fake_test_create_running(fd, "destroy", destroy);
        fake_test_create_running(fd, "stop", later);
        struct sandbox sb = row(fd, later);
        assert_true(sb.expires_at_ms > wallclock_now_ms() + 3000 * 1000); /* armed by the create */
        sandbox_release(&sb);
        int64_t past = wallclock_now_ms() - 1;
        assert_int_equal(STORE(&fd->ctx, sandbox_set_expiry, stop, past), 0);
        assert_int_equal(STORE(&fd->ctx, sandbox_set_expiry, pause, past), 0);
        assert_int_equal(STORE(&fd->ctx, sandbox_set_expiry, destroy, past), 0);
        reconciler_tick(&fd->ctx, false);
        assert_int_equal(fake_daemon_drain(fd), 0);
        assert_int_equal(fake_test_state(fd, stop), SANDBOX_STOPPED);
        assert_int_equal(fake_test_state(fd, pause), SANDBOX_PAUSED);
        assert_int_equal(fake_test_state(fd, destroy), SANDBOX_DESTROYED);
        assert_int_equal(fake_test_state(fd, later), SANDBOX_RUNNING);
        sb = row(fd, pause);
        assert_int_equal(sb.expires_at_ms, 0); /* fired once: disarmed */
        sandbox_release(&sb);
        fake_test_assert_consistent(fd);
        /* A second pass does nothing more. */
        reconciler_tick(&fd->ctx, false);
        assert_int_equal(fake_daemon_drain(fd), 0);
        assert_int_equal(fake_test_state(fd, pause), SANDBOX_PAUSED);
}

/* The timeout's action could not be stored: it is tried again at the next pass, not lost. */
static void test_timeout_survives_a_store_failure(void **state)
{
        struct fake_daemon *fd = *state;
        char id[32];
        fake_test_create_running(fd, "stop", id);
        assert_int_equal(STORE(&fd->ctx, sandbox_set_expiry, id, wallclock_now_ms() - 1), 0);
        fault_plan_arm(&fd->faults, FAULT_ONCE, 1, "sandbox_transition");
        reconciler_tick(&fd->ctx, false);
        assert_true(fault_plan_fired(&fd->faults));
        fault_plan_disarm(&fd->faults);
        assert_int_equal(fake_daemon_drain(fd), 0);
        assert_int_equal(fake_test_state(fd, id), SANDBOX_RUNNING);
        reconciler_tick(&fd->ctx, false);
        assert_int_equal(fake_daemon_drain(fd), 0);
        assert_int_equal(fake_test_state(fd, id), SANDBOX_STOPPED);
        fake_test_assert_consistent(fd);
}

/* ---- idle policies ---- */

static void set_idle(struct fake_daemon *fd, const char *id, json_t *policy)
{
        struct sandbox sb = row(fd, id);
        json_decref(sb.idle);
        sb.idle = policy;
        assert_int_equal(STORE(&fd->ctx, sandbox_set_settings, &sb, false), 0);
        sandbox_release(&sb);
}

/* Paused sandboxes idle for longer than their policy says: "stop" stops one on any runtime,
 * "hibernate" leaves one whose runtime has no memory state (the fake's) paused, none of its
 * own follows the server's --hibernate-idle (off here), 0 is off; running ones are not idle. */
static void test_idle_policies(void **state)
{
        struct fake_daemon *fd = *state;
        char stop[32], hibernate[32], none[32], off[32], running[32];
        fake_test_create_running(fd, "stop", stop);
        fake_test_create_running(fd, "stop", hibernate);
        fake_test_create_running(fd, "stop", none);
        fake_test_create_running(fd, "stop", off);
        fake_test_create_running(fd, "stop", running);
        const char *paused[] = { stop, hibernate, none, off };
        for (size_t i = 0; i < 4; i++)
                fake_test_act(fd, paused[i], SANDBOX_ACTION_PAUSE, SANDBOX_PAUSED);
        set_idle(fd, stop, idle_policy_new(60, IDLE_STOP));
        set_idle(fd, hibernate, idle_policy_new(60, IDLE_HIBERNATE));
        set_idle(fd, off, idle_policy_new(0, IDLE_STOP));
        set_idle(fd, running, idle_policy_new(60, IDLE_STOP));
        idle_sweep_tick(&fd->ctx); /* not idle long enough yet */
        assert_int_equal(fake_daemon_drain(fd), 0);
        assert_int_equal(fake_test_state(fd, stop), SANDBOX_PAUSED);
        fault_store_set_age(fd->ctx.store.st, OVERDUE_MS);
        idle_sweep_tick(&fd->ctx);
        fault_store_set_age(fd->ctx.store.st, 0);
        assert_int_equal(fake_daemon_drain(fd), 0);
        assert_int_equal(fake_test_state(fd, stop), SANDBOX_STOPPED);
        assert_int_equal(fake_test_state(fd, hibernate), SANDBOX_PAUSED);
        assert_int_equal(fake_test_state(fd, none), SANDBOX_PAUSED);
        assert_int_equal(fake_test_state(fd, off), SANDBOX_PAUSED);
        assert_int_equal(fake_test_state(fd, running), SANDBOX_RUNNING);
        fake_test_assert_consistent(fd);
        /* The server's default reaches the one with none of its own (hibernate: it stays). */
        fd->ctx.cfg.hibernate_idle_s = 30;
        fault_store_set_age(fd->ctx.store.st, OVERDUE_MS);
        idle_sweep_tick(&fd->ctx);
        fault_store_set_age(fd->ctx.store.st, 0);
        fd->ctx.cfg.hibernate_idle_s = 0;
        assert_int_equal(fake_daemon_drain(fd), 0);
        assert_int_equal(fake_test_state(fd, none), SANDBOX_PAUSED);
        fake_test_assert_consistent(fd);
}

/* ---- stuck transient states ---- */

static void test_stuck_states_settled(void **state)
{
        struct fake_daemon *fd = *state;
        static const struct {
                enum sandbox_state stuck, settled;
        } cases[] = {
                { SANDBOX_CREATING, SANDBOX_FAILED },      { SANDBOX_STARTING, SANDBOX_STOPPED },
                { SANDBOX_STOPPING, SANDBOX_STOPPED },     { SANDBOX_RESTORING, SANDBOX_STOPPED },
                { SANDBOX_DESTROYING, SANDBOX_DESTROYED },
        };
        char ids[5][32];
        for (size_t i = 0; i < 5; i++) {
                fake_test_create_running(fd, "stop", ids[i]);
                /* As a store failure half way would leave it: moved, no operation driving it. */
                assert_int_equal(STORE(&fd->ctx, sandbox_transition, ids[i], ~0u, cases[i].stuck, "", NULL, NULL), 0);
        }
        reconciler_tick(&fd->ctx, true); /* not overdue yet: an operation may still come */
        for (size_t i = 0; i < 5; i++)
                assert_int_equal(fake_test_state(fd, ids[i]), cases[i].stuck);
        fault_store_set_age(fd->ctx.store.st, OVERDUE_MS);
        reconciler_tick(&fd->ctx, true);
        fault_store_set_age(fd->ctx.store.st, 0);
        for (size_t i = 0; i < 5; i++)
                if (fake_test_state(fd, ids[i]) != cases[i].settled)
                        fail_msg("%s: %s, want %s", sandbox_state_name(cases[i].stuck),
                                 sandbox_state_name(fake_test_state(fd, ids[i])), sandbox_state_name(cases[i].settled));
        fake_test_assert_consistent(fd); /* a failed create holds nothing; the stopped ones do not run */
}

/* A transient state with its operation still to run is that operation's, however old. */
static void test_stuck_state_with_operation_left_alone(void **state)
{
        struct fake_daemon *fd = *state;
        char id[32];
        struct operation op;
        struct space_error err = { 0 };
        fake_test_create_running(fd, "stop", id);
        operation_queue_free(fd->ctx.queue);
        assert_int_equal(operation_queue_new(&fd->ctx, 0, &fd->ctx.queue), 0);
        assert_int_equal(sandbox_lifecycle_submit(&fd->ctx, id, SANDBOX_ACTION_STOP, &op, &err), 0);
        fault_store_set_age(fd->ctx.store.st, OVERDUE_MS);
        reconciler_tick(&fd->ctx, true);
        fault_store_set_age(fd->ctx.store.st, 0);
        assert_int_equal(fake_test_state(fd, id), SANDBOX_STOPPING);
        struct fake_resources res;
        fake_driver_get(fd->driver, id, &res);
        assert_true(res.running); /* untouched: the stop is the operation's to do */
}

/* A snapshot row left "creating" by an operation that ended without taking it is dropped
 * once overdue (not before, and not while an operation still refers to it). */
static void test_stuck_snapshot_dropped(void **state)
{
        struct fake_daemon *fd = *state;
        char id[32];
        fake_test_create_running(fd, "stop", id);
        struct snapshot left = { 0 }, owned = { 0 };
        snprintf(left.id, sizeof(left.id), "snap-left");
        snprintf(owned.id, sizeof(owned.id), "snap-owned");
        struct snapshot *both[] = { &left, &owned };
        for (int i = 0; i < 2; i++) {
                snprintf(both[i]->sandbox_id, sizeof(both[i]->sandbox_id), "%s", id);
                snprintf(both[i]->state, sizeof(both[i]->state), "creating");
                snprintf(both[i]->kind, sizeof(both[i]->kind), "filesystem");
                both[i]->bytes_exclusive = -1;
                both[i]->created_at_ms = wallclock_now_ms();
        }
        assert_int_equal(STORE(&fd->ctx, insert_batch, NULL, 0, &left, 1, NULL), 0);
        struct operation op;
        operation_init(&op, "sandbox.snapshot", id); /* stored, never queued: still to run */
        snprintf(op.snapshot_id, sizeof(op.snapshot_id), "%s", owned.id);
        struct space_error err = { 0 };
        assert_int_equal(operation_set_params(&op, json_pack("{s:s}", "snapshot_id", owned.id), &err), 0);
        assert_int_equal(STORE(&fd->ctx, insert_batch, NULL, 0, &owned, 1, &op), 0);
        struct snapshot got;
        reconciler_tick(&fd->ctx, true);
        assert_int_equal(STORE(&fd->ctx, snapshot_get, left.id, &got), 0); /* not overdue yet */
        fault_store_set_age(fd->ctx.store.st, OVERDUE_MS);
        reconciler_tick(&fd->ctx, true);
        fault_store_set_age(fd->ctx.store.st, 0);
        assert_int_equal(STORE(&fd->ctx, snapshot_get, left.id, &got), -ENOENT);
        assert_int_equal(STORE(&fd->ctx, snapshot_get, owned.id, &got), 0);
}

/* ---- orphans and vanished resources ---- */

static void test_orphans_removed_at_start(void **state)
{
        struct fake_daemon *fd = *state;
        char live[32], gone[32];
        struct fake_resources res, before;
        fake_test_create_running(fd, "stop", live);
        fake_test_create_running(fd, "stop", gone);
        fake_test_act(fd, gone, SANDBOX_ACTION_DESTROY, SANDBOX_DESTROYED);
        fake_driver_get(fd->driver, live, &before);
        struct fake_resources everything = { .rootfs = true, .running = true, .run_state = true, .boot = 999 };
        fake_driver_put(fd->driver, "sb-00000000000000aa", &everything); /* no row at all */
        fake_driver_put(fd->driver, gone, &everything);                  /* its row says destroyed */
        struct fake_resources rootfs_only = { .rootfs = true };
        fake_driver_put(fd->driver, "sb-00000000000000bb", &rootfs_only);
        char why[512];
        assert_int_equal(fake_daemon_check(fd, why, sizeof(why)), -1); /* the check sees them */
        assert_int_equal(fake_daemon_restart(fd), 0);
        assert_int_equal(fake_daemon_drain(fd), 0);
        assert_false(fake_driver_get(fd->driver, "sb-00000000000000aa", &res));
        assert_false(fake_driver_get(fd->driver, "sb-00000000000000bb", &res));
        assert_false(fake_driver_get(fd->driver, gone, &res));
        fake_driver_get(fd->driver, live, &res);
        assert_int_equal(res.boot, before.boot); /* reattached, not restarted */
        assert_int_equal(fake_test_state(fd, live), SANDBOX_RUNNING);
        fake_test_assert_consistent(fd);
}

/* An init that died while spaced watched: the controller's probe settles the row. */
static void test_dead_init_noticed(void **state)
{
        struct fake_daemon *fd = *state;
        char running[32], paused[32];
        struct fake_resources res;
        fake_test_create_running(fd, "stop", running);
        fake_test_create_running(fd, "stop", paused);
        fake_test_act(fd, paused, SANDBOX_ACTION_PAUSE, SANDBOX_PAUSED);
        const char *ids[] = { running, paused };
        for (int i = 0; i < 2; i++) {
                fake_driver_get(fd->driver, ids[i], &res);
                res.running = res.paused = false; /* the run state stays, as after a crash of init */
                fake_driver_put(fd->driver, ids[i], &res);
        }
        reconciler_tick(&fd->ctx, true);
        for (int i = 0; i < 2; i++) {
                struct sandbox sb = row(fd, ids[i]);
                assert_int_equal(sb.state, SANDBOX_STOPPED);
                assert_string_equal(sb.state_reason, "its init process exited");
                assert_string_equal(sb.runtime_state, "");
                sandbox_release(&sb);
        }
        fake_test_assert_consistent(fd); /* and its run state is gone */
}

/* Died while spaced was away, or replaced behind its back (the row's handle is not the
 * running init's): the start settles both as stopped; the live one is reattached. */
static void test_dead_while_away(void **state)
{
        struct fake_daemon *fd = *state;
        char dead[32], stale[32], live[32];
        struct fake_resources res;
        fake_test_create_running(fd, "stop", dead);
        fake_test_create_running(fd, "stop", stale);
        fake_test_create_running(fd, "stop", live);
        fake_driver_get(fd->driver, dead, &res);
        res.running = false;
        fake_driver_put(fd->driver, dead, &res);
        fake_driver_get(fd->driver, stale, &res);
        res.boot += 1000;
        fake_driver_put(fd->driver, stale, &res);
        assert_int_equal(fake_daemon_restart(fd), 0);
        assert_int_equal(fake_daemon_drain(fd), 0);
        struct sandbox sb = row(fd, dead);
        assert_int_equal(sb.state, SANDBOX_STOPPED);
        assert_string_equal(sb.state_reason, "its processes exited while spaced was not watching");
        sandbox_release(&sb);
        assert_int_equal(fake_test_state(fd, stale), SANDBOX_STOPPED);
        assert_int_equal(fake_test_state(fd, live), SANDBOX_RUNNING);
        fake_test_assert_consistent(fd);
}

/* A stopped sandbox whose rootfs vanished: a start fails with a reason, leaves nothing
 * running, and the sandbox can still be destroyed cleanly. */
static void test_rootfs_vanished(void **state)
{
        struct fake_daemon *fd = *state;
        char id[32];
        struct operation op, done;
        struct space_error err = { 0 };
        struct fake_resources nothing = { 0 }, res;
        fake_test_create_running(fd, "stop", id);
        fake_test_act(fd, id, SANDBOX_ACTION_STOP, SANDBOX_STOPPED);
        fake_driver_put(fd->driver, id, &nothing);
        assert_int_equal(sandbox_lifecycle_submit(&fd->ctx, id, SANDBOX_ACTION_START, &op, &err), 0);
        assert_int_equal(fake_daemon_wait(fd, op.id, &done), 0);
        assert_int_equal(done.state, OPERATION_FAILED);
        assert_true(done.error_message[0] != '\0');
        struct sandbox sb = row(fd, id);
        assert_int_equal(sb.state, SANDBOX_STOPPED);
        assert_non_null(strstr(sb.state_reason, "start failed"));
        sandbox_release(&sb);
        assert_false(fake_driver_get(fd->driver, id, &res));
        fake_test_act(fd, id, SANDBOX_ACTION_DESTROY, SANDBOX_DESTROYED);
        fake_test_assert_consistent(fd);
}

/* ---- the reconciler's own steps failing ---- */

/* A world that needs every kind of repair at start. */
static void make_mess(struct fake_daemon *fd)
{
        char dead[32], stuck[32], gone[32];
        struct fake_resources res, everything = { .rootfs = true, .running = true, .run_state = true, .boot = 777 };
        fake_test_create_running(fd, "stop", dead);
        fake_test_create_running(fd, "stop", stuck);
        fake_test_create_running(fd, "stop", gone);
        fake_test_act(fd, gone, SANDBOX_ACTION_DESTROY, SANDBOX_DESTROYED);
        fake_driver_get(fd->driver, dead, &res);
        res.running = false;
        fake_driver_put(fd->driver, dead, &res);
        assert_int_equal(STORE(&fd->ctx, sandbox_transition, stuck, ~0u, SANDBOX_DESTROYING, "", NULL, NULL), 0);
        fake_driver_put(fd->driver, gone, &everything);
        fake_driver_put(fd->driver, "sb-00000000000000cc", &everything);
}

/* For N = 1, …: the Nth write or driver call of a start fails (once, or as a crash there);
 * the next start repairs what that one left. */
static void reconciler_sweep(enum fault_mode mode)
{
        long n = 1;
        for (;; n++) {
                struct fake_daemon *fd = calloc(1, sizeof(*fd));
                assert_non_null(fd);
                assert_int_equal(fake_daemon_start(fd, 2), 0);
                make_mess(fd);
                fake_daemon_restart_faulty(fd, mode, n, NULL); /* its failures are the point */
                if (mode == FAULT_ONCE)
                        assert_int_equal(fake_daemon_drain(fd), 0);
                bool fired = fake_daemon_halt(fd, NULL);
                assert_int_equal(fake_daemon_restart(fd), 0);
                assert_int_equal(fake_daemon_drain(fd), 0);
                char why[512];
                if (fake_daemon_check(fd, why, sizeof(why)) < 0)
                        fail_msg("step %ld (%s) failed, then a clean start: %s", n, fd->faults.fired_at, why);
                fake_daemon_stop(fd);
                free(fd);
                if (!fired)
                        break;
        }
        assert_true(n > 4);
        print_message("reconciler_startup (%s): %ld steps\n", mode == FAULT_ONCE ? "fail-once" : "crash", n - 1);
}

static void test_reconciler_failures_repaired_by_next_start(void **state)
{
        reconciler_sweep(FAULT_ONCE);
        reconciler_sweep(FAULT_CRASH);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_timeouts_expire, fake_test_setup, fake_test_teardown),
                cmocka_unit_test_setup_teardown(test_timeout_survives_a_store_failure, fake_test_setup, fake_test_teardown),
                cmocka_unit_test_setup_teardown(test_idle_policies, fake_test_setup, fake_test_teardown),
                cmocka_unit_test_setup_teardown(test_stuck_states_settled, fake_test_setup, fake_test_teardown),
                cmocka_unit_test_setup_teardown(test_stuck_state_with_operation_left_alone, fake_test_setup, fake_test_teardown),
                cmocka_unit_test_setup_teardown(test_stuck_snapshot_dropped, fake_test_setup, fake_test_teardown),
                cmocka_unit_test_setup_teardown(test_orphans_removed_at_start, fake_test_setup, fake_test_teardown),
                cmocka_unit_test_setup_teardown(test_dead_init_noticed, fake_test_setup, fake_test_teardown),
                cmocka_unit_test_setup_teardown(test_dead_while_away, fake_test_setup, fake_test_teardown),
                cmocka_unit_test_setup_teardown(test_rootfs_vanished, fake_test_setup, fake_test_teardown),
                cmocka_unit_test(test_reconciler_failures_repaired_by_next_start),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
