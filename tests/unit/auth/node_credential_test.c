/* Unit tests of node_credential: the HMAC a node's forwarded request carries. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "auth/node_credential.h"

static const unsigned char key[] = "0123456789abcdef0123456789abcdef";
#define KEY_LEN (sizeof(key) - 1)
#define NOW 1764777600000LL

static void sign(const char *node, int64_t ms, const char *method, const char *target, const char *principal, char *buf)
{
        assert_int_equal(node_credential_sign(key, KEY_LEN, node, ms, method, target, principal, buf, NODE_CREDENTIAL_SIZE), 0);
}

static void test_round_trip(void **state)
{
        (void)state;
        char h[NODE_CREDENTIAL_SIZE], node[32];
        sign("i0123456789ab", NOW, "POST", "/v1/sandboxes/s1/exec", "{\"k\":\"key1\"}", h);
        assert_int_equal(strncmp(h, "v1 i0123456789ab 1764777600000 ", 31), 0);
        assert_int_equal(
                node_credential_verify(key, KEY_LEN, h, "POST", "/v1/sandboxes/s1/exec", "{\"k\":\"key1\"}", NOW + 5000, node),
                0);
        assert_string_equal(node, "i0123456789ab");
}

/* Each signed field is bound: another method, target, principal or key is refused. */
static void test_fields_bound(void **state)
{
        (void)state;
        char h[NODE_CREDENTIAL_SIZE], node[32];
        sign("n1", NOW, "GET", "/v1/sandboxes/s1/files?path=/a", "p", h);
        assert_int_equal(node_credential_verify(key, KEY_LEN, h, "PUT", "/v1/sandboxes/s1/files?path=/a", "p", NOW, node),
                         -EPERM);
        assert_int_equal(node_credential_verify(key, KEY_LEN, h, "GET", "/v1/sandboxes/s2/files?path=/a", "p", NOW, node),
                         -EPERM);
        assert_int_equal(node_credential_verify(key, KEY_LEN, h, "GET", "/v1/sandboxes/s1/files?path=/a", "q", NOW, node),
                         -EPERM);
        static const unsigned char other[] = "fedcba9876543210fedcba9876543210";
        assert_int_equal(
                node_credential_verify(other, sizeof(other) - 1, h, "GET", "/v1/sandboxes/s1/files?path=/a", "p", NOW, node),
                -EPERM);
        /* the node id and the time are signed too */
        char forged[NODE_CREDENTIAL_SIZE];
        snprintf(forged, sizeof(forged), "v1 n2 %s", h + 6);
        assert_int_equal(node_credential_verify(key, KEY_LEN, forged, "GET", "/v1/sandboxes/s1/files?path=/a", "p", NOW, node),
                         -EPERM);
        snprintf(forged, sizeof(forged), "%s", h);
        forged[6] = forged[6] == '1' ? '2' : '1';
        assert_int_equal(node_credential_verify(key, KEY_LEN, forged, "GET", "/v1/sandboxes/s1/files?path=/a", "p", NOW, node),
                         -EPERM);
}

static void test_window(void **state)
{
        (void)state;
        char h[NODE_CREDENTIAL_SIZE], node[32];
        sign("n1", NOW, "GET", "/t", "", h);
        assert_int_equal(node_credential_verify(key, KEY_LEN, h, "GET", "/t", "", NOW + NODE_CREDENTIAL_SKEW_MS, node), 0);
        assert_int_equal(node_credential_verify(key, KEY_LEN, h, "GET", "/t", "", NOW + NODE_CREDENTIAL_SKEW_MS + 1, node),
                         -ETIME);
        assert_int_equal(node_credential_verify(key, KEY_LEN, h, "GET", "/t", "", NOW - NODE_CREDENTIAL_SKEW_MS - 1, node),
                         -ETIME);
}

static void test_malformed(void **state)
{
        (void)state;
        char node[32], buf[NODE_CREDENTIAL_SIZE];
        const char *bad[] = { "",
                              "v1",
                              "v1 n1 123",
                              "v2 n1 1 " /* short */,
                              "v1 n1 12x 00",
                              "v1 n/1 1 00",
                              "v1 n1 1 0000000000000000000000000000000000000000000000000000000000000000000" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_int_equal(node_credential_verify(key, KEY_LEN, bad[i], "GET", "/t", "", NOW, node), -EINVAL);
        assert_int_equal(node_credential_verify(key, KEY_LEN, NULL, "GET", "/t", "", NOW, node), -EINVAL);
        assert_int_equal(node_credential_verify(NULL, 0, "v1 n1 1 00", "GET", "/t", "", NOW, node), -EINVAL);
        assert_int_equal(node_credential_sign(key, KEY_LEN, "a b", NOW, "GET", "/t", "", buf, sizeof(buf)), -EINVAL);
        assert_int_equal(node_credential_sign(NULL, 0, "n1", NOW, "GET", "/t", "", buf, sizeof(buf)), -EINVAL);
        assert_int_equal(node_credential_sign(key, KEY_LEN, "n1", NOW, "GET", "/t", "", buf, 10), -EINVAL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_round_trip),
                cmocka_unit_test(test_fields_bound),
                cmocka_unit_test(test_window),
                cmocka_unit_test(test_malformed),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
