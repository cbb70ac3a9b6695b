/* Conformance tests of a state_store backend (store_conformance.h), approvals: a hold writes
 * the approval and its pending_approval command together (or neither), get and list are
 * scoped by project and state and paged, and a decision moves a pending approval once. */
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

static const struct state_store_ops *ops; /* the backend under test, set by store_conformance_approvals() */

static void put_sandbox(struct state_store *st, const char *id, const char *project)
{
        struct sandbox sb = store_fixture_sandbox(id, SANDBOX_RUNNING, 1);
        snprintf(sb.project_id, sizeof(sb.project_id), "%s", project);
        assert_int_equal(ops->sandbox_insert(st, &sb, NULL), 0);
        sandbox_release(&sb);
}

static struct approval_record approval(const char *id, const char *project, const char *sandbox, const char *command, int64_t at)
{
        struct approval_record a = { .state = APPROVAL_PENDING, .created_at_ms = at, .expires_at_ms = at + 1000 };
        snprintf(a.id, sizeof(a.id), "%s", id);
        snprintf(a.project_id, sizeof(a.project_id), "%s", project);
        snprintf(a.sandbox_id, sizeof(a.sandbox_id), "%s", sandbox);
        snprintf(a.command_id, sizeof(a.command_id), "%s", command);
        snprintf(a.key_id, sizeof(a.key_id), "key-asker");
        snprintf(a.policy_id, sizeof(a.policy_id), "pol-1");
        snprintf(a.rule_id, sizeof(a.rule_id), "push");
        snprintf(a.reason, sizeof(a.reason), "command needs approval");
        a.request = json_pack("{s:[s,s]}", "argv", "git", "push");
        return a;
}

static struct command_record held(const char *id, const char *sandbox, const char *approval_id, int64_t at)
{
        struct command_record c = { .state = COMMAND_PENDING_APPROVAL, .created_at_ms = at };
        snprintf(c.id, sizeof(c.id), "%s", id);
        snprintf(c.sandbox_id, sizeof(c.sandbox_id), "%s", sandbox);
        snprintf(c.reason, sizeof(c.reason), "%s", approval_id);
        c.spec = json_pack("{s:[s,s]}", "cmd", "git", "push");
        return c;
}

static void hold(struct state_store *st, const char *id, const char *project, const char *sandbox, const char *command,
                 int64_t at)
{
        struct approval_record a = approval(id, project, sandbox, command, at);
        struct command_record c = held(command, sandbox, id, at);
        assert_int_equal(ops->approval_hold(st, &a, &c), 0);
        approval_record_release(&a);
        command_record_release(&c);
}

