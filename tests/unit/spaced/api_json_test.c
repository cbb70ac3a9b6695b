/* Unit tests of api_json, the strict readers of request bodies, and the name validators. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/api_json.h"

/* A JSON object from text (single quotes become double quotes, for readability). */
static json_t *obj(const char *text)
{
        char *copy = strdup(text);
        assert_non_null(copy);
        for (char *p = copy; *p; p++)
                if (*p == '\'')
                        *p = '"';
        json_error_t jerr;
        json_t *j = json_loads(copy, JSON_REJECT_DUPLICATES, &jerr);
        free(copy);
        assert_non_null(j);
        return j;
}

static void assert_rejected(int r, const struct space_error *err, const char *needle)
{
        assert_int_equal(r, -1);
        assert_int_equal(err->code, SPACE_E_INVALID_REQUEST);
        if (needle && !strstr(err->message, needle))
                fail_msg("message \"%s\" does not mention \"%s\"", err->message, needle);
}

static void test_only_rejects_unknown_fields(void **state)
{
        static const char *const allowed[] = { "cpus", "pids", NULL };
        static const char *const none[] = { NULL };
        struct space_error err = { 0 };
        json_t *ok = obj("{'cpus': 1, 'pids': 16}"), *extra = obj("{'cpus': 1, 'evil': true}"), *empty = obj("{}");
        assert_int_equal(api_json_only(ok, allowed, "", &err), 0);
        assert_int_equal(err.code, SPACE_OK);
        assert_int_equal(api_json_only(empty, none, "", &err), 0);
        assert_rejected(api_json_only(extra, allowed, "", &err), &err, "unknown field evil");
        assert_rejected(api_json_only(extra, allowed, "resources", &err), &err, "unknown field resources.evil");
        assert_rejected(api_json_only(ok, none, "", &err), &err, "unknown field");
        /* Names are matched exactly: no case folding, no prefixes. */
        json_t *upper = obj("{'CPUS': 1}"), *prefix = obj("{'cpu': 1}");
        assert_rejected(api_json_only(upper, allowed, "", &err), &err, "CPUS");
        assert_rejected(api_json_only(prefix, allowed, "", &err), &err, "cpu");
        json_decref(ok), json_decref(extra), json_decref(empty), json_decref(upper), json_decref(prefix);
}

static void test_string(void **state)
{
        struct space_error err = { 0 };
        json_t *o = obj("{'s': 'abc', 'n': 5, 'z': null, 'u': '\\u00e9\\u00e9', 'b': true, 'a': ['x']}");
        const char *v = "unset";
        assert_int_equal(api_json_string(o, "missing", 10, &v, &err), 0);
        assert_string_equal(v, "unset");
        assert_int_equal(api_json_string(o, "z", 10, &v, &err), 0); /* null counts as absent */
        assert_string_equal(v, "unset");
        assert_int_equal(api_json_string(o, "s", 3, &v, &err), 0);
        assert_string_equal(v, "abc");
        v = "unset";
        assert_rejected(api_json_string(o, "s", 2, &v, &err), &err, "at most 2 bytes");
        assert_string_equal(v, "unset"); /* untouched on failure */
        assert_rejected(api_json_string(o, "n", 10, &v, &err), &err, "field n must be a string");
        assert_rejected(api_json_string(o, "b", 10, &v, &err), &err, "must be a string");
        assert_rejected(api_json_string(o, "a", 10, &v, &err), &err, "must be a string");
        /* Limits are in bytes: two U+00E9 are four bytes. */
        assert_rejected(api_json_string(o, "u", 3, &v, &err), &err, NULL);
        assert_int_equal(api_json_string(o, "u", 4, &v, &err), 0);
        assert_string_equal(v, "\xc3\xa9\xc3\xa9");
        /* An embedded NUL would be cut short by C code downstream: refused. */
        json_object_set_new(o, "nul", json_stringn("a\0b", 3));
        assert_rejected(api_json_string(o, "nul", 100, &v, &err), &err, "without NUL");
        json_decref(o);
}

static void test_int(void **state)
{
        struct space_error err = { 0 };
        json_t *o =
                obj("{'i': 16, 'r': 512.0, 'f': 1.5, 's': '16', 'b': true, 'neg': -1, 'big': 1e300, 'z': null,"
                    " 'max': 65536, 'over': 65537}");
        long long v = 7;
        assert_int_equal(api_json_int(o, "missing", 0, 10, &v, &err), 0);
        assert_int_equal(v, 7);
        assert_int_equal(api_json_int(o, "z", 0, 10, &v, &err), 0);
        assert_int_equal(v, 7);
        assert_int_equal(api_json_int(o, "i", 16, 65536, &v, &err), 0);
        assert_int_equal(v, 16);
        assert_int_equal(api_json_int(o, "r", 16, 65536, &v, &err), 0); /* integral reals are integers */
        assert_int_equal(v, 512);
        assert_int_equal(api_json_int(o, "max", 16, 65536, &v, &err), 0);
        assert_int_equal(v, 65536);
        v = 7;
        assert_rejected(api_json_int(o, "over", 16, 65536, &v, &err), &err, "between 16 and 65536");
        assert_int_equal(v, 7);
        assert_rejected(api_json_int(o, "i", 17, 65536, &v, &err), &err, "between");
        assert_rejected(api_json_int(o, "f", 0, 10, &v, &err), &err, "must be an integer");
        assert_rejected(api_json_int(o, "s", 0, 100, &v, &err), &err, "must be an integer");
        assert_rejected(api_json_int(o, "b", 0, 100, &v, &err), &err, "must be an integer");
        assert_rejected(api_json_int(o, "neg", 0, 100, &v, &err), &err, "between");
        assert_rejected(api_json_int(o, "big", 0, 30LL * 24 * 3600, &v, &err), &err, "between");
        assert_int_equal(v, 7);
        assert_int_equal(api_json_int(o, "neg", -5, 5, &v, &err), 0);
        assert_int_equal(v, -1);
        json_decref(o);
}

