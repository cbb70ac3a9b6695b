/* Unit tests of the btrfs pool's path helpers: names from requests must never leave their
 * directory of the pool. (The subvolume calls need a btrfs filesystem: integration tests.) */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "storage/btrfs_pool.h"

typedef int (*path_fn)(const struct btrfs_pool *p, const char *name, char *buf, size_t size);

static const struct {
        path_fn fn;
        const char *dir;
} kinds[] = {
        { btrfs_pool_template_path, "templates" },
        { btrfs_pool_sandbox_path, "sandboxes" },
        { btrfs_pool_staging_path, "staging" },
};

static void test_paths(void **state)
{
        struct btrfs_pool pool = { .root = "/var/lib/space/pool" };
        for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
                char buf[4096], want[4096];
                assert_int_equal(kinds[k].fn(&pool, "sb-0123456789abcdef", buf, sizeof(buf)), 0);
                snprintf(want, sizeof(want), "/var/lib/space/pool/%s/sb-0123456789abcdef", kinds[k].dir);
                assert_string_equal(buf, want);
                assert_int_equal(kinds[k].fn(&pool, "...", buf, sizeof(buf)), 0); /* odd but harmless */
        }
}

static void test_escaping_names_are_refused(void **state)
{
        struct btrfs_pool pool = { .root = "/pool" };
        static const char *const bad[] = { "", ".", "..", "../x", "a/b", "/", "/etc", "x/..", NULL };
        for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
                for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                        char buf[64];
                        memset(buf, '#', sizeof(buf));
                        if (kinds[k].fn(&pool, bad[i], buf, sizeof(buf)) != -EINVAL)
                                fail_msg("%s path of \"%s\" was not refused", kinds[k].dir, bad[i] ? bad[i] : "(null)");
                        assert_int_equal(buf[0], '#');
                }
}

static void test_long_paths_are_refused(void **state)
{
        struct btrfs_pool pool = { .root = "/pool" };
        char buf[24];
        assert_int_equal(btrfs_pool_sandbox_path(&pool, "sb-0123456789abcdef", buf, sizeof(buf)), -ENAMETOOLONG);
        assert_int_equal(btrfs_pool_sandbox_path(&pool, "sb-1", buf, sizeof(buf)), 0);
        assert_string_equal(buf, "/pool/sandboxes/sb-1");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_paths),
                cmocka_unit_test(test_escaping_names_are_refused),
                cmocka_unit_test(test_long_paths_are_refused),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
