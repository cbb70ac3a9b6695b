/* Conformance tests of a state_store backend (store_conformance.h), the fleet: nodes that
 * register, heartbeat and are marked lost; claims on operations (who may claim what, one
 * operation per target at a time across nodes, a lapsed claim taken over, the claim token
 * fencing the writes of a node whose claim was taken over); two connections claiming. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "state_store/state_store.h"
#include "store_conformance.h"
#include "store_fixture.h"

static const struct state_store_ops *ops; /* the backend under test, set by store_conformance_fleet() */

static void node(struct state_store *st, const char *id, int64_t at)
{
        struct node_record n = { .capacity = 2, .started_at_ms = at };
        snprintf(n.id, sizeof(n.id), "%s", id);
        snprintf(n.address, sizeof(n.address), "http://127.0.0.1:%d", (int)(at % 1000));
        snprintf(n.labels, sizeof(n.labels), "{\"zone\":\"a\"}");
        assert_int_equal(ops->node_register(st, &n), 0);
}

static void sandbox_with_create(struct state_store *st, const char *id, const char *op_id, int64_t at)
{
        struct sandbox sb = store_fixture_sandbox(id, SANDBOX_CREATING, at);
        struct operation op = store_fixture_operation(op_id, "sandbox.create", id, OPERATION_PENDING, at);
        assert_int_equal(ops->sandbox_insert(st, &sb, &op), 0);
        sandbox_release(&sb);
}

static void node_of(struct state_store *st, const char *sandbox, const char *want)
{
        struct sandbox sb;
        assert_int_equal(ops->sandbox_get(st, sandbox, &sb), 0);
        assert_string_equal(sb.node_id, want);
        sandbox_release(&sb);
}

static void test_nodes_register_heartbeat_and_are_lost(void **state)
{
        struct state_store *st = *state;
        node(st, "node-b", 1000);
        node(st, "node-a", 2000);
        struct node_record *ns = NULL;
        size_t n = 0;
        assert_int_equal(ops->node_list(st, &ns, &n), 0);
        assert_int_equal(n, 2);
        assert_string_equal(ns[0].id, "node-a"); /* by id */
        assert_string_equal(ns[0].state, "ready");
        assert_string_equal(ns[0].labels, "{\"zone\":\"a\"}");
        assert_int_equal(ns[0].capacity, 2);
        assert_int_equal(ns[0].heartbeat_at_ms, 2000);
        assert_int_equal(ns[1].started_at_ms, 1000);
        free(ns);
        assert_int_equal(ops->node_heartbeat(st, "node-b", 5000), 0);
        assert_int_equal(ops->node_heartbeat(st, "node-nope", 5000), -ENOENT);
        int lost = -1;
        assert_int_equal(ops->node_mark_lost(st, 4000, &lost), 0);
        assert_int_equal(lost, 1); /* node-a: last heard of at 2000 */
        assert_int_equal(ops->node_mark_lost(st, 4000, &lost), 0);
        assert_int_equal(lost, 0); /* already lost */
        assert_int_equal(ops->node_list(st, &ns, &n), 0);
        assert_string_equal(ns[0].state, "lost");
        assert_string_equal(ns[1].state, "ready");
        assert_int_equal(ns[1].heartbeat_at_ms, 5000);
        free(ns);
        /* A heartbeat brings a lost node back. */
        assert_int_equal(ops->node_heartbeat(st, "node-a", 6000), 0);
        assert_int_equal(ops->node_list(st, &ns, &n), 0);
        assert_string_equal(ns[0].state, "ready");
        free(ns);
}

