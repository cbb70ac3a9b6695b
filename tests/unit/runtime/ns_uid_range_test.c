/* Unit tests of ns_uid_range.c on a temporary directory standing for /run/space/uid-ranges:
 * two daemons (instances with their own state directories) never get the same range, a
 * range goes back only from its owner, and ranges of a state directory that is gone are
 * taken again. */
#include <errno.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "runtime/namespaces/ns_uid_range.h"

static char top[4096], ranges[4200], state_a[4200], state_b[4200];

static void write_instance(const char *state_dir, const char *id)
{
        char path[4300];
        assert_true(mkdir(state_dir, 0700) == 0 || errno == EEXIST);
        snprintf(path, sizeof(path), "%s/instance", state_dir);
        FILE *f = fopen(path, "we");
        assert_non_null(f);
        fprintf(f, "%s\n", id);
        fclose(f);
}

static int make_dirs(void **state)
{
        const char *tmp = getenv("TMPDIR");
        snprintf(top, sizeof(top), "%s/space-uids-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(top))
                return -1;
        snprintf(ranges, sizeof(ranges), "%s/run/space/uid-ranges", top);
        snprintf(state_a, sizeof(state_a), "%s/a", top);
        snprintf(state_b, sizeof(state_b), "%s/b", top);
        write_instance(state_a, "iaaaa");
        write_instance(state_b, "ibbbb");
        return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        return remove(path);
}

static int remove_dirs(void **state)
{
        return nftw(top, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

static void test_two_daemons_get_disjoint_ranges(void **state)
{
        struct ns_uid_ranges *a = NULL, *b = NULL;
        assert_int_equal(ns_uid_ranges_open(ranges, "iaaaa", state_a, &a), 0);
        assert_int_equal(ns_uid_ranges_open(ranges, "ibbbb", state_b, &b), 0);
        uint32_t got[6];
        for (int i = 0; i < 6; i++)
                assert_int_equal(ns_uid_ranges_take(i % 2 ? b : a, i % 2 ? "sb-b" : "sb-a", &got[i]), 0);
        for (int i = 0; i < 6; i++) {
                assert_int_equal((got[i] - NS_UID_BASE_FIRST) % 65536u, 0);
                for (int j = i + 1; j < 6; j++)
                        assert_int_not_equal(got[i], got[j]);
        }
        assert_int_equal(got[0], NS_UID_BASE_FIRST); /* the lowest free one first */
        /* Only the owner gives a range back, and only for the sandbox it holds it for. */
        assert_int_equal(ns_uid_ranges_give(b, got[0], "sb-a"), 0);
        assert_int_equal(ns_uid_ranges_give(a, got[0], "sb-other"), 0);
        uint32_t next;
        assert_int_equal(ns_uid_ranges_take(b, "sb-b2", &next), 0);
        assert_int_not_equal(next, got[0]);
        assert_int_equal(ns_uid_ranges_give(a, got[0], "sb-a"), 0);
        assert_int_equal(ns_uid_ranges_take(b, "sb-b3", &next), 0);
        assert_int_equal(next, got[0]); /* free again */
        assert_int_equal(ns_uid_ranges_take(a, "bad id", &next), -EINVAL);
        ns_uid_ranges_free(a);
        ns_uid_ranges_free(b);
}

static void test_a_gone_state_dir_frees_its_ranges(void **state)
{
        struct ns_uid_ranges *a = NULL, *b = NULL;
        uint32_t first, second;
        assert_int_equal(ns_uid_ranges_open(ranges, "iaaaa", state_a, &a), 0);
        assert_int_equal(ns_uid_ranges_open(ranges, "ibbbb", state_b, &b), 0);
        assert_int_equal(ns_uid_ranges_take(a, "sb-a", &first), 0);
        /* The range outlives its daemon while the state directory still names it... */
        ns_uid_ranges_free(a);
        assert_int_equal(ns_uid_ranges_take(b, "sb-b", &second), 0);
        assert_int_not_equal(first, second);
        /* ...and is free once that directory holds another instance (or none). */
        write_instance(state_a, "icccc");
        assert_int_equal(ns_uid_ranges_take(b, "sb-b2", &second), 0);
        assert_int_equal(second, first);
        ns_uid_ranges_free(b);
}

static uint32_t kept;
static int keep_one(uint32_t base, const char *sandbox_id, void *arg)
{
        return base == kept;
}

static void test_sweep_gives_back_unrecorded_ranges(void **state)
{
        struct ns_uid_ranges *a = NULL, *b = NULL;
        uint32_t r1, r2, rb, again;
        assert_int_equal(ns_uid_ranges_open(ranges, "iaaaa", state_a, &a), 0);
        assert_int_equal(ns_uid_ranges_open(ranges, "ibbbb", state_b, &b), 0);
        assert_int_equal(ns_uid_ranges_take(a, "sb-1", &r1), 0);
        assert_int_equal(ns_uid_ranges_take(b, "sb-x", &rb), 0);
        assert_int_equal(ns_uid_ranges_take(a, "sb-2", &r2), 0);
        kept = r2;
        assert_int_equal(ns_uid_ranges_sweep(a, keep_one, NULL), 0);
        /* r1 went back, r2 (recorded) and b's range (not a's) stayed. */
        assert_int_equal(ns_uid_ranges_take(b, "sb-y", &again), 0);
        assert_int_equal(again, r1);
        assert_int_equal(ns_uid_ranges_take(b, "sb-z", &again), 0);
        assert_true(again != r2 && again != rb);
        ns_uid_ranges_free(a);
        ns_uid_ranges_free(b);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_two_daemons_get_disjoint_ranges, make_dirs, remove_dirs),
                cmocka_unit_test_setup_teardown(test_a_gone_state_dir_frees_its_ranges, make_dirs, remove_dirs),
                cmocka_unit_test_setup_teardown(test_sweep_gives_back_unrecorded_ranges, make_dirs, remove_dirs),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
