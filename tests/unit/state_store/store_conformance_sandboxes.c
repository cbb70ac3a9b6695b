/* Conformance tests of a state_store backend (store_conformance.h): sandboxes and operations. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "spaced/wallclock.h"
#include "state_store/state_store.h"
#include "store_conformance.h"
#include "store_fixture.h"

static const struct state_store_ops *ops; /* the backend under test, set by store_conformance_sandboxes() */

static void insert(struct state_store *st, const char *id, enum sandbox_state state, int64_t created, const char *op_id)
{
        struct sandbox sb = store_fixture_sandbox(id, state, created);
        struct operation op = store_fixture_operation(op_id, "sandbox.create", id, OPERATION_PENDING, created);
        assert_int_equal(ops->sandbox_insert(st, &sb, op_id ? &op : NULL), 0);
        sandbox_release(&sb);
}

static enum sandbox_state state_of(struct state_store *st, const char *id)
{
        struct sandbox sb;
        assert_int_equal(ops->sandbox_get(st, id, &sb), 0);
        sandbox_release(&sb);
        return sb.state;
}

static void test_insert_get_round_trip(void **state)
{
        struct state_store *st = *state;
        struct sandbox in = store_fixture_sandbox("sb-0000000000000001", SANDBOX_CREATING, 1000);
        snprintf(in.state_reason, sizeof(in.state_reason), "why not");
        in.expires_at_ms = 5000;
        snprintf(in.runtime_state, sizeof(in.runtime_state), "{\"pid\":4242,\"pid_start\":1099511627776,\"uid_base\":165536}");
        struct operation op = store_fixture_operation("op-1", "sandbox.create", in.id, OPERATION_PENDING, 1000);
        assert_int_equal(ops->sandbox_insert(st, &in, &op), 0);

        struct sandbox out;
        assert_int_equal(ops->sandbox_get(st, in.id, &out), 0);
        assert_string_equal(out.id, in.id);
        assert_int_equal(out.state, SANDBOX_CREATING);
        assert_string_equal(out.state_reason, "why not");
        assert_string_equal(out.template_name, "busybox");
        assert_true(json_equal(out.environment, in.environment));
        assert_true(json_equal(out.env, in.env));
        assert_true(json_equal(out.metadata, in.metadata));
        assert_float_equal(out.resources.cpus, 0.5, 1e-9);
        assert_int_equal(out.resources.memory_mb, 512);
        assert_int_equal(out.resources.pids, 256);
        assert_int_equal(out.resources.disk_mb, 7);
        assert_int_equal(out.timeout_s, 3600);
        assert_string_equal(out.on_timeout, "destroy");
        assert_int_equal(out.expires_at_ms, 5000);
        assert_int_equal(out.created_at_ms, 1000);
        assert_int_equal(out.updated_at_ms, 1000);
        assert_string_equal(out.runtime, "namespaces");
        assert_string_equal(out.runtime_state, in.runtime_state);
        sandbox_release(&out);
        sandbox_release(&in);

        struct operation got;
        assert_int_equal(ops->operation_get(st, "op-1", &got), 0);
        assert_string_equal(got.kind, "sandbox.create");
        assert_string_equal(got.target, "sb-0000000000000001");
        assert_int_equal(got.state, OPERATION_PENDING);
        assert_int_equal(got.created_at_ms, 1000);
        assert_int_equal(got.started_at_ms, 0);
        assert_string_equal(got.error_code, "");
}

static void test_insert_duplicate_sandbox(void **state)
{
        struct state_store *st = *state;
        insert(st, "sb-dup", SANDBOX_RUNNING, 1, "op-a");
        struct sandbox again = store_fixture_sandbox("sb-dup", SANDBOX_STOPPED, 2);
        struct operation op = store_fixture_operation("op-b", "sandbox.create", "sb-dup", OPERATION_PENDING, 2);
        assert_int_equal(ops->sandbox_insert(st, &again, &op), -EEXIST);
        sandbox_release(&again);
        /* Nothing of the failed insert is left: not its operation, not its state. */
        struct operation got;
        assert_int_equal(ops->operation_get(st, "op-b", &got), -ENOENT);
        assert_int_equal(state_of(st, "sb-dup"), SANDBOX_RUNNING);
}

static void test_insert_is_atomic(void **state)
{
        struct state_store *st = *state;
        insert(st, "sb-one", SANDBOX_RUNNING, 1, "op-taken");
        /* The sandbox row is fine but its operation collides: both must be rolled back. */
        struct sandbox sb = store_fixture_sandbox("sb-two", SANDBOX_CREATING, 2);
        struct operation op = store_fixture_operation("op-taken", "sandbox.create", "sb-two", OPERATION_PENDING, 2);
        assert_int_equal(ops->sandbox_insert(st, &sb, &op), -EEXIST);
        sandbox_release(&sb);
        struct sandbox got;
        assert_int_equal(ops->sandbox_get(st, "sb-two", &got), -ENOENT);
        /* And the store still works after the rollback. */
        insert(st, "sb-three", SANDBOX_CREATING, 3, NULL);
        assert_int_equal(state_of(st, "sb-three"), SANDBOX_CREATING);
}