static void test_number(void **state)
{
        struct space_error err = { 0 };
        json_t *o = obj("{'min': 0.01, 'under': 0.009, 'max': 64, 'over': 64.0001, 'i': 2, 's': '1', 'b': false, 'zero': 0}");
        double v = -1;
        assert_int_equal(api_json_number(o, "missing", 0.01, 64, &v, &err), 0);
        assert_float_equal(v, -1, 0);
        assert_int_equal(api_json_number(o, "min", 0.01, 64, &v, &err), 0);
        assert_float_equal(v, 0.01, 1e-12);
        assert_int_equal(api_json_number(o, "max", 0.01, 64, &v, &err), 0);
        assert_float_equal(v, 64, 0);
        assert_int_equal(api_json_number(o, "i", 0.01, 64, &v, &err), 0);
        assert_float_equal(v, 2, 0);
        v = -1;
        assert_rejected(api_json_number(o, "under", 0.01, 64, &v, &err), &err, "between");
        assert_rejected(api_json_number(o, "over", 0.01, 64, &v, &err), &err, "between");
        assert_rejected(api_json_number(o, "zero", 0.01, 64, &v, &err), &err, "between");
        assert_rejected(api_json_number(o, "s", 0.01, 64, &v, &err), &err, "must be a number");
        assert_rejected(api_json_number(o, "b", 0.01, 64, &v, &err), &err, "must be a number");
        assert_float_equal(v, -1, 0);
        json_decref(o);
}

static void test_bool(void **state)
{
        struct space_error err = { 0 };
        json_t *o = obj("{'t': true, 'f': false, 'one': 1, 's': 'true'}");
        bool v = false;
        assert_int_equal(api_json_bool(o, "t", &v, &err), 0);
        assert_true(v);
        assert_int_equal(api_json_bool(o, "f", &v, &err), 0);
        assert_false(v);
        assert_int_equal(api_json_bool(o, "missing", &v, &err), 0);
        assert_false(v);
        assert_rejected(api_json_bool(o, "one", &v, &err), &err, "true or false");
        assert_rejected(api_json_bool(o, "s", &v, &err), &err, "true or false");
        json_decref(o);
}

static void test_string_map(void **state)
{
        struct space_error err = { 0 };
        json_t *o =
                obj("{'env': {'FOO': 'bar', '_x1': ''}, 'arr': ['a'], 'str': 'x', 'badkey': {'1X': 'v'},"
                    " 'dotdot': {'../x': 'v'}, 'num': {'A': 1}, 'nullv': {'A': null}, 'nested': {'A': {}},"
                    " 'three': {'A': 'a', 'B': 'b', 'C': 'c'}, 'long': {'A': 'abcde'}, 'empty': {}}");
        json_t *ret = NULL;
        assert_int_equal(api_json_string_map(o, "env", api_json_env_name_ok, 256, 32768, &ret, &err), 0);
        assert_ptr_equal(ret, json_object_get(o, "env")); /* borrowed */
        ret = NULL;
        assert_int_equal(api_json_string_map(o, "missing", api_json_env_name_ok, 256, 32768, &ret, &err), 0);
        assert_null(ret);
        assert_int_equal(api_json_string_map(o, "empty", api_json_env_name_ok, 0, 0, &ret, &err), 0);
        ret = NULL;
        assert_rejected(api_json_string_map(o, "arr", api_json_env_name_ok, 256, 10, &ret, &err), &err, "object of strings");
        assert_rejected(api_json_string_map(o, "str", api_json_env_name_ok, 256, 10, &ret, &err), &err, "object of strings");
        assert_rejected(api_json_string_map(o, "badkey", api_json_env_name_ok, 256, 10, &ret, &err), &err, "invalid key \"1X\"");
        assert_rejected(api_json_string_map(o, "dotdot", api_json_metadata_key_ok, 64, 10, &ret, &err), &err, "invalid key");
        assert_rejected(api_json_string_map(o, "num", api_json_env_name_ok, 256, 10, &ret, &err), &err, "num.A must be a string");
        assert_rejected(api_json_string_map(o, "nullv", api_json_env_name_ok, 256, 10, &ret, &err), &err, "must be a string");
        assert_rejected(api_json_string_map(o, "nested", api_json_env_name_ok, 256, 10, &ret, &err), &err, "must be a string");
        assert_rejected(api_json_string_map(o, "three", api_json_env_name_ok, 2, 10, &ret, &err), &err, "more than 2 entries");
        assert_int_equal(api_json_string_map(o, "three", api_json_env_name_ok, 3, 1, &ret, &err), 0);
        ret = NULL;
        assert_rejected(api_json_string_map(o, "long", api_json_env_name_ok, 256, 4, &ret, &err), &err, "at most 4 bytes");
        assert_null(ret);
        json_t *nul = json_object();
        json_object_set_new(nul, "K", json_stringn("v\0rm -rf /", 10));
        json_object_set_new(o, "nul", nul);
        assert_rejected(api_json_string_map(o, "nul", api_json_env_name_ok, 256, 100, &ret, &err), &err, "K must be a string");
        json_decref(o);
}

