/* Conformance tests of a state_store backend (store_conformance.h): templates and API keys. */
#include <errno.h>
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

static const struct state_store_ops *ops; /* the backend under test, set by store_conformance_catalog() */

static int upsert(struct state_store *st, const char *name, const char *state, json_t *env, const char *reason, int64_t at)
{
        struct template_record t = { .environment = env, .updated_at_ms = at };
        snprintf(t.name, sizeof(t.name), "%s", name);
        snprintf(t.state, sizeof(t.state), "%s", state);
        snprintf(t.state_reason, sizeof(t.state_reason), "%s", reason);
        return ops->template_upsert(st, &t);
}

static struct api_key key(const char *id, const char *name, char hash_digit, int64_t created)
{
        struct api_key k = { .created_at_ms = created, .last_used_at_ms = 12345 };
        snprintf(k.id, sizeof(k.id), "%s", id);
        snprintf(k.name, sizeof(k.name), "%s", name);
        memset(k.hash, hash_digit, 64);
        k.hash[64] = '\0';
        return k;
}

static void test_template_upsert_get(void **state)
{
        struct state_store *st = *state;
        json_t *empty = json_object();
        assert_int_equal(upsert(st, "debian", "not_built", empty, "", 100), 0);
        json_decref(empty);

        struct template_record t;
        assert_int_equal(ops->template_get(st, "debian", &t), 0);
        assert_string_equal(t.name, "debian");
        assert_string_equal(t.state, "not_built");
        assert_string_equal(t.state_reason, "");
        assert_int_equal(json_object_size(t.environment), 0);
        assert_int_equal(t.updated_at_ms, 100);
        template_record_release(&t);
        assert_null(t.environment);

        /* Upsert of an existing name replaces state, environment, reason and time. */
        json_t *env = json_pack("{s:s, s:s}", "driver", "namespaces", "digest", "sha256:ab");
        assert_int_equal(upsert(st, "debian", "failed", env, "debootstrap exited with 1", 200), 0);
        assert_int_equal(ops->template_get(st, "debian", &t), 0);
        assert_string_equal(t.state, "failed");
        assert_string_equal(t.state_reason, "debootstrap exited with 1");
        assert_true(json_equal(t.environment, env));
        assert_int_equal(t.updated_at_ms, 200);
        template_record_release(&t);
        json_decref(env);

        /* updated_at 0 means "now". */
        int64_t before = wallclock_now_ms();
        assert_int_equal(upsert(st, "debian", "ready", NULL, "", 0), 0);
        assert_int_equal(ops->template_get(st, "debian", &t), 0);
        assert_true(t.updated_at_ms >= before);
        assert_non_null(t.environment); /* a NULL environment is stored as {} */
        assert_int_equal(json_object_size(t.environment), 0);
        template_record_release(&t);
}

static void test_template_list_delete(void **state)
{
        struct state_store *st = *state;
        json_t *empty = json_object();
        assert_int_equal(upsert(st, "zeta", "ready", empty, "", 1), 0);
        assert_int_equal(upsert(st, "busybox", "ready", empty, "", 2), 0);
        assert_int_equal(upsert(st, "debian", "building", empty, "", 3), 0);
        json_decref(empty);

        struct template_record *all = NULL;
        size_t n = 0;
        assert_int_equal(ops->template_list(st, NULL, NULL, &all, &n), 0);
        assert_int_equal(n, 3);
        assert_string_equal(all[0].name, "busybox"); /* by name */
        assert_string_equal(all[1].name, "debian");
        assert_string_equal(all[2].name, "zeta");
        for (size_t i = 0; i < n; i++)
                template_record_release(&all[i]);
        free(all);

        assert_int_equal(ops->template_delete(st, "zeta"), 0);
        assert_int_equal(ops->template_delete(st, "zeta"), -ENOENT);
        struct template_record t;
        memset(&t, 0x5a, sizeof(t));
        assert_int_equal(ops->template_get(st, "zeta", &t), -ENOENT);
        assert_int_equal((unsigned char)t.name[0], 0x5a);
        assert_int_equal(ops->template_list(st, NULL, NULL, &all, &n), 0);
        assert_int_equal(n, 2);
        for (size_t i = 0; i < n; i++)
                template_record_release(&all[i]);
        free(all);
}

static void test_template_list_empty(void **state)
{
        struct template_record *all = NULL;
        size_t n = 99;
        assert_int_equal(ops->template_list(*state, NULL, NULL, &all, &n), 0);
        assert_int_equal(n, 0);
        free(all);
}

