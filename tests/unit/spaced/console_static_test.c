/* Unit tests of console_static: which URLs are the console's and which file names it
 * serves, with what type (docs/console.md). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "api/console_static.h"

static void test_paths(void **state)
{
        assert_true(console_static_path("/console"));
        assert_true(console_static_path("/console/"));
        assert_true(console_static_path("/console/app.js"));
        assert_false(console_static_path("/consoles"));
        assert_false(console_static_path("/v1/console/session"));
        assert_false(console_static_path("/"));
}

static void test_types(void **state)
{
        assert_string_equal(console_static_type("index.html"), "text/html; charset=utf-8");
        assert_string_equal(console_static_type("app.js"), "text/javascript; charset=utf-8");
        assert_string_equal(console_static_type("xterm.mjs"), "text/javascript; charset=utf-8");
        assert_string_equal(console_static_type("style.css"), "text/css; charset=utf-8");
        assert_string_equal(console_static_type("addon-fit_2.js"), "text/javascript; charset=utf-8");
        static const char *const refused[] = { "",        ".js",     ".hidden.js", "..",     "a..js",  "../a.js",    "a/b.js",
                                               "-x.js",   "_x.js",   "a.txt",      "a",      "js",     "a.js.map",   "a b.js",
                                               "a\\b.js", "a%2f.js", "a.JS~",      "a.js\n", "a:b.js", "\xc3\xa9.js" };
        for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
                assert_null(console_static_type(refused[i]));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_paths),
                cmocka_unit_test(test_types),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