static void test_string_array(void **state)
{
        struct space_error err = { 0 };
        json_t *o = obj("{'cmd': ['ls', '-l'], 'empty': [], 'obj': {}, 'mixed': ['a', 1], 'str': 'ls'}");
        json_t *ret = NULL;
        assert_int_equal(api_json_string_array(o, "cmd", 4096, &ret, &err), 0);
        assert_ptr_equal(ret, json_object_get(o, "cmd"));
        ret = NULL;
        assert_int_equal(api_json_string_array(o, "missing", 4096, &ret, &err), 0);
        assert_null(ret);
        assert_rejected(api_json_string_array(o, "empty", 4096, &ret, &err), &err, "non-empty array");
        assert_rejected(api_json_string_array(o, "obj", 4096, &ret, &err), &err, "non-empty array");
        assert_rejected(api_json_string_array(o, "str", 4096, &ret, &err), &err, "non-empty array");
        assert_rejected(api_json_string_array(o, "cmd", 1, &ret, &err), &err, "at most 1 strings");
        assert_rejected(api_json_string_array(o, "mixed", 4096, &ret, &err), &err, "mixed[1]");
        json_array_append_new(json_object_get(o, "cmd"), json_stringn("x\0y", 3));
        assert_rejected(api_json_string_array(o, "cmd", 4096, &ret, &err), &err, "cmd[2] must be a string without NUL");
        assert_null(ret);
        json_decref(o);
}

static void test_env_name(void **state)
{
        char longest[256], too_long[257];
        memset(longest, 'A', 255), longest[255] = '\0';
        memset(too_long, 'A', 256), too_long[256] = '\0';
        const char *good[] = { "PATH", "_", "_x", "a1", "LD_PRELOAD", longest };
        const char *bad[] = { "", "1A", "A-B", "A=B", "A B", "A.B", "../x", "\xc3\xa9", "A\n", "$A", too_long };
        for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
                if (!api_json_env_name_ok(good[i]))
                        fail_msg("env name \"%.20s\" should be accepted", good[i]);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                if (api_json_env_name_ok(bad[i]))
                        fail_msg("env name \"%.20s\" should be refused", bad[i]);
        assert_false(api_json_env_name_ok(NULL));
}

static void test_metadata_key_and_name(void **state)
{
        char n63[64], n64[65];
        memset(n63, 'a', 63), n63[63] = '\0';
        memset(n64, 'a', 64), n64[64] = '\0';
        const char *both[] = { "owner", "a.b-c_D9", "sb-0123456789abcdef", "busybox", "-", n63 };
        const char *neither[] = { "", "../x", "a/b", "/", "a b", "a\tb", "caf\xc3\xa9", "\xef\xbc\x8e", "a%2Fb", "a\\b", n64 };
        for (size_t i = 0; i < sizeof(both) / sizeof(both[0]); i++) {
                if (!api_json_metadata_key_ok(both[i]) || !api_json_name_ok(both[i]))
                        fail_msg("\"%.20s\" should be accepted", both[i]);
        }
        for (size_t i = 0; i < sizeof(neither) / sizeof(neither[0]); i++) {
                if (api_json_metadata_key_ok(neither[i]) || api_json_name_ok(neither[i]))
                        fail_msg("\"%.20s\" should be refused", neither[i]);
        }
        /* A leading dot is fine in a metadata key but never in a name used as a path. */
        assert_true(api_json_metadata_key_ok(".hidden"));
        assert_false(api_json_name_ok(".hidden"));
        assert_true(api_json_metadata_key_ok(".."));
        assert_false(api_json_name_ok(".."));
        assert_false(api_json_name_ok("."));
        assert_false(api_json_metadata_key_ok(NULL));
        assert_false(api_json_name_ok(NULL));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_only_rejects_unknown_fields),
                cmocka_unit_test(test_string),
                cmocka_unit_test(test_int),
                cmocka_unit_test(test_number),
                cmocka_unit_test(test_bool),
                cmocka_unit_test(test_string_map),
                cmocka_unit_test(test_string_array),
                cmocka_unit_test(test_env_name),
                cmocka_unit_test(test_metadata_key_and_name),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
