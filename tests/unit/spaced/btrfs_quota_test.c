/* Unit tests of btrfs_quota away from btrfs: every call checks the filesystem type first and
 * touches nothing elsewhere. (On btrfs: tests/integration/test_security_quota.py.) */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "storage/btrfs_quota.h"

static void test_not_btrfs_is_refused(void **state)
{
        uint64_t limit = 7;
        assert_int_equal(btrfs_quota_enable("/proc", 1 << 20, &limit), -ENOTTY);
        assert_int_equal(limit, 7);
        assert_int_equal(btrfs_quota_disable("/proc"), -ENOTTY);
        assert_int_equal(btrfs_quota_limit_subvolume("/proc", 1 << 20), -ENOTTY);
        char mode[16] = "x";
        assert_false(btrfs_quota_enabled("/proc", mode, sizeof(mode)));
        assert_false(btrfs_quota_enabled("/nonexistent/space-quota", NULL, 0));
}

static void test_group_id_is_level_one(void **state)
{
        assert_int_equal(BTRFS_QUOTA_SANDBOXES >> 48, 1);
        assert_int_equal(BTRFS_QUOTA_SANDBOXES & ((UINT64_C(1) << 48) - 1), 1);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_not_btrfs_is_refused),
                cmocka_unit_test(test_group_id_is_level_one),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