static void test_unknown_ids(void **state)
{
        struct state_store *st = *state;
        struct sandbox sb;
        memset(&sb, 0x5a, sizeof(sb));
        assert_int_equal(ops->sandbox_get(st, "sb-nope", &sb), -ENOENT);
        assert_int_equal((unsigned char)sb.id[0], 0x5a); /* untouched on failure */
        enum sandbox_state cur = SANDBOX_FAILED;
        assert_int_equal(ops->sandbox_transition(st, "sb-nope", ~0u, SANDBOX_STOPPING, "", NULL, &cur), -ENOENT);
        assert_int_equal(cur, SANDBOX_FAILED);
        assert_int_equal(ops->sandbox_set_runtime(st, "sb-nope", "{}"), -ENOENT);
        assert_int_equal(ops->sandbox_set_expiry(st, "sb-nope", 3), -ENOENT);
        struct operation op = store_fixture_operation("op-nope", "sandbox.stop", "sb-nope", OPERATION_RUNNING, 1);
        assert_int_equal(ops->operation_update(st, &op), -ENOENT);
        assert_int_equal(ops->operation_get(st, "op-nope", &op), -ENOENT);
}

static void test_list_and_filter(void **state)
{
        struct state_store *st = *state;
        insert(st, "sb-c", SANDBOX_FAILED, 30, "op-c");
        insert(st, "sb-a", SANDBOX_RUNNING, 10, "op-a");
        insert(st, "sb-b", SANDBOX_DESTROYED, 20, "op-b");
        insert(st, "sb-d", SANDBOX_RUNNING, 40, "op-d");

        struct sandbox *all = NULL;
        size_t n = 0;
        assert_int_equal(ops->sandbox_list(st, -1, NULL, NULL, &all, &n), 0);
        assert_int_equal(n, 3); /* destroyed left out, oldest first */
        assert_string_equal(all[0].id, "sb-a");
        assert_string_equal(all[1].id, "sb-c");
        assert_string_equal(all[2].id, "sb-d");
        assert_string_equal(json_string_value(json_object_get(all[2].metadata, "owner")), "me");
        sandbox_array_free(all, n);

        assert_int_equal(ops->sandbox_list(st, SANDBOX_DESTROYED, NULL, NULL, &all, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(all[0].id, "sb-b");
        sandbox_array_free(all, n);

        assert_int_equal(ops->sandbox_list(st, SANDBOX_RUNNING, NULL, NULL, &all, &n), 0);
        assert_int_equal(n, 2);
        sandbox_array_free(all, n);

        assert_int_equal(ops->sandbox_list(st, SANDBOX_PAUSED, NULL, NULL, &all, &n), 0);
        assert_int_equal(n, 0);
        sandbox_array_free(all, n);
}

static void test_transition_allowed(void **state)
{
        struct state_store *st = *state;
        insert(st, "sb-t", SANDBOX_PAUSED, 1, "op-create");
        int64_t before = wallclock_now_ms();
        struct operation op = store_fixture_operation("op-stop", "sandbox.stop", "sb-t", OPERATION_PENDING, 2);
        enum sandbox_state cur = SANDBOX_FAILED;
        assert_int_equal(ops->sandbox_transition(st, "sb-t", STATE_MASK(SANDBOX_RUNNING) | STATE_MASK(SANDBOX_PAUSED),
                                                 SANDBOX_STOPPING, "asked to", &op, &cur),
                         0);
        assert_int_equal(cur, SANDBOX_STOPPING);
        struct sandbox sb;
        assert_int_equal(ops->sandbox_get(st, "sb-t", &sb), 0);
        assert_int_equal(sb.state, SANDBOX_STOPPING);
        assert_string_equal(sb.state_reason, "asked to");
        assert_true(sb.updated_at_ms >= before);
        assert_int_equal(sb.created_at_ms, 1);
        sandbox_release(&sb);
        struct operation got;
        assert_int_equal(ops->operation_get(st, "op-stop", &got), 0);
        assert_string_equal(got.kind, "sandbox.stop");

        /* No operation and a NULL reason are fine too; the reason is then cleared. */
        assert_int_equal(ops->sandbox_transition(st, "sb-t", STATE_MASK(SANDBOX_STOPPING), SANDBOX_STOPPED, NULL, NULL, NULL), 0);
        assert_int_equal(ops->sandbox_get(st, "sb-t", &sb), 0);
        assert_int_equal(sb.state, SANDBOX_STOPPED);
        assert_string_equal(sb.state_reason, "");
        sandbox_release(&sb);
}

static void test_transition_stale(void **state)
{
        struct state_store *st = *state;
        insert(st, "sb-s", SANDBOX_STOPPED, 1, "op-create");
        struct operation op = store_fixture_operation("op-pause", "sandbox.pause", "sb-s", OPERATION_PENDING, 2);
        enum sandbox_state cur = SANDBOX_CREATING;
        assert_int_equal(ops->sandbox_transition(st, "sb-s", STATE_MASK(SANDBOX_RUNNING), SANDBOX_RUNNING, "x", &op, &cur),
                         -ESTALE);
        assert_int_equal(cur, SANDBOX_STOPPED);
        struct operation got;
        assert_int_equal(ops->operation_get(st, "op-pause", &got), -ENOENT);
        struct sandbox sb;
        assert_int_equal(ops->sandbox_get(st, "sb-s", &sb), 0);
        assert_int_equal(sb.state, SANDBOX_STOPPED);
        assert_string_equal(sb.state_reason, "");
        assert_int_equal(sb.updated_at_ms, 1);
        sandbox_release(&sb);
        /* An empty mask allows nothing. */
        assert_int_equal(ops->sandbox_transition(st, "sb-s", 0, SANDBOX_FAILED, "", NULL, &cur), -ESTALE);
}

static void test_transition_rolls_back_on_duplicate_operation(void **state)
{
        struct state_store *st = *state;
        insert(st, "sb-r", SANDBOX_RUNNING, 1, "op-create");
        struct operation op = store_fixture_operation("op-create", "sandbox.stop", "sb-r", OPERATION_PENDING, 2);
        assert_int_equal(ops->sandbox_transition(st, "sb-r", STATE_MASK(SANDBOX_RUNNING), SANDBOX_STOPPING, "", &op, NULL),
                         -EEXIST);
        assert_int_equal(state_of(st, "sb-r"), SANDBOX_RUNNING);
}

/* The end of a handler: state, runtime, expiry, head and the operation's end together. */
static void test_settle_writes_all_or_nothing(void **state)
{
        struct state_store *st = *state;
        insert(st, "sb-e", SANDBOX_STARTING, 1, "op-start");
        struct operation op = store_fixture_operation("op-start", "sandbox.start", "sb-e", OPERATION_SUCCEEDED, 1);
        op.finished_at_ms = 77;
        snprintf(op.result, sizeof(op.result), "{\"ok\":true}");
        struct sandbox_settlement set = { .from_mask = STATE_MASK(SANDBOX_STARTING),
                                          .to = SANDBOX_RUNNING,
                                          .reason = "",
                                          .set_runtime = true,
                                          .runtime_state = "{\"pid\":42}",
                                          .set_expiry = true,
                                          .expires_at_ms = 99000,
                                          .head_snapshot_id = "snap-h",
                                          .op = &op };
        enum sandbox_state cur = SANDBOX_FAILED;
        assert_int_equal(ops->sandbox_settle(st, "sb-e", &set, &cur), 0);
        assert_int_equal(cur, SANDBOX_RUNNING);
        struct sandbox sb;
        assert_int_equal(ops->sandbox_get(st, "sb-e", &sb), 0);
        assert_int_equal(sb.state, SANDBOX_RUNNING);
        assert_string_equal(sb.runtime_state, "{\"pid\":42}");
        assert_int_equal(sb.expires_at_ms, 99000);
        assert_string_equal(sb.head_snapshot_id, "snap-h");
        sandbox_release(&sb);
        struct operation got;
        assert_int_equal(ops->operation_get(st, "op-start", &got), 0);
        assert_int_equal(got.state, OPERATION_SUCCEEDED);
        assert_int_equal(got.finished_at_ms, 77);
        assert_string_equal(got.result, "{\"ok\":true}");

        /* Not in from_mask: nothing at all is written, the operation included. */
        struct operation op2 = store_fixture_operation("op-stop2", "sandbox.stop", "sb-e", OPERATION_PENDING, 2);
        assert_int_equal(ops->operation_insert(st, &op2), 0);
        op2.state = OPERATION_SUCCEEDED;
        struct sandbox_settlement stale = { .from_mask = STATE_MASK(SANDBOX_STOPPING),
                                            .to = SANDBOX_STOPPED,
                                            .set_runtime = true,
                                            .set_expiry = true,
                                            .op = &op2 };
        assert_int_equal(ops->sandbox_settle(st, "sb-e", &stale, &cur), -ESTALE);
        assert_int_equal(cur, SANDBOX_RUNNING);
        assert_int_equal(ops->operation_get(st, "op-stop2", &got), 0);
        assert_int_equal(got.state, OPERATION_PENDING);
        assert_int_equal(ops->sandbox_get(st, "sb-e", &sb), 0);
        assert_string_equal(sb.runtime_state, "{\"pid\":42}");
        assert_int_equal(sb.expires_at_ms, 99000);
        sandbox_release(&sb);

        /* An operation that is not there rolls the state change back. */
        struct operation ghost = store_fixture_operation("op-ghost", "sandbox.stop", "sb-e", OPERATION_SUCCEEDED, 3);
        struct sandbox_settlement lost = { .from_mask = STATE_MASK(SANDBOX_RUNNING), .to = SANDBOX_STOPPED, .op = &ghost };
        assert_int_equal(ops->sandbox_settle(st, "sb-e", &lost, NULL), -ENOENT);
        assert_int_equal(state_of(st, "sb-e"), SANDBOX_RUNNING);
}

/* An operation that needs a snapshot is stored only while the snapshot is there, and the
 * snapshot is not deleted while that operation is unfinished. */
static void test_snapshot_needed_by_operation(void **state)
{
        struct state_store *st = *state;
        insert(st, "sb-n", SANDBOX_RUNNING, 1, "op-create-n");
        struct snapshot snap = { 0 };
        snprintf(snap.id, sizeof(snap.id), "snap-n");
        snprintf(snap.sandbox_id, sizeof(snap.sandbox_id), "sb-n");
        snprintf(snap.state, sizeof(snap.state), "ready");
        snprintf(snap.kind, sizeof(snap.kind), "filesystem");
        snap.created_at_ms = 5;
        assert_int_equal(ops->insert_batch(st, NULL, 0, &snap, 1, NULL), 0);

        struct operation gone = store_fixture_operation("op-gone", "sandbox.restore", "sb-n", OPERATION_PENDING, 6);
        snprintf(gone.snapshot_id, sizeof(gone.snapshot_id), "snap-missing");
        assert_int_equal(ops->operation_insert(st, &gone), -ENOENT);
        struct operation got;
        assert_int_equal(ops->operation_get(st, "op-gone", &got), -ENOENT);

        struct operation op = store_fixture_operation("op-restore", "sandbox.restore", "sb-n", OPERATION_PENDING, 7);
        snprintf(op.snapshot_id, sizeof(op.snapshot_id), "snap-n");
        assert_int_equal(ops->sandbox_transition(st, "sb-n", STATE_MASK(SANDBOX_RUNNING), SANDBOX_RESTORING, "", &op, NULL), 0);
        assert_int_equal(ops->operation_get(st, "op-restore", &got), 0);
        assert_string_equal(got.snapshot_id, "snap-n");

        char user[32] = "";
        assert_int_equal(ops->snapshot_delete(st, "snap-n", true, user), -EBUSY);
        assert_string_equal(user, "op-restore");
        struct snapshot still;
        assert_int_equal(ops->snapshot_get(st, "snap-n", &still), 0);

        op.state = OPERATION_RUNNING;
        assert_int_equal(ops->operation_update(st, &op), 0);
        assert_int_equal(ops->snapshot_delete(st, "snap-n", true, NULL), -EBUSY);
        op.state = OPERATION_SUCCEEDED;
        assert_int_equal(ops->operation_update(st, &op), 0);
        assert_int_equal(ops->snapshot_delete(st, "snap-n", true, user), 0);
        assert_int_equal(ops->snapshot_get(st, "snap-n", &still), -ENOENT);
}

/* Old destroyed rows go with their operations; recent ones, ones a snapshot names and
 * live ones stay. */
static void test_purge_destroyed(void **state)
{
        struct state_store *st = *state;
        insert(st, "sb-old", SANDBOX_DESTROYED, 1, "op-old");
        insert(st, "sb-new", SANDBOX_DESTROYED, 5000, "op-new");
        insert(st, "sb-snapped", SANDBOX_DESTROYED, 1, "op-snapped");
        insert(st, "sb-live", SANDBOX_RUNNING, 1, "op-live");
        struct snapshot snap = { 0 };
        snprintf(snap.id, sizeof(snap.id), "snap-keep");
        snprintf(snap.sandbox_id, sizeof(snap.sandbox_id), "sb-snapped");
        snprintf(snap.state, sizeof(snap.state), "ready");
        snprintf(snap.kind, sizeof(snap.kind), "filesystem");
        assert_int_equal(ops->insert_batch(st, NULL, 0, &snap, 1, NULL), 0);
        int n = -1;
        /* An unfinished operation on it keeps the row. */
        assert_int_equal(ops->sandbox_purge_destroyed(st, 1000, 10, &n), 0);
        assert_int_equal(n, 0);
        const char *const done[] = { "op-old", "op-new", "op-snapped" };
        for (size_t i = 0; i < 3; i++) {
                struct operation d;
                assert_int_equal(ops->operation_get(st, done[i], &d), 0);
                d.state = OPERATION_SUCCEEDED;
                assert_int_equal(ops->operation_update(st, &d), 0);
        }
        assert_int_equal(ops->sandbox_purge_destroyed(st, 1000, 10, &n), 0);
        assert_int_equal(n, 1);
        struct sandbox sb;
        assert_int_equal(ops->sandbox_get(st, "sb-old", &sb), -ENOENT);
        struct operation op;
        assert_int_equal(ops->operation_get(st, "op-old", &op), -ENOENT);
        assert_int_equal(ops->operation_get(st, "op-new", &op), 0);
        assert_int_equal(state_of(st, "sb-new"), SANDBOX_DESTROYED);
        assert_int_equal(state_of(st, "sb-snapped"), SANDBOX_DESTROYED);
        assert_int_equal(state_of(st, "sb-live"), SANDBOX_RUNNING);
        assert_int_equal(ops->sandbox_purge_destroyed(st, 1000, 10, &n), 0);
        assert_int_equal(n, 0);
}

static void add_op(struct state_store *st, const char *id, const char *target, enum operation_state state, int64_t created,
                   int64_t finished)
{
        struct operation op = store_fixture_operation(id, "sandbox.stop", target, state, created);
        op.finished_at_ms = finished;
        assert_int_equal(ops->operation_insert(st, &op), 0);
}

/* Finished operations older than the cut go; unfinished ones, recent ones and the newest of
 * a live sandbox or of a template stay. */
static void test_purge_finished_operations(void **state)
{
        struct state_store *st = *state;
        insert(st, "sb-live", SANDBOX_RUNNING, 1, "op-live-create");
        insert(st, "sb-gone", SANDBOX_DESTROYED, 1, NULL);
        struct template_record t = { .environment = json_object(), .updated_at_ms = 1 };
        snprintf(t.name, sizeof(t.name), "tmpl:v1");
        snprintf(t.state, sizeof(t.state), "ready");
        assert_int_equal(ops->template_upsert(st, &t), 0);
        json_decref(t.environment);
        struct operation c;
        assert_int_equal(ops->operation_get(st, "op-live-create", &c), 0);
        c.state = OPERATION_SUCCEEDED;
        c.finished_at_ms = 2;
        assert_int_equal(ops->operation_update(st, &c), 0);
        add_op(st, "op-live-stop", "sb-live", OPERATION_SUCCEEDED, 3, 4); /* the live sandbox's newest */
        add_op(st, "op-gone-1", "sb-gone", OPERATION_FAILED, 2, 3);
        add_op(st, "op-gone-2", "sb-gone", OPERATION_SUCCEEDED, 3, 4); /* newest, but of a destroyed one */
        add_op(st, "op-pending", "sb-gone", OPERATION_PENDING, 1, 0);  /* unfinished */
        add_op(st, "op-running", "sb-live", OPERATION_RUNNING, 1, 0);
        add_op(st, "op-tmpl-1", "tmpl:v1", OPERATION_SUCCEEDED, 1, 2);
        add_op(st, "op-tmpl-2", "tmpl:v1", OPERATION_SUCCEEDED, 2, 3);      /* the template's newest */
        add_op(st, "op-recent", "sb-gone", OPERATION_SUCCEEDED, 900, 5000); /* inside the retention */
        int n = -1;
        assert_int_equal(ops->operation_purge_finished(st, 1000, 2, &n), 0); /* in batches */
        assert_int_equal(n, 2);
        assert_int_equal(ops->operation_purge_finished(st, 1000, 10, &n), 0);
        assert_int_equal(n, 2);
        assert_int_equal(ops->operation_purge_finished(st, 1000, 10, &n), 0);
        assert_int_equal(n, 0);
        const char *const gone[] = { "op-live-create", "op-gone-1", "op-gone-2", "op-tmpl-1" };
        const char *const kept[] = { "op-live-stop", "op-pending", "op-running", "op-tmpl-2", "op-recent" };
        struct operation op;
        for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++)
                assert_int_equal(ops->operation_get(st, gone[i], &op), -ENOENT);
        for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
                assert_int_equal(ops->operation_get(st, kept[i], &op), 0);
}

/* What an unfinished operation names is found by id, not by a substring of its params. */
static void test_operation_refers(void **state)
{
        struct state_store *st = *state;
        insert(st, "sb-parent", SANDBOX_RUNNING, 1, NULL);
        struct operation op = store_fixture_operation("op-fork", "sandbox.fork", "sb-parent", OPERATION_PENDING, 2);
        snprintf(op.params, sizeof(op.params),
                 "{\"snapshot_id\":\"snap-aa\",\"take_snapshot\":true,\"children\":[\"sb-c1x\",\"sb-c2x\"]}");
        assert_int_equal(ops->operation_insert(st, &op), 0);
        const char *const named[] = { "sb-parent", "snap-aa", "sb-c1x", "sb-c2x" };
        const char *const not_named[] = { "sb-c1", "snap-a", "c2x", "take_snapshot", "sb-other" };
        bool refers;
        for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++) {
                refers = false;
                assert_int_equal(ops->operation_refers(st, named[i], &refers), 0);
                assert_true(refers);
        }
        for (size_t i = 0; i < sizeof(not_named) / sizeof(not_named[0]); i++) {
                refers = true;
                assert_int_equal(ops->operation_refers(st, not_named[i], &refers), 0);
                assert_false(refers);
        }
        op.state = OPERATION_SUCCEEDED; /* a finished one drives nothing */
        assert_int_equal(ops->operation_update(st, &op), 0);
        refers = true;
        assert_int_equal(ops->operation_refers(st, "sb-c1x", &refers), 0);
        assert_false(refers);
}

