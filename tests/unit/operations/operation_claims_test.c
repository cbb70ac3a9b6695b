/* Unit tests of the fleet's side of operation_queue.c (docs/fleet.md) on the fakes: a node
 * runs what it claims and its sandboxes come with the claims; work on a sandbox of another
 * node is left for that node, also once its lease lapsed; a create claimed by a node that
 * went silent is taken over, and the old holder's writes are fenced. */
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
#include "operations/sandbox_lifecycle.h"
#include "spaced/wallclock.h"
#include "../spaced/store_fixture.h"

static void register_node(struct fake_daemon *fd, const char *id, int64_t at)
{
        struct node_record n = { .capacity = 1, .started_at_ms = at };
        snprintf(n.id, sizeof(n.id), "%s", id);
        assert_int_equal(STORE(&fd->ctx, node_register, &n), 0);
}

/* This fake daemon is node-a of a fleet whose claims lapse after 2 s. */
static int setup(void **state)
{
        struct fake_daemon *fd = calloc(1, sizeof(*fd));
        if (!fd || fake_daemon_start(fd, 2) < 0)
                return -1;
        snprintf(fd->ctx.node_id, sizeof(fd->ctx.node_id), "node-a");
        fd->ctx.cfg.claim_lease_s = 2;
        register_node(fd, "node-a", wallclock_now_ms());
        *state = fd;
        return 0;
}

static int teardown(void **state)
{
        fake_daemon_stop(*state);
        free(*state);
        return 0;
}

static void node_of(struct fake_daemon *fd, const char *id, const char *want)
{
        struct sandbox sb;
        assert_int_equal(STORE(&fd->ctx, sandbox_get, id, &sb), 0);
        assert_string_equal(sb.node_id, want);
        sandbox_release(&sb);
}

static void test_node_runs_what_it_claims(void **state)
{
        struct fake_daemon *fd = *state;
        char id[32];
        struct operation op, done;
        struct space_error err = { 0 };
        assert_int_equal(fake_daemon_create(fd, 0, NULL, id, &op, &err), 0);
        assert_int_equal(fake_daemon_wait(fd, op.id, &done), 0);
        assert_int_equal(done.state, OPERATION_SUCCEEDED);
        assert_string_equal(done.claim_owner, "node-a");
        assert_int_equal(done.claims, 1);
        node_of(fd, id, "node-a");
        fake_test_assert_consistent(fd);
}

static void test_another_live_nodes_sandbox_waits_for_it(void **state)
{
        struct fake_daemon *fd = *state;
        /* node-b's sandbox, node-b live (heard of now). */
        register_node(fd, "node-b", wallclock_now_ms());
        struct sandbox sb = store_fixture_sandbox("sb-of-b", SANDBOX_RUNNING, wallclock_now_ms());
        snprintf(sb.node_id, sizeof(sb.node_id), "node-b");
        snprintf(sb.runtime, sizeof(sb.runtime), "%s", fd->driver->ops->name);
        assert_int_equal(STORE(&fd->ctx, sandbox_insert, &sb, NULL), 0);
        sandbox_release(&sb);
        struct operation op, row;
        struct space_error err = { 0 };
        assert_int_equal(sandbox_lifecycle_submit(&fd->ctx, "sb-of-b", SANDBOX_ACTION_STOP, &op, &err), 0);
        /* Not claimed here: it waits, pending, for node-b. */
        assert_int_equal(operation_queue_wait(fd->ctx.queue, op.id, 500, &row), -ETIMEDOUT);
        assert_int_equal(row.state, OPERATION_PENDING);
        assert_string_equal(row.claim_owner, "");
        assert_int_equal(operation_queue_claim_round(fd->ctx.queue, 8), 0);
        /* node-b falls silent: its sandbox's filesystem is in its pool, so the stop still
         * waits for it (host loss is a later step), and the sandbox stays node-b's. */
        assert_int_equal(STORE(&fd->ctx, node_heartbeat, "node-b", wallclock_now_ms() - 10000), 0);
        assert_int_equal(STORE(&fd->ctx, node_heartbeat, "node-a", wallclock_now_ms()), 0);
        assert_int_equal(operation_queue_claim_round(fd->ctx.queue, 8), 0);
        assert_int_equal(STORE(&fd->ctx, operation_get, op.id, &row), 0);
        assert_int_equal(row.state, OPERATION_PENDING);
        node_of(fd, "sb-of-b", "node-b");
}

static void test_taken_over_claim_fences_the_old_holder(void **state)
{
        struct fake_daemon *fd = *state;
        /* node-b claimed a create and went silent before running it. */
        register_node(fd, "node-b", wallclock_now_ms());
        struct sandbox sb = store_fixture_sandbox("sb-taken", SANDBOX_CREATING, wallclock_now_ms());
        snprintf(sb.template_name, sizeof(sb.template_name), FAKE_TEMPLATE);
        snprintf(sb.runtime, sizeof(sb.runtime), "%s", fd->driver->ops->name);
        struct operation create =
                store_fixture_operation("op-taken00000000", "sandbox.create", "sb-taken", OPERATION_PENDING, wallclock_now_ms());
        assert_int_equal(STORE(&fd->ctx, sandbox_insert, &sb, &create), 0);
        sandbox_release(&sb);
        struct operation held, row;
        assert_int_equal(STORE(&fd->ctx, operation_claim, "node-b", create.id, 0, wallclock_now_ms(), &held), 0);
        assert_int_equal(operation_queue_claim_round(fd->ctx.queue, 8), 0); /* node-b is live */
        assert_int_equal(STORE(&fd->ctx, node_heartbeat, "node-b", wallclock_now_ms() - 10000), 0);
        assert_int_equal(STORE(&fd->ctx, node_heartbeat, "node-a", wallclock_now_ms()), 0);
        assert_int_equal(operation_queue_claim_round(fd->ctx.queue, 8), 1);
        assert_int_equal(fake_daemon_wait(fd, create.id, &row), 0);
        assert_int_equal(row.state, OPERATION_SUCCEEDED);
        assert_string_equal(row.claim_owner, "node-a");
        assert_int_equal(row.claims, 2);
        assert_int_equal(fake_test_state(fd, "sb-taken"), SANDBOX_RUNNING);
        /* node-b wakes up and tries to write its end: refused, nothing changes. */
        held.state = OPERATION_FAILED;
        assert_int_equal(STORE(&fd->ctx, operation_update, &held), -ESTALE);
        assert_int_equal(STORE(&fd->ctx, operation_get, create.id, &row), 0);
        assert_int_equal(row.state, OPERATION_SUCCEEDED);
        fake_test_assert_consistent(fd);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_node_runs_what_it_claims, setup, teardown),
                cmocka_unit_test_setup_teardown(test_another_live_nodes_sandbox_waits_for_it, setup, teardown),
                cmocka_unit_test_setup_teardown(test_taken_over_claim_fences_the_old_holder, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
