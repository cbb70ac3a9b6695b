/* Conformance tests of a state_store backend (store_conformance.h), secrets: one data key
 * per project (the first one stored wins), sealed values unique by name in their project,
 * and credential bindings on a project or one sandbox. */
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

static const struct state_store_ops *ops; /* the backend under test, set by store_conformance_secrets() */

static void test_data_key(void **state)
{
        struct state_store *st = *state;
        char *got = NULL;
        assert_int_equal(ops->secret_data_key(st, "pa", "sealed-1", &got), 0);
        assert_string_equal(got, "sealed-1");
        free(got);
        assert_int_equal(ops->secret_data_key(st, "pa", "sealed-2", &got), 0);
        assert_string_equal(got, "sealed-1"); /* the first one stays */
        free(got);
        assert_int_equal(ops->secret_data_key(st, "pb", "sealed-3", &got), 0);
        assert_string_equal(got, "sealed-3");
        free(got);
}

static struct secret_record secret(const char *id, const char *project, const char *name, int64_t at)
{
        struct secret_record s = { .created_at_ms = at, .sealed = (char *)"c2VhbGVk" };
        snprintf(s.id, sizeof(s.id), "%s", id);
        snprintf(s.project_id, sizeof(s.project_id), "%s", project);
        snprintf(s.name, sizeof(s.name), "%s", name);
        return s;
}

static void test_secret_verbs(void **state)
{
        struct state_store *st = *state;
        struct secret_record a = secret("sec-a", "pa", "GITHUB", 10), b = secret("sec-b", "pa", "NPM", 20),
                             c = secret("sec-c", "pb", "GITHUB", 5), dup = secret("sec-d", "pa", "GITHUB", 30);
        assert_int_equal(ops->secret_insert(st, &a), 0);
        assert_int_equal(ops->secret_insert(st, &b), 0);
        assert_int_equal(ops->secret_insert(st, &c), 0); /* the same name in another project */
        assert_int_equal(ops->secret_insert(st, &dup), -EEXIST);

        struct secret_record got = { 0 };
        assert_int_equal(ops->secret_get(st, "pa", "NPM", &got), 0);
        assert_string_equal(got.id, "sec-b");
        assert_string_equal(got.sealed, "c2VhbGVk");
        assert_int_equal(got.created_at_ms, 20);
        secret_record_release(&got);
        assert_int_equal(ops->secret_get(st, "pb", "NPM", &got), -ENOENT);

        struct secret_record *all = NULL;
        size_t n = 0;
        assert_int_equal(ops->secret_list(st, "pa", &all, &n), 0);
        assert_int_equal(n, 2);
        assert_string_equal(all[0].name, "GITHUB");
        assert_string_equal(all[1].name, "NPM");
        secret_record_array_free(all, n);

        assert_int_equal(ops->secret_delete(st, "pb", "NPM"), -ENOENT);
        assert_int_equal(ops->secret_delete(st, "pa", "GITHUB"), 0);
        assert_int_equal(ops->secret_delete(st, "pa", "GITHUB"), -ENOENT);
        assert_int_equal(ops->secret_get(st, "pb", "GITHUB", &got), 0); /* the other project's stays */
        secret_record_release(&got);
}

static struct binding_record binding(const char *id, const char *project, const char *sandbox, int64_t at)
{
        struct binding_record b = { .created_at_ms = at };
        snprintf(b.id, sizeof(b.id), "%s", id);
        snprintf(b.project_id, sizeof(b.project_id), "%s", project);
        snprintf(b.sandbox_id, sizeof(b.sandbox_id), "%s", sandbox);
        snprintf(b.secret_name, sizeof(b.secret_name), "GITHUB");
        b.spec = json_pack("{s:s, s:s}", "destination", "api.example.com", "format", "bearer");
        return b;
}

static void test_binding_verbs(void **state)
{
        struct state_store *st = *state;
        struct binding_record p = binding("bnd-p", "pa", "", 10), s1 = binding("bnd-1", "pa", "sbx-1", 20),
                              s2 = binding("bnd-2", "pa", "sbx-2", 30), o = binding("bnd-o", "pb", "", 5);
        assert_int_equal(ops->binding_insert(st, &p), 0);
        assert_int_equal(ops->binding_insert(st, &s1), 0);
        assert_int_equal(ops->binding_insert(st, &s2), 0);
        assert_int_equal(ops->binding_insert(st, &o), 0);
        assert_int_equal(ops->binding_insert(st, &o), -EEXIST);

        struct binding_record *all = NULL;
        size_t n = 0;
        assert_int_equal(ops->binding_list(st, "pa", NULL, &all, &n), 0);
        assert_int_equal(n, 3);
        binding_record_array_free(all, n);
        assert_int_equal(ops->binding_list(st, NULL, NULL, &all, &n), 0);
        assert_int_equal(n, 4); /* every project's */
        binding_record_array_free(all, n);
        assert_int_equal(ops->binding_list(st, "pa", "sbx-1", &all, &n), 0);
        assert_int_equal(n, 2); /* the project's and its own */
        assert_string_equal(all[0].id, "bnd-p");
        assert_string_equal(all[1].id, "bnd-1");
        assert_string_equal(all[1].sandbox_id, "sbx-1");
        assert_string_equal(all[1].secret_name, "GITHUB");
        assert_string_equal(json_string_value(json_object_get(all[1].spec, "destination")), "api.example.com");
        binding_record_array_free(all, n);

        assert_int_equal(ops->binding_delete(st, "pb", "bnd-1"), -ENOENT);
        assert_int_equal(ops->binding_delete(st, "pa", "bnd-1"), 0);
        assert_int_equal(ops->binding_delete(st, "pa", "bnd-1"), -ENOENT);
        assert_int_equal(ops->binding_list(st, "pa", "sbx-1", &all, &n), 0);
        assert_int_equal(n, 1);
        binding_record_array_free(all, n);
        binding_record_release(&p);
        binding_record_release(&s1);
        binding_record_release(&s2);
        binding_record_release(&o);
}

int store_conformance_secrets(const struct store_backend *b)
{
        ops = b->ops;
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_data_key, store_conformance_open, store_conformance_close),
                cmocka_unit_test_setup_teardown(test_secret_verbs, store_conformance_open, store_conformance_close),
                cmocka_unit_test_setup_teardown(test_binding_verbs, store_conformance_open, store_conformance_close),
        };
        return cmocka_run_group_tests_name("secrets", tests, NULL, NULL);
}