static void test_approval_hold_and_read(void **state)
{
        struct state_store *st = *state;
        put_sandbox(st, "sb-a", "pa");
        put_sandbox(st, "sb-b", "pb");
        hold(st, "apr-1", "pa", "sb-a", "cmd-1", 10);
        hold(st, "apr-2", "pa", "sb-a", "cmd-2", 20);
        hold(st, "apr-3", "pb", "sb-b", "cmd-3", 30);

        struct approval_record got = { 0 };
        assert_int_equal(ops->approval_get(st, "pa", "apr-1", &got), 0);
        assert_string_equal(got.command_id, "cmd-1");
        assert_string_equal(got.key_id, "key-asker");
        assert_string_equal(got.rule_id, "push");
        assert_int_equal(got.state, APPROVAL_PENDING);
        assert_int_equal(got.expires_at_ms, 1010);
        assert_string_equal(json_string_value(json_array_get(json_object_get(got.request, "argv"), 1)), "push");
        approval_record_release(&got);
        assert_int_equal(ops->approval_get(st, "pb", "apr-1", &got), -ENOENT); /* another project's */
        assert_int_equal(ops->approval_get(st, NULL, "apr-3", &got), 0);
        approval_record_release(&got);

        /* The command row came with it, pending, and is not an unfinished one (no channel ends it). */
        struct command_record c;
        assert_int_equal(ops->command_get(st, "sb-a", "cmd-1", &c), 0);
        assert_int_equal(c.state, COMMAND_PENDING_APPROVAL);
        assert_string_equal(c.reason, "apr-1");
        command_record_release(&c);
        struct command_record *cs = NULL;
        size_t n = 0;
        assert_int_equal(ops->command_list(st, "sb-a", true, NULL, &cs, &n), 0);
        assert_int_equal(n, 0);
        command_record_array_free(cs, n);

        /* A hold whose command cannot be written leaves no approval. */
        struct approval_record a = approval("apr-4", "pa", "sb-a", "cmd-1", 40);
        struct command_record dup = held("cmd-1", "sb-a", "apr-4", 40);
        assert_int_not_equal(ops->approval_hold(st, &a, &dup), 0);
        assert_int_equal(ops->approval_get(st, NULL, "apr-4", &got), -ENOENT);
        approval_record_release(&a);
        command_record_release(&dup);

        struct approval_record *all = NULL;
        assert_int_equal(ops->approval_list(st, "pa", -1, NULL, &all, &n), 0);
        assert_int_equal(n, 2);
        assert_string_equal(all[0].id, "apr-1");
        assert_string_equal(all[1].id, "apr-2");
        approval_record_array_free(all, n);
        assert_int_equal(ops->approval_list(st, NULL, APPROVAL_PENDING, NULL, &all, &n), 0);
        assert_int_equal(n, 3);
        approval_record_array_free(all, n);
        struct store_page page = { .after_ms = 10, .after_id = "apr-1", .limit = 1 };
        assert_int_equal(ops->approval_list(st, NULL, -1, &page, &all, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(all[0].id, "apr-2");
        approval_record_array_free(all, n);
}

static void test_approval_decide(void **state)
{
        struct state_store *st = *state;
        put_sandbox(st, "sb-a", "pa");
        hold(st, "apr-1", "pa", "sb-a", "cmd-1", 10);
        hold(st, "apr-2", "pa", "sb-a", "cmd-2", 20);
        assert_int_equal(ops->approval_decide(st, "apr-1", APPROVAL_APPROVED, "key-admin", "ship it", 50), 0);
        /* Decided once: a second decision (or the expiry) loses. */
        assert_int_equal(ops->approval_decide(st, "apr-1", APPROVAL_DENIED, "key-other", "no", 60), -EALREADY);
        assert_int_equal(ops->approval_decide(st, "apr-1", APPROVAL_EXPIRED, "", "", 70), -EALREADY);
        assert_int_equal(ops->approval_decide(st, "apr-none", APPROVAL_DENIED, "k", "", 70), -ENOENT);
        struct approval_record got = { 0 };
        assert_int_equal(ops->approval_get(st, "pa", "apr-1", &got), 0);
        assert_int_equal(got.state, APPROVAL_APPROVED);
        assert_string_equal(got.decided_by, "key-admin");
        assert_string_equal(got.comment, "ship it");
        assert_int_equal(got.decided_at_ms, 50);
        approval_record_release(&got);

        assert_int_equal(ops->approval_decide(st, "apr-2", APPROVAL_EXPIRED, NULL, NULL, 80), 0);
        struct approval_record *all = NULL;
        size_t n = 0;
        assert_int_equal(ops->approval_list(st, "pa", APPROVAL_PENDING, NULL, &all, &n), 0);
        assert_int_equal(n, 0);
        approval_record_array_free(all, n);
        assert_int_equal(ops->approval_list(st, "pa", APPROVAL_EXPIRED, NULL, &all, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(all[0].id, "apr-2");
        assert_string_equal(all[0].decided_by, "");
        approval_record_array_free(all, n);
}

int store_conformance_approvals(const struct store_backend *b)
{
        ops = b->ops;
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_approval_hold_and_read, store_conformance_open, store_conformance_close),
                cmocka_unit_test_setup_teardown(test_approval_decide, store_conformance_open, store_conformance_close),
        };
        return cmocka_run_group_tests_name("approvals", tests, NULL, NULL);
}
