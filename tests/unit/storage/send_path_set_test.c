/* Unit tests of the path set that follows a stream's symlinks through renames. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "storage/send_path_set.h"

#define HAS(set, s) send_path_set_contains(set, s, strlen(s))

static void test_add_remove_move(void **state)
{
        struct send_path_set *set;
        assert_int_equal(send_path_set_new(1 << 20, &set), 0);
        assert_int_equal(send_path_set_add(set, "a/b/l", 5), 0);
        assert_int_equal(send_path_set_add(set, "a/c", 3), 0);
        assert_int_equal(send_path_set_add(set, "ab", 2), 0);
        assert_true(HAS(set, "a/b/l") && HAS(set, "a/c") && HAS(set, "ab"));
        assert_false(HAS(set, "a") || HAS(set, "a/b"));
        /* A directory above two of them moves: they move with it, "ab" does not. */
        assert_int_equal(send_path_set_move(set, "a", 1, "z/y", 3), 0);
        assert_true(HAS(set, "z/y/b/l") && HAS(set, "z/y/c") && HAS(set, "ab"));
        assert_false(HAS(set, "a/b/l") || HAS(set, "a/c"));
        /* The path itself moves. */
        assert_int_equal(send_path_set_move(set, "z/y/c", 5, "c", 1), 0);
        assert_true(HAS(set, "c"));
        assert_false(HAS(set, "z/y/c"));
        send_path_set_remove(set, "c", 1);
        assert_false(HAS(set, "c"));
        assert_int_equal(send_path_set_count(set), 2);
        /* Nothing below: nothing moves. */
        assert_int_equal(send_path_set_move(set, "q", 1, "r", 1), 0);
        assert_int_equal(send_path_set_count(set), 2);
        send_path_set_free(set);
}

static void test_many(void **state)
{
        struct send_path_set *set;
        char p[64];
        assert_int_equal(send_path_set_new(1 << 20, &set), 0);
        for (int i = 0; i < 20000; i++) {
                int n = snprintf(p, sizeof(p), "d%d/l%d", i % 7, i);
                assert_int_equal(send_path_set_add(set, p, (size_t)n), 0);
        }
        for (int i = 0; i < 20000; i += 2) {
                int n = snprintf(p, sizeof(p), "d%d/l%d", i % 7, i);
                send_path_set_remove(set, p, (size_t)n);
        }
        assert_int_equal(send_path_set_count(set), 10000);
        assert_int_equal(send_path_set_move(set, "d3", 2, "e", 1), 0);
        for (int i = 1; i < 20000; i += 2) {
                int n = snprintf(p, sizeof(p), i % 7 == 3 ? "e/l%d" : "d%d/l%d", i % 7 == 3 ? i : i % 7, i);
                if (i % 7 == 3)
                        n = snprintf(p, sizeof(p), "e/l%d", i);
                assert_true(send_path_set_contains(set, p, (size_t)n));
        }
        send_path_set_free(set);
        send_path_set_free(NULL);
}

static void test_bounded(void **state)
{
        struct send_path_set *set;
        char p[300];
        memset(p, 'a', sizeof(p));
        assert_int_equal(send_path_set_new(1000, &set), 0);
        assert_int_equal(send_path_set_add(set, p, 300), 0);
        assert_int_equal(send_path_set_add(set, p + 1, 299), 0);
        assert_int_equal(send_path_set_add(set, p + 2, 298), 0);
        assert_int_equal(send_path_set_add(set, p + 3, 297), -E2BIG);
        assert_true(send_path_set_bytes(set) <= 1000);
        /* A rename that would grow past the bound is refused too. */
        send_path_set_remove(set, p + 2, 298);
        assert_int_equal(send_path_set_add(set, "d/x", 3), 0);
        assert_int_equal(send_path_set_move(set, "d", 1, p, 290), -E2BIG);
        send_path_set_free(set);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_add_remove_move),
                cmocka_unit_test(test_many),
                cmocka_unit_test(test_bounded),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
