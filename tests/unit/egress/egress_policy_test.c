/* egress_rule / egress_policy: rule syntax, matching and the narrowing order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "egress/egress_policy.h"
#include "egress/egress_profiles.h"

#define IP(a, b, c, d) (((uint32_t)(a) << 24) | ((uint32_t)(b) << 16) | ((uint32_t)(c) << 8) | (uint32_t)(d))

static void rule_syntax(void **state)
{
        struct egress_rule r;
        char why[256];
        assert_int_equal(egress_rule_parse("PyPI.org.", EGRESS_ALLOW, &r, why, sizeof(why)), 0);
        assert_int_equal(r.kind, EGRESS_RULE_NAME);
        assert_string_equal(r.name, "pypi.org");
        assert_int_equal(r.port, 0);
        assert_int_equal(egress_rule_parse("*.example.com:443", EGRESS_DENY, &r, why, sizeof(why)), 0);
        assert_int_equal(r.kind, EGRESS_RULE_WILDCARD);
        assert_string_equal(r.name, "example.com");
        assert_int_equal(r.port, 443);
        assert_int_equal(egress_rule_parse("10.0.0.0/8", EGRESS_ALLOW, &r, why, sizeof(why)), 0);
        assert_int_equal(r.kind, EGRESS_RULE_CIDR);
        assert_int_equal(r.net, IP(10, 0, 0, 0));
        assert_int_equal(r.mask, 0xff000000u);
        assert_int_equal(egress_rule_parse("192.0.2.7:22", EGRESS_ALLOW, &r, why, sizeof(why)), 0);
        assert_int_equal(r.mask, 0xffffffffu);
        assert_int_equal(r.port, 22);
        const char *bad[] = { "",        "example",    "*.com.:0",    "a..b",       "-a.com",       "a.com:99999",
                              "a.com:",  "10.0.0.1/8", "10.0.0.0/33", "300.1.1.1",  "exa mple.com", "*.*.com",
                              "a.com:x", "::1",        "[::1]:80",    "a_b.com:-1", "10.0.0.0/",    "*example.com" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                why[0] = '\0';
                assert_int_equal(egress_rule_parse(bad[i], EGRESS_ALLOW, &r, why, sizeof(why)), -EINVAL);
                assert_true(why[0] != '\0');
        }
}

static void matching(void **state)
{
        struct egress_rule r;
        char why[256];
        assert_int_equal(egress_rule_parse("*.example.com", EGRESS_ALLOW, &r, why, sizeof(why)), 0);
        assert_true(egress_rule_matches_name(&r, "a.example.com", 443));
        assert_true(egress_rule_matches_name(&r, "a.b.example.com", 80));
        assert_false(egress_rule_matches_name(&r, "example.com", 443));
        assert_false(egress_rule_matches_name(&r, "badexample.com", 443));
        assert_false(egress_rule_matches_name(&r, NULL, 443));
        assert_int_equal(egress_rule_parse("example.com:443", EGRESS_DENY, &r, why, sizeof(why)), 0);
        assert_true(egress_rule_matches_name(&r, "example.com", 443));
        assert_false(egress_rule_matches_name(&r, "example.com", 80));
        assert_false(egress_rule_matches_name(&r, "example.com", 0)); /* a deny of one port is not a deny of the name */
        assert_int_equal(egress_rule_parse("example.com:443", EGRESS_ALLOW, &r, why, sizeof(why)), 0);
        assert_true(egress_rule_matches_name(&r, "example.com", 0));
        assert_int_equal(egress_rule_parse("10.1.0.0/16", EGRESS_ALLOW, &r, why, sizeof(why)), 0);
        assert_true(egress_rule_matches_addr(&r, IP(10, 1, 200, 3), 5));
        assert_false(egress_rule_matches_addr(&r, IP(10, 2, 0, 1), 5));
        assert_false(egress_rule_matches_name(&r, "10.1.0.1", 5));
}

