/* Conformance tests of a state_store backend (store_conformance.h), projects: the projects verbs, every
 * row's project (given, or inherited from its sandbox or target), and the project filter
 * of the list verbs. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "store_conformance.h"
#include "store_fixture.h"

static const struct state_store_ops *ops; /* the backend under test, set by store_conformance_projects() */

static void put_sandbox(struct state_store *st, const char *id, const char *project, const char *parent, int64_t at)
{
        struct sandbox sb = store_fixture_sandbox(id, SANDBOX_RUNNING, at);
        char op_id[32];
        snprintf(sb.project_id, sizeof(sb.project_id), "%s", project);
        snprintf(sb.parent_sandbox_id, sizeof(sb.parent_sandbox_id), "%s", parent);
        snprintf(op_id, sizeof(op_id), "op-%s", id);
        struct operation op = store_fixture_operation(op_id, "sandbox.create", id, OPERATION_PENDING, at);
        assert_int_equal(ops->sandbox_insert(st, &sb, &op), 0);
        sandbox_release(&sb);
}

static void test_project_verbs(void **state)
{
        struct state_store *st = *state;
        struct project p = { .created_at_ms = 5 }, got;
        assert_int_equal(ops->project_get(st, PROJECT_DEFAULT, &got), 0); /* there from the start */
        snprintf(p.id, sizeof(p.id), "team-a");
        assert_int_equal(ops->project_insert(st, &p), 0);
        assert_int_equal(ops->project_insert(st, &p), -EEXIST);
        assert_int_equal(ops->project_get(st, "team-a", &got), 0);
        assert_int_equal(got.created_at_ms, 5);
        assert_int_equal(ops->project_get(st, "team-b", &got), -ENOENT);
        struct project *all = NULL;
        size_t n = 0;
        assert_int_equal(ops->project_list(st, NULL, NULL, &all, &n), 0);
        assert_int_equal(n, 2);
        assert_string_equal(all[0].id, "team-a"); /* oldest first: made at 5 ms */
        assert_string_equal(all[1].id, PROJECT_DEFAULT);
        free(all);
        /* One project's only; pages in (created_at, id) order. */
        assert_int_equal(ops->project_list(st, "team-a", NULL, &all, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(all[0].id, "team-a");
        free(all);
        struct store_page page = { .limit = 1 };
        assert_int_equal(ops->project_list(st, NULL, &page, &all, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(all[0].id, "team-a");
        page.after_ms = all[0].created_at_ms;
        page.after_id = "team-a";
        free(all);
        assert_int_equal(ops->project_list(st, NULL, &page, &all, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(all[0].id, PROJECT_DEFAULT);
        free(all);
        page.after_ms = INT64_MAX;
        assert_int_equal(ops->project_list(st, NULL, &page, &all, &n), 0);
        assert_int_equal(n, 0);
        free(all);
}

static void test_rows_carry_their_project(void **state)
{
        struct state_store *st = *state;
        put_sandbox(st, "sb-a", "pa", "", 1);
        put_sandbox(st, "sb-b", "pb", "", 2);
        put_sandbox(st, "sb-fork", "", "sb-a", 3); /* a fork given none: its parent's */
        struct sandbox sb;
        assert_int_equal(ops->sandbox_get(st, "sb-fork", &sb), 0);
        assert_string_equal(sb.project_id, "pa");
        sandbox_release(&sb);
        struct operation op;
        assert_int_equal(ops->operation_get(st, "op-sb-b", &op), 0);
        assert_string_equal(op.project_id, "pb"); /* its target's */

        struct snapshot snap = { .bytes_exclusive = -1, .created_at_ms = 4 };
        snprintf(snap.id, sizeof(snap.id), "snap-a");
        snprintf(snap.sandbox_id, sizeof(snap.sandbox_id), "sb-a");
        snprintf(snap.state, sizeof(snap.state), "ready");
        snprintf(snap.kind, sizeof(snap.kind), "filesystem");
        assert_int_equal(ops->insert_batch(st, NULL, 0, &snap, 1, NULL), 0);
        struct snapshot got;
        assert_int_equal(ops->snapshot_get(st, "snap-a", &got), 0);
        assert_string_equal(got.project_id, "pa");
        snprintf(snap.id, sizeof(snap.id), "snap-imported");
        snap.sandbox_id[0] = '\0';
        snprintf(snap.project_id, sizeof(snap.project_id), "pb");
        assert_int_equal(ops->insert_batch(st, NULL, 0, &snap, 1, NULL), 0);
        assert_int_equal(ops->snapshot_get(st, "snap-imported", &got), 0);
        assert_string_equal(got.project_id, "pb");
        snprintf(snap.id, sizeof(snap.id), "snap-orphan");
        snap.project_id[0] = '\0';
        assert_int_equal(ops->insert_batch(st, NULL, 0, &snap, 1, NULL), 0);
        assert_int_equal(ops->snapshot_get(st, "snap-orphan", &got), 0);
        assert_string_equal(got.project_id, ""); /* nobody's: only the platform sees it */

        struct template_record t = { .environment = json_object(), .updated_at_ms = 1 };
        snprintf(t.name, sizeof(t.name), "mine:1");
        snprintf(t.state, sizeof(t.state), "building");
        snprintf(t.project_id, sizeof(t.project_id), "pa");
        assert_int_equal(ops->template_upsert(st, &t), 0);
        snprintf(t.state, sizeof(t.state), "ready");
        snprintf(t.project_id, sizeof(t.project_id), "pb");
        assert_int_equal(ops->template_upsert(st, &t), 0); /* a rewrite never moves it */
        json_decref(t.environment);
        struct template_record tg;
        assert_int_equal(ops->template_get(st, "mine:1", &tg), 0);
        assert_string_equal(tg.project_id, "pa");
        assert_string_equal(tg.state, "ready");
        template_record_release(&tg);
        struct operation build = store_fixture_operation("op-build", "template.build", "mine:1", OPERATION_PENDING, 9);
        assert_int_equal(ops->operation_insert(st, &build), 0);
        assert_int_equal(ops->operation_get(st, "op-build", &op), 0);
        assert_string_equal(op.project_id, "pa");

        struct attach_session ses = { .created_at_ms = 1, .expires_at_ms = 2 };
        snprintf(ses.id, sizeof(ses.id), "ses-a");
        snprintf(ses.sandbox_id, sizeof(ses.sandbox_id), "sb-a");
        snprintf(ses.token_hash, sizeof(ses.token_hash), "hash-a");
        assert_int_equal(ops->session_insert(st, &ses), 0);
        struct attach_session sg;
        assert_int_equal(ops->session_get(st, "ses-a", &sg), 0);
        assert_string_equal(sg.project_id, "pa");
}

static void test_lists_filter_by_project(void **state)
{
        struct state_store *st = *state;
        put_sandbox(st, "sb-a1", "pa", "", 1);
        put_sandbox(st, "sb-b1", "pb", "", 2);
        put_sandbox(st, "sb-a2", "pa", "", 3);
        struct sandbox *all = NULL;
        size_t n = 0;
        assert_int_equal(ops->sandbox_list(st, -1, "pa", NULL, &all, &n), 0);
        assert_int_equal(n, 2);
        assert_string_equal(all[0].id, "sb-a1");
        assert_string_equal(all[1].id, "sb-a2");
        sandbox_array_free(all, n);
        assert_int_equal(ops->sandbox_list(st, SANDBOX_RUNNING, "pb", NULL, &all, &n), 0);
        assert_int_equal(n, 1);
        sandbox_array_free(all, n);
        assert_int_equal(ops->sandbox_list(st, -1, NULL, NULL, &all, &n), 0);
        assert_int_equal(n, 3);
        sandbox_array_free(all, n);
        assert_int_equal(ops->sandbox_list(st, -1, "pc", NULL, &all, &n), 0);
        assert_int_equal(n, 0);
        sandbox_array_free(all, n);

        struct operation *opl = NULL;
        assert_int_equal(ops->operation_list(st, NULL, -1, false, "pb", NULL, &opl, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(opl[0].target, "sb-b1");
        free(opl);
        assert_int_equal(ops->operation_list(st, NULL, -1, true, "pb", NULL, &opl, &n), 0);
        assert_int_equal(n, 3); /* unfinished_only is the reconciler's: every project */
        free(opl);

        struct template_record t = { .environment = json_object(), .updated_at_ms = 1 };
        snprintf(t.state, sizeof(t.state), "ready");
        snprintf(t.name, sizeof(t.name), "busybox"); /* shared */
        assert_int_equal(ops->template_upsert(st, &t), 0);
        snprintf(t.name, sizeof(t.name), "a-only");
        snprintf(t.project_id, sizeof(t.project_id), "pa");
        assert_int_equal(ops->template_upsert(st, &t), 0);
        json_decref(t.environment);
        struct template_record *tl = NULL;
        assert_int_equal(ops->template_list(st, "pb", NULL, &tl, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(tl[0].name, "busybox");
        for (size_t i = 0; i < n; i++)
                template_record_release(&tl[i]);
        free(tl);
        assert_int_equal(ops->template_list(st, "pa", NULL, &tl, &n), 0);
        assert_int_equal(n, 2);
        for (size_t i = 0; i < n; i++)
                template_record_release(&tl[i]);
        free(tl);

        struct api_key k = { .created_at_ms = 1, .permissions = 7 };
        snprintf(k.id, sizeof(k.id), "key-a");
        snprintf(k.hash, sizeof(k.hash), "ha");
        snprintf(k.project_id, sizeof(k.project_id), "pa");
        snprintf(k.role, sizeof(k.role), "viewer");
        k.expires_at_ms = 99;
        assert_int_equal(ops->key_insert(st, &k), 0);
        snprintf(k.id, sizeof(k.id), "key-b");
        snprintf(k.hash, sizeof(k.hash), "hb");
        snprintf(k.project_id, sizeof(k.project_id), "pb");
        assert_int_equal(ops->key_insert(st, &k), 0);
        struct api_key *kl = NULL;
        assert_int_equal(ops->key_list(st, "pa", NULL, &kl, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(kl[0].id, "key-a");
        assert_string_equal(kl[0].role, "viewer");
        assert_int_equal(kl[0].permissions, 7);
        assert_int_equal(kl[0].expires_at_ms, 99);
        free(kl);
        struct api_key kg;
        assert_int_equal(ops->key_get(st, "key-b", &kg), 0);
        assert_string_equal(kg.project_id, "pb");
        assert_int_equal(ops->key_get(st, "key-c", &kg), -ENOENT);
}

int store_conformance_projects(const struct store_backend *b)
{
        ops = b->ops;
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_project_verbs, store_conformance_open, store_conformance_close),
                cmocka_unit_test_setup_teardown(test_rows_carry_their_project, store_conformance_open, store_conformance_close),
                cmocka_unit_test_setup_teardown(test_lists_filter_by_project, store_conformance_open, store_conformance_close),
        };
        return cmocka_run_group_tests_name("projects", tests, NULL, NULL);
}
