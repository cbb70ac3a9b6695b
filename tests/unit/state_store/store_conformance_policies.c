/* Conformance tests of a state_store backend (store_conformance.h), policies: insert, get,
 * list, update and delete of policy documents, each scoped to its project; a name unique
 * in its project; an update as a compare-and-set on the version. */
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

static const struct state_store_ops *ops; /* the backend under test, set by store_conformance_policies() */

static struct policy_record record(const char *id, const char *project, const char *name, int64_t at)
{
        struct policy_record p = { .version = 1, .created_at_ms = at, .updated_at_ms = at };
        snprintf(p.id, sizeof(p.id), "%s", id);
        snprintf(p.project_id, sizeof(p.project_id), "%s", project);
        snprintf(p.name, sizeof(p.name), "%s", name);
        p.document = json_pack("{s:s, s:s}", "name", name, "default", "allow");
        return p;
}

static void test_policy_verbs(void **state)
{
        struct state_store *st = *state;
        struct policy_record a = record("pol-a", "pa", "one", 10), b = record("pol-b", "pa", "two", 20),
                             c = record("pol-c", "pb", "one", 15);
        snprintf(b.sandbox_id, sizeof(b.sandbox_id), "sbx-1");
        assert_int_equal(ops->policy_insert(st, &a), 0);
        assert_int_equal(ops->policy_insert(st, &b), 0);
        assert_int_equal(ops->policy_insert(st, &c), 0); /* the same name in another project */
        struct policy_record dup = record("pol-d", "pa", "one", 30);
        assert_int_equal(ops->policy_insert(st, &dup), -EEXIST);
        policy_record_release(&dup);

        struct policy_record got = { 0 };
        assert_int_equal(ops->policy_get(st, "pa", "pol-b", &got), 0);
        assert_string_equal(got.name, "two");
        assert_string_equal(got.sandbox_id, "sbx-1");
        assert_int_equal(got.version, 1);
        assert_int_equal(got.created_at_ms, 20);
        assert_string_equal(json_string_value(json_object_get(got.document, "default")), "allow");
        policy_record_release(&got);
        assert_int_equal(ops->policy_get(st, "pb", "pol-b", &got), -ENOENT); /* another project's */
        assert_int_equal(ops->policy_get(st, NULL, "pol-b", &got), 0);
        policy_record_release(&got);

        struct policy_record *all = NULL;
        size_t n = 0;
        assert_int_equal(ops->policy_list(st, "pa", &all, &n), 0);
        assert_int_equal(n, 2);
        assert_string_equal(all[0].id, "pol-a"); /* by creation */
        assert_string_equal(all[1].id, "pol-b");
        policy_record_array_free(all, n);
        assert_int_equal(ops->policy_list(st, NULL, &all, &n), 0);
        assert_int_equal(n, 3);
        assert_string_equal(all[1].id, "pol-c");
        policy_record_array_free(all, n);
        assert_int_equal(ops->policy_list(st, "none", &all, &n), 0);
        assert_int_equal(n, 0);
        policy_record_array_free(all, n);

        /* Update: the next version only; a taken name; another project's row. */
        json_decref(a.document);
        a.document = json_pack("{s:s, s:s}", "name", "uno", "default", "deny");
        snprintf(a.name, sizeof(a.name), "uno");
        a.version = 2;
        a.updated_at_ms = 40;
        assert_int_equal(ops->policy_update(st, &a), 0);
        assert_int_equal(ops->policy_update(st, &a), -ESTALE); /* version 2 is there already */
        assert_int_equal(ops->policy_get(st, "pa", "pol-a", &got), 0);
        assert_string_equal(got.name, "uno");
        assert_int_equal(got.version, 2);
        assert_int_equal(got.created_at_ms, 10);
        assert_int_equal(got.updated_at_ms, 40);
        assert_string_equal(json_string_value(json_object_get(got.document, "default")), "deny");
        policy_record_release(&got);
        snprintf(a.name, sizeof(a.name), "two");
        a.version = 3;
        assert_int_equal(ops->policy_update(st, &a), -EEXIST);
        snprintf(a.project_id, sizeof(a.project_id), "pb");
        snprintf(a.name, sizeof(a.name), "uno");
        assert_int_equal(ops->policy_update(st, &a), -ENOENT);

        assert_int_equal(ops->policy_delete(st, "pb", "pol-a"), -ENOENT);
        assert_int_equal(ops->policy_delete(st, "pa", "pol-a"), 0);
        assert_int_equal(ops->policy_delete(st, "pa", "pol-a"), -ENOENT);
        assert_int_equal(ops->policy_get(st, NULL, "pol-a", &got), -ENOENT);
        policy_record_release(&a);
        policy_record_release(&b);
        policy_record_release(&c);
}

int store_conformance_policies(const struct store_backend *b)
{
        ops = b->ops;
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_policy_verbs, store_conformance_open, store_conformance_close),
        };
        return cmocka_run_group_tests_name("policies", tests, NULL, NULL);
}