struct race {
        struct state_store *st;
        int result;
        int index;
};

static void *race_stop(void *arg)
{
        struct race *r = arg;
        struct operation op;
        char id[32];
        snprintf(id, sizeof(id), "op-race-%d", r->index);
        op = store_fixture_operation(id, "sandbox.stop", "sb-race", OPERATION_PENDING, 2);
        r->result = ops->sandbox_transition(r->st, "sb-race", STATE_MASK(SANDBOX_RUNNING), SANDBOX_STOPPING, "", &op, NULL);
        return NULL;
}

static void test_transition_is_compare_and_set_under_threads(void **state)
{
        struct state_store *st = *state;
        insert(st, "sb-race", SANDBOX_RUNNING, 1, NULL);
        enum { N = 8 };
        pthread_t threads[N];
        struct race races[N];
        for (int i = 0; i < N; i++) {
                races[i] = (struct race){ .st = st, .index = i };
                assert_int_equal(pthread_create(&threads[i], NULL, race_stop, &races[i]), 0);
        }
        int won = 0, stale = 0;
        for (int i = 0; i < N; i++) {
                pthread_join(threads[i], NULL);
                won += races[i].result == 0;
                stale += races[i].result == -ESTALE;
        }
        assert_int_equal(won, 1);
        assert_int_equal(stale, N - 1);
        struct operation *list = NULL;
        size_t n = 0;
        assert_int_equal(ops->operation_list(st, "sb-race", -1, false, NULL, NULL, &list, &n), 0);
        assert_int_equal(n, 1);
        free(list);
}