static void test_claims_follow_nodes_and_targets(void **state)
{
        struct state_store *st = *state;
        node(st, "node-a", 1000);
        node(st, "node-b", 1000);
        sandbox_with_create(st, "sb-1", "op-1", 100);
        struct operation first, second, again;
        assert_int_equal(ops->operation_claim(st, "node-a", NULL, 500, 1100, &first), 0);
        assert_string_equal(first.id, "op-1");
        assert_string_equal(first.claim_owner, "node-a");
        assert_true(first.claim_token[0]);
        assert_int_equal(first.claimed_at_ms, 1100);
        assert_int_equal(first.claims, 1);
        node_of(st, "sb-1", "node-a"); /* the sandbox came with its create's claim */
        /* Held by a live node: neither it nor another claims it again. */
        assert_int_equal(ops->operation_claim(st, "node-a", NULL, 500, 1100, &again), -ENOENT);
        assert_int_equal(ops->operation_claim(st, "node-b", "op-1", 500, 1100, &again), -ENOENT);
        /* A second operation on the same target: not node-b's (the target lives on node-a, an
         * older operation on it is node-a's), node-a's in order after the first. */
        struct operation stop = store_fixture_operation("op-2", "sandbox.stop", "sb-1", OPERATION_PENDING, 200);
        assert_int_equal(ops->operation_insert(st, &stop), 0);
        assert_int_equal(ops->operation_claim(st, "node-b", NULL, 500, 1100, &again), -ENOENT);
        assert_int_equal(ops->operation_claim(st, "node-a", "op-2", 500, 1100, &second), 0);
        assert_int_equal(second.claims, 1);
        /* Unknown, finished: nothing to claim. */
        assert_int_equal(ops->operation_claim(st, "node-b", "op-nope", 500, 1100, &again), -ENOENT);
        assert_int_equal(ops->operation_claim(st, "", NULL, 500, 1100, &again), -EINVAL);

        /* node-a falls silent: once its heartbeat is older than live_after, node-b takes
         * over, oldest first, and the sandbox moves with the claim. */
        assert_int_equal(ops->node_heartbeat(st, "node-b", 9000), 0);
        assert_int_equal(ops->operation_claim(st, "node-b", "op-2", 5000, 9100, &again), -ENOENT); /* op-1 first */
        struct operation taken;
        assert_int_equal(ops->operation_claim(st, "node-b", NULL, 5000, 9100, &taken), 0);
        assert_string_equal(taken.id, "op-1");
        assert_string_equal(taken.claim_owner, "node-b");
        assert_int_equal(taken.claims, 2);
        assert_string_not_equal(taken.claim_token, first.claim_token);
        node_of(st, "sb-1", "node-b");

        /* node-a's writes are fenced: its token no longer holds the row. */
        first.state = OPERATION_RUNNING;
        assert_int_equal(ops->operation_update(st, &first), -ESTALE);
        struct sandbox_settlement set = {
                .from_mask = 1u << SANDBOX_CREATING, .to = SANDBOX_RUNNING, .reason = "", .op = &first
        };
        first.state = OPERATION_SUCCEEDED;
        enum sandbox_state cur;
        assert_int_equal(ops->sandbox_settle(st, "sb-1", &set, &cur), -ESTALE);
        struct sandbox sb;
        assert_int_equal(ops->sandbox_get(st, "sb-1", &sb), 0);
        assert_int_equal(sb.state, SANDBOX_CREATING); /* the whole settle was refused */
        sandbox_release(&sb);
        /* node-b's end is written once. */
        taken.state = OPERATION_SUCCEEDED;
        taken.finished_at_ms = 9200;
        set.op = &taken;
        assert_int_equal(ops->sandbox_settle(st, "sb-1", &set, &cur), 0);
        struct operation row;
        assert_int_equal(ops->operation_get(st, "op-1", &row), 0);
        assert_int_equal(row.state, OPERATION_SUCCEEDED);
        assert_string_equal(row.claim_owner, "node-b");
        assert_int_equal(ops->operation_claim(st, "node-b", "op-2", 5000, 9300, &again), 0);
        assert_string_equal(again.id, "op-2");
}

/* A sandbox inserted with its node (a warm sandbox handed out) keeps it: another node may
 * not claim its work, live or not. */
static void test_inserted_node_is_kept(void **state)
{
        struct state_store *st = *state;
        node(st, "node-a", 1000);
        node(st, "node-b", 1000);
        struct sandbox sb = store_fixture_sandbox("sb-w", SANDBOX_RUNNING, 100);
        snprintf(sb.node_id, sizeof(sb.node_id), "node-a");
        assert_int_equal(ops->sandbox_insert(st, &sb, NULL), 0);
        sandbox_release(&sb);
        node_of(st, "sb-w", "node-a");
        struct operation stop = store_fixture_operation("op-s", "sandbox.stop", "sb-w", OPERATION_PENDING, 200), got;
        assert_int_equal(ops->operation_insert(st, &stop), 0);
        assert_int_equal(ops->operation_claim(st, "node-b", NULL, 500, 1100, &got), -ENOENT);
        /* Nor once node-a is silent: only a create moves a sandbox; other work on it waits
         * for its node (its filesystem is in that node's pool). */
        assert_int_equal(ops->operation_claim(st, "node-b", NULL, 5000, 9100, &got), -ENOENT);
        node_of(st, "sb-w", "node-a");
        assert_int_equal(ops->operation_claim(st, "node-a", NULL, 500, 1100, &got), 0);
        assert_string_equal(got.id, "op-s");
}

