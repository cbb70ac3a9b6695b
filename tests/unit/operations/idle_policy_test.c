/* Unit tests of idle_policy.c: what a client may send as an idle policy, and which rule
 * applies to a sandbox (its own, else the server's --hibernate-idle). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "operations/idle_policy.h"
#include "spaced/spaced_context.h"
#include "state_store/state_store.h"

static json_t *parsed(const char *text)
{
        json_t *v = json_loads(text, JSON_DECODE_ANY, NULL), *ret = (json_t *)1;
        struct space_error err = { 0 };
        assert_int_equal(idle_policy_parse(v, "idle", &ret, &err), 0);
        json_decref(v);
        return ret;
}

static void test_valid_policies_are_normalised(void **state)
{
        json_t *p = parsed("{\"after_s\": 900}");
        json_t *want = json_pack("{s:i, s:s}", "after_s", 900, "action", "hibernate");
        assert_true(json_equal(p, want));
        json_decref(p);
        json_decref(want);
        p = parsed("{\"after_s\": 0, \"action\": \"stop\"}");
        assert_string_equal(json_string_value(json_object_get(p, "action")), "stop");
        json_decref(p);
        assert_null(parsed("null"));
}

static void test_invalid_policies_are_refused(void **state)
{
        static const char *const bad[] = {
                "1",
                "\"900\"",
                "[]",
                "{}",
                "{\"action\": \"stop\"}",
                "{\"after_s\": -1}",
                "{\"after_s\": 604801}",
                "{\"after_s\": 1.5}",
                "{\"after_s\": true}",
                "{\"after_s\": \"60\"}",
                "{\"after_s\": 60, \"action\": \"destroy\"}",
                "{\"after_s\": 60, \"action\": 1}",
                "{\"after_s\": 60, \"action\": \"\"}",
                "{\"after_s\": 60, \"then\": \"stop\"}",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                json_t *v = json_loads(bad[i], JSON_DECODE_ANY, NULL), *ret = (json_t *)1;
                struct space_error err = { 0 };
                assert_non_null(v);
                if (idle_policy_parse(v, "idle", &ret, &err) != -1)
                        fail_msg("accepted %s", bad[i]);
                assert_int_equal(err.code, SPACE_E_INVALID_REQUEST);
                assert_ptr_equal(ret, (json_t *)1); /* untouched */
                assert_non_null(strstr(err.message, "idle"));
                json_decref(v);
        }
}

static void test_effective_rule(void **state)
{
        struct spaced_context ctx = { 0 };
        struct sandbox sb = { 0 };
        struct idle_rule r;
        ctx.cfg.hibernate_idle_s = 120;
        idle_policy_effective(&ctx, &sb, &r);
        assert_int_equal(r.after_s, 120);
        assert_int_equal(r.action, IDLE_HIBERNATE);
        sb.idle = idle_policy_new(0, IDLE_STOP);
        idle_policy_effective(&ctx, &sb, &r);
        assert_int_equal(r.after_s, 0);
        assert_int_equal(r.action, IDLE_STOP);
        json_decref(sb.idle);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_valid_policies_are_normalised),
                cmocka_unit_test(test_invalid_policies_are_refused),
                cmocka_unit_test(test_effective_rule),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