static void test_set_runtime_and_expiry(void **state)
{
        struct state_store *st = *state;
        insert(st, "sb-x", SANDBOX_RUNNING, 1, NULL);
        assert_int_equal(ops->sandbox_set_runtime(st, "sb-x", "{\"pid\":31337,\"pid_start\":140737488355327}"), 0);
        int64_t before = wallclock_now_ms();
        assert_int_equal(ops->sandbox_set_expiry(st, "sb-x", before + 60000), 0);
        struct sandbox sb;
        assert_int_equal(ops->sandbox_get(st, "sb-x", &sb), 0);
        assert_string_equal(sb.runtime_state, "{\"pid\":31337,\"pid_start\":140737488355327}");
        assert_int_equal(sb.expires_at_ms, before + 60000);
        assert_true(sb.updated_at_ms >= before);
        assert_int_equal(sb.state, SANDBOX_RUNNING);
        sandbox_release(&sb);
        assert_int_equal(ops->sandbox_set_expiry(st, "sb-x", 0), 0);
        assert_int_equal(ops->sandbox_get(st, "sb-x", &sb), 0);
        assert_int_equal(sb.expires_at_ms, 0);
        sandbox_release(&sb);
}

/* A running sandbox's network replaced (PUT /v1/sandboxes/{id}/network) and cleared; an
 * unknown id changes nothing. */