static void special_addresses(void **state)
{
        uint32_t special[] = { IP(127, 0, 0, 1),   IP(10, 9, 9, 9),        IP(172, 16, 0, 1), IP(172, 31, 255, 255),
                               IP(192, 168, 1, 1), IP(169, 254, 169, 254), IP(100, 64, 0, 1), IP(0, 0, 0, 0),
                               IP(224, 0, 0, 1),   IP(255, 255, 255, 255), IP(192, 0, 2, 1),  IP(198, 18, 0, 1) };
        uint32_t public[] = { IP(1, 1, 1, 1), IP(93, 184, 216, 34), IP(172, 32, 0, 1), IP(100, 128, 0, 1), IP(11, 0, 0, 1) };
        for (size_t i = 0; i < sizeof(special) / sizeof(special[0]); i++)
                assert_true(egress_addr_is_special(special[i]));
        for (size_t i = 0; i < sizeof(public) / sizeof(public[0]); i++)
                assert_false(egress_addr_is_special(public[i]));
}

static struct egress_policy policy_of(const char *text)
{
        struct egress_policy p;
        char why[256] = "";
        json_error_t jerr;
        json_t *j = json_loads(text, 0, &jerr);
        assert_non_null(j);
        int r = egress_policy_from_json(j, &p, why, sizeof(why));
        if (r < 0)
                fail_msg("%s: %s", text, why);
        json_decref(j);
        return p;
}

static void public_profile(void **state)
{
        struct egress_policy p = policy_of("{\"profile\":\"public\",\"default\":\"public\"}");
        assert_int_equal(egress_policy_decide(&p, "example.com", IP(93, 184, 216, 34), 443), EGRESS_ALLOW);
        assert_int_equal(egress_policy_decide(&p, NULL, IP(93, 184, 216, 34), 22), EGRESS_ALLOW);
        /* an allowed name that resolves to a private or loopback address (DNS rebinding) */
        assert_int_equal(egress_policy_decide(&p, "example.com", IP(127, 0, 0, 1), 443), EGRESS_DENY);
        assert_int_equal(egress_policy_decide(&p, "example.com", IP(10, 0, 0, 5), 443), EGRESS_DENY);
        assert_int_equal(egress_policy_decide(&p, NULL, IP(169, 254, 169, 254), 80), EGRESS_DENY);
        assert_false(egress_policy_name_denied(&p, "anything.test"));
        egress_policy_release(&p);
}

static void profile_order_and_narrowing(void **state)
{
        struct egress_policy p = policy_of(
                "{\"profile\":\"corp\",\"default\":\"deny\",\"rules\":["
                "{\"deny\":\"secret.example.com\"},{\"allow\":\"*.example.com\"},"
                "{\"allow\":\"10.20.0.0/16:8080\"},{\"deny\":\"93.184.0.0/16\"},"
                "{\"allow\":\"pypi.org:443\"}]}");
        assert_int_equal(egress_policy_decide(&p, "a.example.com", IP(1, 2, 3, 4), 443), EGRESS_ALLOW);
        assert_int_equal(egress_policy_decide(&p, "secret.example.com", IP(1, 2, 3, 4), 443), EGRESS_DENY);
        assert_int_equal(egress_policy_decide(&p, "other.org", IP(1, 2, 3, 4), 443), EGRESS_DENY); /* default */
        /* a network deny holds whatever name was asked for */
        assert_int_equal(egress_policy_decide(&p, "a.example.com", IP(93, 184, 1, 1), 443), EGRESS_DENY);
        /* a private network only where a network rule names it, and only on its port */
        assert_int_equal(egress_policy_decide(&p, NULL, IP(10, 20, 1, 1), 8080), EGRESS_ALLOW);
        assert_int_equal(egress_policy_decide(&p, NULL, IP(10, 20, 1, 1), 22), EGRESS_DENY);
        assert_int_equal(egress_policy_decide(&p, "a.example.com", IP(10, 30, 1, 1), 443), EGRESS_DENY);
        assert_int_equal(egress_policy_decide(&p, "pypi.org", IP(1, 2, 3, 4), 443), EGRESS_ALLOW);
        assert_int_equal(egress_policy_decide(&p, "pypi.org", IP(1, 2, 3, 4), 80), EGRESS_DENY);
        assert_int_equal(egress_policy_decide(&p, "pypi.org", IP(1, 2, 3, 4), 0), EGRESS_ALLOW);
        assert_true(egress_policy_name_denied(&p, "secret.example.com"));
        assert_false(egress_policy_name_denied(&p, "b.example.com"));
        egress_policy_release(&p);

        /* the sandbox's own lists narrow; an allow of its own cannot widen the profile */
        p = policy_of(
                "{\"profile\":\"corp\",\"default\":\"deny\",\"rules\":[{\"allow\":\"*.example.com\"}],"
                "\"allow\":[\"a.example.com\",\"evil.org\",\"10.0.0.0/8\"],\"deny\":[\"a.example.com:80\"]}");
        assert_int_equal(egress_policy_decide(&p, "a.example.com", IP(1, 2, 3, 4), 443), EGRESS_ALLOW);
        assert_int_equal(egress_policy_decide(&p, "a.example.com", IP(1, 2, 3, 4), 80), EGRESS_DENY);
        assert_int_equal(egress_policy_decide(&p, "b.example.com", IP(1, 2, 3, 4), 443), EGRESS_DENY);
        assert_int_equal(egress_policy_decide(&p, "evil.org", IP(1, 2, 3, 4), 443), EGRESS_DENY);
        assert_int_equal(egress_policy_decide(&p, NULL, IP(10, 1, 1, 1), 443), EGRESS_DENY);
        egress_policy_release(&p);
}

