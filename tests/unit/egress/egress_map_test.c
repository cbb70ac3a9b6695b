/* egress_map: the control lines spaced sends space-egress. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "egress/egress_map.h"

static void set_replace_del(void **state)
{
        struct egress_map m = { 0 };
        char why[256];
        assert_int_equal(egress_map_apply(&m,
                                          "{\"op\":\"set\",\"addr\":\"10.201.0.2\",\"sandbox\":\"sb-1\","
                                          "\"policy\":{\"default\":\"public\"}}",
                                          why, sizeof(why)),
                         0);
        const struct egress_map_entry *e = egress_map_find(&m, 0x0ac90002);
        assert_non_null(e);
        assert_string_equal(e->sandbox, "sb-1");
        assert_true(e->policy.default_public);
        /* the same address again replaces it */
        assert_int_equal(egress_map_apply(&m,
                                          "{\"op\":\"set\",\"addr\":\"10.201.0.2\",\"sandbox\":\"sb-2\","
                                          "\"policy\":{\"default\":\"deny\"}}",
                                          why, sizeof(why)),
                         0);
        assert_int_equal(m.n, 1);
        e = egress_map_find(&m, 0x0ac90002);
        assert_string_equal(e->sandbox, "sb-2");
        assert_false(e->policy.default_public);
        assert_null(egress_map_find(&m, 0x0ac90006));
        assert_int_equal(egress_map_apply(&m, "{\"op\":\"del\",\"addr\":\"10.201.0.2\"}", why, sizeof(why)), 0);
        assert_null(egress_map_find(&m, 0x0ac90002));
        egress_map_release(&m);
}

static void bad_lines_change_nothing(void **state)
{
        struct egress_map m = { 0 };
        char why[256];
        assert_int_equal(egress_map_apply(&m, "{\"op\":\"set\",\"addr\":\"10.201.0.2\",\"sandbox\":\"sb-1\",\"policy\":{}}", why,
                                          sizeof(why)),
                         0);
        const char *bad[] = {
                "not json",
                "{}",
                "{\"op\":\"set\",\"addr\":\"10.201.0.300\",\"sandbox\":\"x\",\"policy\":{}}",
                "{\"op\":\"set\",\"addr\":\"10.201.0.2\",\"policy\":{}}",
                "{\"op\":\"set\",\"addr\":\"10.201.0.2\",\"sandbox\":\"x\",\"policy\":{\"rules\":[{\"allow\":\"bad rule\"}]}}",
                "{\"op\":\"frob\",\"addr\":\"10.201.0.2\"}",
                "{\"op\":\"del\"}",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                why[0] = '\0';
                assert_int_equal(egress_map_apply(&m, bad[i], why, sizeof(why)), -EINVAL);
                assert_true(why[0] != '\0');
        }
        assert_int_equal(m.n, 1);
        assert_string_equal(egress_map_find(&m, 0x0ac90002)->sandbox, "sb-1");
        assert_int_equal(egress_map_apply(&m, "{\"op\":\"clear\"}", why, sizeof(why)), 0);
        assert_int_equal(m.n, 0);
        egress_map_release(&m);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(set_replace_del),
                cmocka_unit_test(bad_lines_change_nothing),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