static void test_set_network(void **state)
{
        struct state_store *st = *state;
        insert(st, "sb-n", SANDBOX_RUNNING, 1, NULL);
        json_t *net = json_pack("{s:s, s:[s], s:[]}", "profile", "public", "allow", "*.example.com", "deny");
        int64_t before = wallclock_now_ms();
        assert_int_equal(ops->sandbox_set_network(st, "sb-n", net), 0);
        struct sandbox sb;
        assert_int_equal(ops->sandbox_get(st, "sb-n", &sb), 0);
        assert_non_null(sb.network);
        assert_true(json_equal(sb.network, net));
        assert_true(sb.updated_at_ms >= before);
        assert_int_equal(sb.state, SANDBOX_RUNNING);
        sandbox_release(&sb);
        assert_int_equal(ops->sandbox_set_network(st, "sb-nope", net), -ENOENT);
        assert_int_equal(ops->sandbox_set_network(st, "sb-n", NULL), 0);
        assert_int_equal(ops->sandbox_get(st, "sb-n", &sb), 0);
        assert_null(sb.network);
        sandbox_release(&sb);
        json_decref(net);
}

/* The idle policy: stored at insert, replaced and cleared by sandbox_set_settings, which keeps
 * it when the other settings change. */
static void test_idle_policy(void **state)
{
        struct state_store *st = *state;
        struct sandbox in = store_fixture_sandbox("sb-i", SANDBOX_PAUSED, 1);
        in.idle = json_pack("{s:i, s:s}", "after_s", 900, "action", "stop");
        assert_int_equal(ops->sandbox_insert(st, &in, NULL), 0);
        insert(st, "sb-none", SANDBOX_PAUSED, 1, NULL);
        struct sandbox sb;
        assert_int_equal(ops->sandbox_get(st, "sb-none", &sb), 0);
        assert_null(sb.idle);
        sandbox_release(&sb);
        assert_int_equal(ops->sandbox_get(st, "sb-i", &sb), 0);
        assert_non_null(sb.idle);
        assert_true(json_equal(sb.idle, in.idle));
        json_decref(sb.metadata);
        sb.metadata = json_pack("{s:s}", "k", "v");
        assert_int_equal(ops->sandbox_set_settings(st, &sb, false), 0);
        sandbox_release(&sb);
        assert_int_equal(ops->sandbox_get(st, "sb-i", &sb), 0);
        assert_true(json_equal(sb.idle, in.idle));
        json_decref(sb.idle);
        sb.idle = json_pack("{s:i, s:s}", "after_s", 0, "action", "hibernate");
        assert_int_equal(ops->sandbox_set_settings(st, &sb, false), 0);
        json_t *off = json_incref(sb.idle);
        sandbox_release(&sb);
        assert_int_equal(ops->sandbox_get(st, "sb-i", &sb), 0);
        assert_true(json_equal(sb.idle, off));
        json_decref(sb.idle);
        sb.idle = NULL;
        assert_int_equal(ops->sandbox_set_settings(st, &sb, false), 0);
        sandbox_release(&sb);
        assert_int_equal(ops->sandbox_get(st, "sb-i", &sb), 0);
        assert_null(sb.idle);
        sandbox_release(&sb);
        json_decref(off);
        sandbox_release(&in);
}