static void test_key_insert_list_count(void **state)
{
        struct state_store *st = *state;
        int64_t count = -1;
        assert_int_equal(ops->key_count(st, &count), 0);
        assert_int_equal(count, 0);

        struct api_key a = key("key-b", "admin", 'a', 20), b = key("key-a", "ci", 'b', 10);
        assert_int_equal(ops->key_insert(st, &a), 0);
        assert_int_equal(ops->key_insert(st, &b), 0);
        assert_int_equal(ops->key_count(st, &count), 0);
        assert_int_equal(count, 2);

        struct api_key *keys = NULL;
        size_t n = 0;
        assert_int_equal(ops->key_list(st, NULL, NULL, &keys, &n), 0);
        assert_int_equal(n, 2);
        assert_string_equal(keys[0].id, "key-a"); /* oldest first */
        assert_string_equal(keys[0].name, "ci");
        assert_string_equal(keys[0].hash, b.hash);
        assert_int_equal(keys[0].created_at_ms, 10);
        assert_int_equal(keys[0].last_used_at_ms, 0); /* never used, whatever the caller passed */
        assert_string_equal(keys[1].id, "key-b");
        free(keys);
}

static void test_key_duplicates(void **state)
{
        struct state_store *st = *state;
        struct api_key a = key("key-1", "one", 'a', 1);
        assert_int_equal(ops->key_insert(st, &a), 0);
        struct api_key same_id = key("key-1", "two", 'b', 2);
        assert_int_equal(ops->key_insert(st, &same_id), -EEXIST);
        struct api_key same_hash = key("key-2", "three", 'a', 3);
        assert_int_equal(ops->key_insert(st, &same_hash), -EEXIST);
        /* Names need not be unique. */
        struct api_key same_name = key("key-3", "one", 'c', 4);
        assert_int_equal(ops->key_insert(st, &same_name), 0);
        int64_t count = 0;
        assert_int_equal(ops->key_count(st, &count), 0);
        assert_int_equal(count, 2);
}

static void test_key_authenticate(void **state)
{
        struct state_store *st = *state;
        struct api_key a = key("key-auth", "ci", 'f', 1);
        assert_int_equal(ops->key_insert(st, &a), 0);

        struct api_key got;
        memset(&got, 0x5a, sizeof(got));
        char unknown[65];
        memset(unknown, 'e', 64);
        unknown[64] = '\0';
        assert_int_equal(ops->key_authenticate(st, unknown, &got), -ENOENT);
        assert_int_equal((unsigned char)got.id[0], 0x5a);

        int64_t before = wallclock_now_ms();
        assert_int_equal(ops->key_authenticate(st, a.hash, &got), 0);
        assert_string_equal(got.id, "key-auth");
        assert_string_equal(got.name, "ci");
        /* The use is recorded (seen by the next read). */
        struct api_key *keys = NULL;
        size_t n = 0;
        assert_int_equal(ops->key_list(st, NULL, NULL, &keys, &n), 0);
        assert_int_equal(n, 1);
        assert_true(keys[0].last_used_at_ms >= before);
        int64_t used = keys[0].last_used_at_ms;
        free(keys);
        assert_int_equal(ops->key_authenticate(st, a.hash, &got), 0);
        assert_int_equal(got.last_used_at_ms, used);

        /* A hash is matched exactly, not as a prefix or case-insensitively. */
        char upper[65];
        memcpy(upper, a.hash, sizeof(upper));
        upper[0] = 'F';
        assert_int_equal(ops->key_authenticate(st, upper, &got), -ENOENT);
        assert_int_equal(ops->key_authenticate(st, "ffff", &got), -ENOENT);
        assert_int_equal(ops->key_authenticate(st, "", &got), -ENOENT);
}

static void test_key_delete(void **state)
{
        struct state_store *st = *state;
        struct api_key a = key("key-del", "ci", '1', 1);
        assert_int_equal(ops->key_insert(st, &a), 0);
        assert_int_equal(ops->key_delete(st, "key-del", 1), 0);
        assert_int_equal(ops->key_delete(st, "key-del", 1), -ENOENT);
        assert_int_equal(ops->key_delete(st, "key-never", 1), -ENOENT);
        struct api_key got;
        assert_int_equal(ops->key_authenticate(st, a.hash, &got), -ENOENT);
        int64_t count = -1;
        assert_int_equal(ops->key_count(st, &count), 0);
        assert_int_equal(count, 0);
}

int store_conformance_catalog(const struct store_backend *b)
{
        ops = b->ops;
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_template_upsert_get, store_conformance_open, store_conformance_close),
                cmocka_unit_test_setup_teardown(test_template_list_delete, store_conformance_open, store_conformance_close),
                cmocka_unit_test_setup_teardown(test_template_list_empty, store_conformance_open, store_conformance_close),
                cmocka_unit_test_setup_teardown(test_key_insert_list_count, store_conformance_open, store_conformance_close),
                cmocka_unit_test_setup_teardown(test_key_duplicates, store_conformance_open, store_conformance_close),
                cmocka_unit_test_setup_teardown(test_key_authenticate, store_conformance_open, store_conformance_close),
                cmocka_unit_test_setup_teardown(test_key_delete, store_conformance_open, store_conformance_close),
        };
        return cmocka_run_group_tests_name("catalog", tests, NULL, NULL);
}
