/* Unit tests of secret_hash: the SHA-256 that keys and attach tokens are kept as. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "auth/secret_hash.h"

static void test_known_digests(void **state)
{
        char buf[SECRET_HASH_SIZE];
        assert_int_equal(secret_hash("abc", buf, sizeof(buf)), 0);
        assert_string_equal(buf, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        char small[SECRET_HASH_SIZE - 1];
        assert_int_equal(secret_hash("abc", small, sizeof(small)), -EINVAL);
}

int main(void)
{
        const struct CMUnitTest tests[] = { cmocka_unit_test(test_known_digests) };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