static void bad_policies(void **state)
{
        const char *bad[] = { "[]",
                              "{\"default\":\"allow\"}",
                              "{\"rules\":{}}",
                              "{\"rules\":[\"a.com\"]}",
                              "{\"rules\":[{\"allow\":\"a.com\",\"deny\":\"b.com\"}]}",
                              "{\"rules\":[{\"allow\":\"not a rule\"}]}",
                              "{\"allow\":\"a.com\"}",
                              "{\"deny\":[1]}",
                              "{\"profile\":5}" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                struct egress_policy p;
                char why[256] = "";
                json_t *j = json_loads(bad[i], 0, NULL);
                assert_non_null(j);
                assert_int_equal(egress_policy_from_json(j, &p, why, sizeof(why)), -EINVAL);
                assert_true(why[0] != '\0');
                json_decref(j);
        }
}

/* The built-in package-registries profile: the registries' hosts on their ports, nothing
 * else, and no name that only looks like one of them. */
static void package_registries_profile(void **state)
{
        (void)state;
        char why[256] = "";
        json_t *all = egress_profiles_load_new(NULL, why, sizeof(why));
        assert_non_null(all);
        const json_t *def = egress_profiles_find(all, "package-registries");
        assert_non_null(def);
        struct egress_policy p;
        assert_int_equal(egress_policy_from_json(def, &p, why, sizeof(why)), 0);
        const uint32_t pub = IP(151, 101, 0, 223);
        const char *allowed[] = { "pypi.org",         "files.pythonhosted.org", "registry.npmjs.org",
                                  "crates.io",        "index.crates.io",        "static.crates.io",
                                  "proxy.golang.org", "sum.golang.org",         "deb.debian.org" };
        for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
                assert_int_equal(egress_policy_decide(&p, allowed[i], pub, 443), EGRESS_ALLOW);
        assert_int_equal(egress_policy_decide(&p, "deb.debian.org", pub, 80), EGRESS_ALLOW);
        assert_int_equal(egress_policy_decide(&p, "security.debian.org", pub, 80), EGRESS_ALLOW);
        assert_int_equal(egress_policy_decide(&p, "pypi.org", pub, 80), EGRESS_DENY);
        assert_int_equal(egress_policy_decide(&p, "pypi.org", pub, 22), EGRESS_DENY);
        assert_int_equal(egress_policy_decide(&p, "evil-pypi.org", pub, 443), EGRESS_DENY);
        assert_int_equal(egress_policy_decide(&p, "pypi.org.evil.com", pub, 443), EGRESS_DENY);
        assert_int_equal(egress_policy_decide(&p, "github.com", pub, 443), EGRESS_DENY);
        assert_int_equal(egress_policy_decide(&p, NULL, pub, 443), EGRESS_DENY);
        assert_int_equal(egress_policy_decide(&p, "pypi.org", IP(127, 0, 0, 1), 443), EGRESS_DENY);
        /* DNS answers (port 0: for some port): the registries' addresses only */
        assert_int_equal(egress_policy_decide(&p, "pypi.org", pub, 0), EGRESS_ALLOW);
        assert_int_equal(egress_policy_decide(&p, "example.com", pub, 0), EGRESS_DENY);
        egress_policy_release(&p);
        json_decref(all);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(rule_syntax),
                cmocka_unit_test(matching),
                cmocka_unit_test(special_addresses),
                cmocka_unit_test(public_profile),
                cmocka_unit_test(profile_order_and_narrowing),
                cmocka_unit_test(bad_policies),
                cmocka_unit_test(package_registries_profile),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
