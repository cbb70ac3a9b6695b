/* Unit tests of e2b_file_meta: X-Metadata- headers as envd takes them, and their JSON. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "e2b/e2b_file_meta.h"

static struct e2b_file_meta *meta_new(void)
{
        struct e2b_file_meta *m = calloc(1, sizeof(*m));
        assert_non_null(m);
        return m;
}

static void test_headers_become_lowercased_pairs(void **state)
{
        struct e2b_file_meta *m = meta_new();
        struct space_error err = { 0 };
        assert_int_equal(e2b_file_meta_add_header(m, "Content-Type", "text/plain", &err), 0);
        assert_int_equal(m->len, 0);
        assert_int_equal(e2b_file_meta_add_header(m, "X-Metadata-Author", "Ada L.", &err), 0);
        assert_int_equal(e2b_file_meta_add_header(m, "x-metadata-empty", "", &err), 0);
        /* A key seen again (in any case) keeps its first value. */
        assert_int_equal(e2b_file_meta_add_header(m, "X-METADATA-AUTHOR", "someone else", &err), 0);
        static const char want[] = "author\0Ada L.\0empty\0"; /* and the empty value's NUL */
        assert_int_equal(m->len, sizeof(want));
        assert_memory_equal(m->pairs, want, m->len);
        json_t *j = e2b_file_meta_render_new(m->pairs, m->len);
        assert_non_null(j);
        assert_int_equal(json_object_size(j), 2);
        assert_string_equal(json_string_value(json_object_get(j, "author")), "Ada L.");
        assert_string_equal(json_string_value(json_object_get(j, "empty")), "");
        json_decref(j);
        assert_null(e2b_file_meta_render_new(m->pairs, 0));
        free(m);
}

static void test_limits_as_envd(void **state)
{
        struct e2b_file_meta *m = meta_new();
        struct space_error err = { 0 };
        char name[300], value[4200];
        assert_true(e2b_file_meta_add_header(m, "X-Metadata-", "v", &err) < 0);
        assert_int_equal(err.code, SPACE_E_INVALID_REQUEST);
        assert_true(e2b_file_meta_add_header(m, "X-Metadata-k", "caf\xc3\xa9", &err) < 0);
        assert_true(e2b_file_meta_add_header(m, "X-Metadata-k", "tab\there", &err) < 0);
        snprintf(name, sizeof(name), "X-Metadata-%0247d", 0);
        assert_true(e2b_file_meta_add_header(m, name, "v", &err) < 0);
        assert_int_equal(m->len, 0);
        /* 4096 bytes in all, "user.e2b." counted per key: a 246-byte key leaves 3841. */
        snprintf(name, sizeof(name), "X-Metadata-%0246d", 0);
        memset(value, 'v', 3842);
        value[3842] = '\0';
        assert_true(e2b_file_meta_add_header(m, name, value, &err) < 0);
        free(m);
        m = meta_new();
        value[3841] = '\0';
        assert_int_equal(e2b_file_meta_add_header(m, name, value, &err), 0);
        assert_true(e2b_file_meta_add_header(m, "X-Metadata-more", "", &err) < 0);
        free(m);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_headers_become_lowercased_pairs),
                cmocka_unit_test(test_limits_as_envd),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