static void test_register_lets_go_of_old_claims(void **state)
{
        struct state_store *st = *state;
        node(st, "node-a", 1000);
        node(st, "node-b", 1000);
        struct operation build = store_fixture_operation("op-t", "template.build", "tpl:1", OPERATION_RUNNING, 100);
        assert_int_equal(ops->operation_insert(st, &build), 0);
        struct operation held, again;
        assert_int_equal(ops->operation_claim(st, "node-a", NULL, 500, 1100, &held), 0);
        assert_int_equal(ops->operation_claim(st, "node-b", NULL, 500, 1100, &again), -ENOENT);
        /* node-a starts again: what its earlier process held is free at once. */
        node(st, "node-a", 2000);
        assert_int_equal(ops->operation_get(st, "op-t", &again), 0);
        assert_string_equal(again.claim_owner, "");
        assert_int_equal(ops->operation_claim(st, "node-b", NULL, 500, 2100, &again), 0);
        assert_string_equal(again.claim_owner, "node-b");
        assert_int_equal(again.claims, 2);
}

static void test_two_connections_claim_different_rows(void **state)
{
        struct state_store *st = *state, *other = NULL;
        int r = store_conformance_reopen(&other);
        if (r == -EOPNOTSUPP)
                other = st; /* a store that is one connection (SQLite in memory): both claim through it */
        else
                assert_int_equal(r, 0);
        node(st, "node-a", 1000);
        node(st, "node-b", 1000);
        for (int i = 0; i < 4; i++) {
                char id[16], target[16];
                snprintf(id, sizeof(id), "op-%d", i);
                snprintf(target, sizeof(target), "tpl:%d", i);
                struct operation op = store_fixture_operation(id, "template.build", target, OPERATION_PENDING, 100 + i);
                assert_int_equal(ops->operation_insert(st, &op), 0);
        }
        int mine = 0, theirs = 0;
        for (int round = 0; round < 4; round++) {
                struct operation a, b;
                int ra = ops->operation_claim(st, "node-a", NULL, 500, 1100, &a);
                int rb = ops->operation_claim(other, "node-b", NULL, 500, 1100, &b);
                if (ra == 0 && rb == 0)
                        assert_string_not_equal(a.id, b.id);
                mine += ra == 0;
                theirs += rb == 0;
        }
        assert_int_equal(mine + theirs, 4);
        assert_int_equal(mine, 2);
        struct operation *all = NULL;
        size_t n = 0;
        assert_int_equal(ops->operation_list(st, NULL, -1, true, NULL, NULL, &all, &n), 0);
        assert_int_equal(n, 4);
        for (size_t i = 0; i < n; i++)
                assert_int_equal(all[i].claims, 1); /* each claimed once */
        free(all);
        if (other != st)
                ops->close(other);
}

int store_conformance_fleet(const struct store_backend *b)
{
        ops = b->ops;
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_nodes_register_heartbeat_and_are_lost, store_conformance_open,
                                                store_conformance_close),
                cmocka_unit_test_setup_teardown(test_claims_follow_nodes_and_targets, store_conformance_open,
                                                store_conformance_close),
                cmocka_unit_test_setup_teardown(test_inserted_node_is_kept, store_conformance_open, store_conformance_close),
                cmocka_unit_test_setup_teardown(test_register_lets_go_of_old_claims, store_conformance_open,
                                                store_conformance_close),
                cmocka_unit_test_setup_teardown(test_two_connections_claim_different_rows, store_conformance_open,
                                                store_conformance_close),
        };
        return cmocka_run_group_tests_name("fleet", tests, NULL, NULL);
}