/* E2B's private ports (allowPublicTraffic false) are kept with the sandbox; the default is
 * public. */
static void test_private_ports_round_trip(void **state)
{
        struct state_store *st = *state;
        struct sandbox in = store_fixture_sandbox("sb-private", SANDBOX_CREATING, 1000);
        in.private_ports = true;
        assert_int_equal(ops->sandbox_insert(st, &in, NULL), 0);
        sandbox_release(&in);
        insert(st, "sb-public", SANDBOX_CREATING, 1001, NULL);
        struct sandbox sb;
        assert_int_equal(ops->sandbox_get(st, "sb-private", &sb), 0);
        assert_true(sb.private_ports);
        sandbox_release(&sb);
        assert_int_equal(ops->sandbox_get(st, "sb-public", &sb), 0);
        assert_false(sb.private_ports);
        sandbox_release(&sb);
}

static void test_operation_update_and_duplicate(void **state)
{
        struct state_store *st = *state;
        struct operation op = store_fixture_operation("op-u", "template.build", "debian", OPERATION_PENDING, 5);
        assert_int_equal(ops->operation_insert(st, &op), 0);
        assert_int_equal(ops->operation_insert(st, &op), -EEXIST);
        op.state = OPERATION_FAILED;
        op.started_at_ms = 6;
        op.finished_at_ms = 7;
        snprintf(op.error_code, sizeof(op.error_code), "internal");
        snprintf(op.error_message, sizeof(op.error_message), "debootstrap exited with 1");
        assert_int_equal(ops->operation_update(st, &op), 0);
        struct operation got;
        assert_int_equal(ops->operation_get(st, "op-u", &got), 0);
        assert_int_equal(got.state, OPERATION_FAILED);
        assert_int_equal(got.started_at_ms, 6);
        assert_int_equal(got.finished_at_ms, 7);
        assert_string_equal(got.error_code, "internal");
        assert_string_equal(got.error_message, "debootstrap exited with 1");
        assert_string_equal(got.kind, "template.build");
        assert_int_equal(got.created_at_ms, 5);
}

