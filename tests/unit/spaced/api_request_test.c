/* Unit tests of api_request_json: what counts as a request body. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "api/api_request.h"

static int parse(const char *body, size_t len, json_t **ret, struct space_error *err)
{
        struct api_request req = { .body = body, .body_len = len, .content_type = "application/json" };
        return api_request_json(&req, ret, err);
}

static void test_json_needs_its_content_type(void **state)
{
        static const char *const refused[] = { NULL,
                                               "",
                                               "text/plain",
                                               "application/jsonx",
                                               "application/x-www-form-urlencoded",
                                               "multipart/form-data; boundary=x" };
        static const char *const taken[] = { "application/json", "Application/JSON", "application/json; charset=utf-8" };
        const char *body = "{\"a\": 1}";
        for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
                struct api_request req = { .body = body, .body_len = strlen(body), .content_type = refused[i] };
                struct space_error err = { 0 };
                json_t *j = NULL;
                if (api_request_json(&req, &j, &err) != -1)
                        fail_msg("a JSON body sent as %s was accepted", refused[i] ? refused[i] : "(none)");
                assert_int_equal(err.code, SPACE_E_UNSUPPORTED_MEDIA_TYPE);
        }
        for (size_t i = 0; i < sizeof(taken) / sizeof(taken[0]); i++) {
                struct api_request req = { .body = body, .body_len = strlen(body), .content_type = taken[i] };
                struct space_error err = { 0 };
                json_t *j = NULL;
                assert_int_equal(api_request_json(&req, &j, &err), 0);
                json_decref(j);
        }
}

static void test_body_rules(void **state)
{
        struct space_error err = { 0 };
        struct api_request req = { .method = "DELETE",
                                   .path = "/v1/keys/k",
                                   .body = "{}",
                                   .body_len = 2,
                                   .content_type = "application/json",
                                   .body_rule = API_BODY_NONE };
        assert_int_equal(api_request_check_body(&req, &err), -1);
        assert_int_equal(err.code, SPACE_E_INVALID_REQUEST);
        req.body_len = 0;
        assert_int_equal(api_request_check_body(&req, &err), 0);
        req.body_rule = API_BODY_NO_FIELDS;
        assert_int_equal(api_request_check_body(&req, &err), 0);
        req.body_len = 2;
        assert_int_equal(api_request_check_body(&req, &err), 0);
        req.body = "{\"x\":1}";
        req.body_len = strlen(req.body);
        assert_int_equal(api_request_check_body(&req, &err), -1);
        assert_int_equal(err.code, SPACE_E_INVALID_REQUEST);
        req.content_type = NULL;
        req.body = "{}";
        req.body_len = 2;
        assert_int_equal(api_request_check_body(&req, &err), -1);
        assert_int_equal(err.code, SPACE_E_UNSUPPORTED_MEDIA_TYPE);
}

static void test_empty_body_is_empty_object(void **state)
{
        struct space_error err = { 0 };
        json_t *j = NULL;
        assert_int_equal(parse(NULL, 0, &j, &err), 0);
        assert_true(json_is_object(j));
        assert_int_equal(json_object_size(j), 0);
        json_decref(j);
}

static void test_object_is_parsed(void **state)
{
        struct space_error err = { 0 };
        json_t *j = NULL;
        const char *body = "{\"template\": \"busybox\", \"env\": {\"A\": \"\\u00e9\"}}";
        assert_int_equal(parse(body, strlen(body), &j, &err), 0);
        assert_string_equal(json_string_value(json_object_get(j, "template")), "busybox");
        assert_string_equal(json_string_value(json_object_get(json_object_get(j, "env"), "A")), "\xc3\xa9");
        json_decref(j);
}

static void test_bad_bodies_are_invalid_json(void **state)
{
        static const char *const bodies[] = {
                "[]",
                "\"x\"",
                "42",
                "null",
                "true",
                "{",
                "{\"a\":1,}",
                "{'a': 1}",
                "{\"a\": 1} trailing",
                "{\"a\": 1, \"a\": 2}",   /* duplicate member: which one wins would be ambiguous */
                "{\"a\": \"x\\u0000y\"}", /* NUL in a value */
                "{\"a\\u0000b\": \"x\"}", /* NUL in a key */
                "{\"a\": \"\xff\xfe\"}",  /* invalid UTF-8 */
                "{\"a\": \"\\ud800\"}",   /* lone surrogate escape */
        };
        for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
                struct space_error err = { 0 };
                json_t *j = (json_t *)0x1;
                if (parse(bodies[i], strlen(bodies[i]), &j, &err) != -1)
                        fail_msg("body %s was accepted", bodies[i]);
                assert_int_equal(err.code, SPACE_E_INVALID_JSON);
                assert_true(err.message[0] != '\0');
                assert_ptr_equal(j, (json_t *)0x1); /* untouched on failure */
        }
}

static void test_body_is_bounded_by_its_length(void **state)
{
        /* The body need not be NUL-terminated: only body_len bytes count. */
        const char buf[] = "{\"a\": 1}GARBAGE";
        struct space_error err = { 0 };
        json_t *j = NULL;
        assert_int_equal(parse(buf, 8, &j, &err), 0);
        assert_int_equal(json_integer_value(json_object_get(j, "a")), 1);
        json_decref(j);
        assert_int_equal(parse(buf, 7, &j, &err), -1);
        assert_int_equal(err.code, SPACE_E_INVALID_JSON);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_empty_body_is_empty_object),  cmocka_unit_test(test_object_is_parsed),
                cmocka_unit_test(test_bad_bodies_are_invalid_json), cmocka_unit_test(test_body_is_bounded_by_its_length),
                cmocka_unit_test(test_json_needs_its_content_type), cmocka_unit_test(test_body_rules),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
