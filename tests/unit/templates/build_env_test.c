/* Unit tests of build_env: variable substitution and the envp of RUN steps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "templates/build_env.h"

static void expect(const json_t *env, const char *in, const char *want)
{
        char *got = build_env_expand(env, in);
        assert_non_null(got);
        assert_string_equal(got, want);
        free(got);
}

static void test_expand(void **state)
{
        json_t *env = json_pack("{s:s, s:s}", "A", "one", "LONG_NAME2", "x y");
        expect(env, "plain", "plain");
        expect(env, "$A", "one");
        expect(env, "${A}b", "oneb");
        expect(env, "$Ab", ""); /* the name is Ab, unset */
        expect(env, "/opt/bin:$PATH", "/opt/bin:" BUILD_ENV_DEFAULT_PATH);
        expect(env, "$LONG_NAME2/${LONG_NAME2}", "x y/x y");
        expect(env, "cost $5 and $ and ${} and ${1x} and ${A", "cost $5 and $ and ${} and ${1x} and ${A");
        expect(env, "", "");
        json_object_set_new(env, "PATH", json_string("/mine"));
        expect(env, "$PATH:/x", "/mine:/x");
        json_decref(env);
}

static void test_envp(void **state)
{
        json_t *env = json_pack("{s:s}", "K", "V");
        char **e = build_env_envp(env, "");
        assert_string_equal(e[0], "PATH=" BUILD_ENV_DEFAULT_PATH);
        assert_string_equal(e[1], "HOME=/root");
        assert_string_equal(e[2], "K=V");
        assert_null(e[3]);
        build_env_strv_free(e);
        e = build_env_envp(env, "user");
        assert_string_equal(e[1], "K=V"); /* the user's HOME comes from the agent */
        assert_null(e[2]);
        build_env_strv_free(e);
        json_object_set_new(env, "HOME", json_string("/h"));
        json_object_set_new(env, "PATH", json_string("/p"));
        e = build_env_envp(env, "root");
        size_t n = 0;
        while (e[n])
                n++;
        assert_int_equal(n, 3);
        build_env_strv_free(e);
        build_env_strv_free(NULL);
        json_decref(env);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_expand),
                cmocka_unit_test(test_envp),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