static void test_operation_list_filters(void **state)
{
        struct state_store *st = *state;
        static const struct {
                const char *id, *target;
                enum operation_state state;
                int64_t at;
        } rows[] = {
                { "op-1", "sb-a", OPERATION_SUCCEEDED, 10 }, { "op-2", "sb-b", OPERATION_RUNNING, 20 },
                { "op-3", "sb-a", OPERATION_PENDING, 30 },   { "op-4", "sb-a", OPERATION_FAILED, 40 },
                { "op-5", "sb-b", OPERATION_PENDING, 50 },
        };
        for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
                struct operation op =
                        store_fixture_operation(rows[i].id, "sandbox.stop", rows[i].target, rows[i].state, rows[i].at);
                assert_int_equal(ops->operation_insert(st, &op), 0);
        }
        struct operation *l = NULL;
        size_t n = 0;
        assert_int_equal(ops->operation_list(st, NULL, -1, false, NULL, NULL, &l, &n), 0);
        assert_int_equal(n, 5);
        assert_string_equal(l[0].id, "op-5"); /* newest first */
        assert_string_equal(l[4].id, "op-1");
        free(l);

        assert_int_equal(ops->operation_list(st, "sb-a", -1, false, NULL, NULL, &l, &n), 0);
        assert_int_equal(n, 3);
        assert_string_equal(l[0].id, "op-4");
        assert_string_equal(l[2].id, "op-1");
        free(l);

        assert_int_equal(ops->operation_list(st, NULL, OPERATION_PENDING, false, NULL, NULL, &l, &n), 0);
        assert_int_equal(n, 2);
        assert_string_equal(l[0].id, "op-5");
        assert_string_equal(l[1].id, "op-3");
        free(l);

        assert_int_equal(ops->operation_list(st, "sb-b", OPERATION_RUNNING, false, NULL, NULL, &l, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(l[0].id, "op-2");
        free(l);

        assert_int_equal(ops->operation_list(st, "sb-none", -1, false, NULL, NULL, &l, &n), 0);
        assert_int_equal(n, 0);
        free(l);

        /* Unfinished: pending and running, oldest first (what a restart must resume). */
        assert_int_equal(ops->operation_list(st, NULL, -1, true, NULL, NULL, &l, &n), 0);
        assert_int_equal(n, 3);
        assert_string_equal(l[0].id, "op-2");
        assert_string_equal(l[1].id, "op-3");
        assert_string_equal(l[2].id, "op-5");
        free(l);
}

/* Lists are paged in SQL: a page of 500 of 503 operations, newest first, then the rest
 * after the last one shown; rows created in the same millisecond keep an order by id. */
static void test_operation_list_pages(void **state)
{
        struct state_store *st = *state;
        for (int i = 0; i < 503; i++) {
                char id[32];
                snprintf(id, sizeof(id), "op-%04d", i);
                struct operation op = store_fixture_operation(id, "sandbox.stop", "sb-many", OPERATION_SUCCEEDED, 1000 + i / 2);
                assert_int_equal(ops->operation_insert(st, &op), 0);
        }
        struct operation *l = NULL;
        size_t n = 0;
        struct store_page page = { .limit = 500 };
        assert_int_equal(ops->operation_list(st, "sb-many", -1, false, NULL, &page, &l, &n), 0);
        assert_int_equal(n, 500);
        assert_string_equal(l[0].id, "op-0502");
        assert_string_equal(l[1].id, "op-0501");
        assert_string_equal(l[499].id, "op-0003");
        char last[32];
        snprintf(last, sizeof(last), "%s", l[499].id);
        page = (struct store_page){ .after_ms = l[499].created_at_ms, .after_id = last, .limit = 500 };
        free(l);
        assert_int_equal(ops->operation_list(st, "sb-many", -1, false, NULL, &page, &l, &n), 0);
        assert_int_equal(n, 3);
        assert_string_equal(l[0].id, "op-0002");
        assert_string_equal(l[2].id, "op-0000");
        free(l);
        assert_int_equal(ops->operation_list(st, "sb-many", -1, false, NULL, NULL, &l, &n), 0);
        assert_int_equal(n, 503);
        free(l);
}

/* Every other list pages the same way, oldest first by (created_at, id). */
static void test_sandbox_list_pages(void **state)
{
        struct state_store *st = *state;
        for (int i = 0; i < 7; i++) {
                char id[32];
                snprintf(id, sizeof(id), "sb-%04d", 6 - i); /* ids against time: the order is created_at first */
                struct sandbox sb = store_fixture_sandbox(id, SANDBOX_RUNNING, 5000 + i / 3);
                struct operation op = store_fixture_operation(id, "sandbox.create", id, OPERATION_SUCCEEDED, 1);
                snprintf(op.id, sizeof(op.id), "op-c%d", i);
                assert_int_equal(ops->sandbox_insert(st, &sb, &op), 0);
                sandbox_release(&sb);
        }
        char seen[7][32];
        size_t total = 0;
        struct store_page page = { .limit = 2 }; /* pages end inside a millisecond: the id breaks the tie */
        char after[32] = "";
        for (int round = 0; round < 4; round++) {
                struct sandbox *l = NULL;
                size_t n = 0;
                assert_int_equal(ops->sandbox_list(st, -1, NULL, &page, &l, &n), 0);
                assert_true(n <= 2);
                for (size_t i = 0; i < n; i++) {
                        assert_true(total < 7);
                        snprintf(seen[total++], sizeof(seen[0]), "%s", l[i].id);
                }
                if (n) {
                        snprintf(after, sizeof(after), "%s", l[n - 1].id);
                        page.after_ms = l[n - 1].created_at_ms;
                        page.after_id = after;
                }
                sandbox_array_free(l, n);
        }
        assert_int_equal(total, 7);
        /* created_at 5000: sb-0006, sb-0005, sb-0004 sorted by id; then 5001: sb-0001..3; 5002: sb-0000 */
        const char *want[] = { "sb-0004", "sb-0005", "sb-0006", "sb-0001", "sb-0002", "sb-0003", "sb-0000" };
        for (int i = 0; i < 7; i++)
                assert_string_equal(seen[i], want[i]);
}

int store_conformance_sandboxes(const struct store_backend *b)
{
        ops = b->ops;
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_insert_get_round_trip, store_conformance_open, store_conformance_close),
                cmocka_unit_test_setup_teardown(test_insert_duplicate_sandbox, store_conformance_open, store_conformance_close),
                cmocka_unit_test_setup_teardown(test_insert_is_atomic, store_conformance_open, store_conformance_close),
                cmocka_unit_test_setup_teardown(test_unknown_ids, store_conformance_open, store_conformance_close),
                cmocka_unit_test_setup_teardown(test_list_and_filter, store_conformance_open, store_conformance_close),
                cmocka_unit_test_setup_teardown(test_transition_allowed, store_conformance_open, store_conformance_close),
                cmocka_unit_test_setup_teardown(test_transition_stale, store_conformance_open, store_conformance_close),
                cmocka_unit_test_setup_teardown(test_transition_rolls_back_on_duplicate_operation, store_conformance_open,
                                                store_conformance_close),
                cmocka_unit_test_setup_teardown(test_transition_is_compare_and_set_under_threads, store_conformance_open,
                                                store_conformance_close),
                cmocka_unit_test_setup_teardown(test_settle_writes_all_or_nothing, store_conformance_open,
                                                store_conformance_close),
                cmocka_unit_test_setup_teardown(test_snapshot_needed_by_operation, store_conformance_open,
                                                store_conformance_close),
                cmocka_unit_test_setup_teardown(test_purge_destroyed, store_conformance_open, store_conformance_close),
                cmocka_unit_test_setup_teardown(test_purge_finished_operations, store_conformance_open, store_conformance_close),
                cmocka_unit_test_setup_teardown(test_operation_refers, store_conformance_open, store_conformance_close),
                cmocka_unit_test_setup_teardown(test_set_runtime_and_expiry, store_conformance_open, store_conformance_close),
                cmocka_unit_test_setup_teardown(test_set_network, store_conformance_open, store_conformance_close),
                cmocka_unit_test_setup_teardown(test_idle_policy, store_conformance_open, store_conformance_close),
                cmocka_unit_test_setup_teardown(test_private_ports_round_trip, store_conformance_open, store_conformance_close),
                cmocka_unit_test_setup_teardown(test_operation_update_and_duplicate, store_conformance_open,
                                                store_conformance_close),
                cmocka_unit_test_setup_teardown(test_operation_list_filters, store_conformance_open, store_conformance_close),
                cmocka_unit_test_setup_teardown(test_operation_list_pages, store_conformance_open, store_conformance_close),
                cmocka_unit_test_setup_teardown(test_sandbox_list_pages, store_conformance_open, store_conformance_close),
        };
        return cmocka_run_group_tests_name("sandboxes", tests, NULL, NULL);
}
