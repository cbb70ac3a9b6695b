/* Unit tests of api_error: the one mapping from error codes to HTTP statuses, and the
 * error body shape. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/api_json.h"
#include "api/api_request.h"

static const struct {
        enum space_error_code code;
        unsigned status;
} statuses[] = {
        { SPACE_OK, 200 },
        { SPACE_E_INVALID_JSON, 400 },
        { SPACE_E_INVALID_REQUEST, 400 },
        { SPACE_E_UNAUTHORIZED, 401 },
        { SPACE_E_FORBIDDEN, 403 },
        { SPACE_E_NOT_FOUND, 404 },
        { SPACE_E_METHOD_NOT_ALLOWED, 405 },
        { SPACE_E_INVALID_STATE, 409 },
        { SPACE_E_TEMPLATE_NOT_READY, 409 },
        { SPACE_E_ALREADY_EXISTS, 409 },
        { SPACE_E_PAYLOAD_TOO_LARGE, 413 },
        { SPACE_E_UNSUPPORTED_MEDIA_TYPE, 415 },
        { SPACE_E_UNSUPPORTED, 422 },
        { SPACE_E_UNAVAILABLE, 503 },
        { SPACE_E_TIMEOUT, 504 },
        { SPACE_E_PERMISSION_DENIED, 403 },
        { SPACE_E_CONFLICT, 409 },
        { SPACE_E_RANGE_NOT_SATISFIABLE, 416 },
        { SPACE_E_INTERNAL, 500 },
        { SPACE_E_BUILD_FAILED, 422 },
        { SPACE_E_CANCELLED, 409 },
        { SPACE_E_GONE, 410 },
        { SPACE_E_POLICY_DENIED, 403 },
};

static void test_every_code_has_its_status(void **state)
{
        assert_int_equal(sizeof(statuses) / sizeof(statuses[0]), SPACE_E_POLICY_DENIED + 1);
        for (size_t i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++)
                if (api_error_http_status(statuses[i].code) != statuses[i].status)
                        fail_msg("%s maps to %u, want %u", space_error_code_name(statuses[i].code),
                                 api_error_http_status(statuses[i].code), statuses[i].status);
        assert_int_equal(api_error_http_status((enum space_error_code)77), 500);
}

/* A code survives the trip through an operation row (stored by name) to the same status. */
static void test_status_survives_code_name_round_trip(void **state)
{
        for (size_t i = 1; i < sizeof(statuses) / sizeof(statuses[0]); i++) {
                const char *name = space_error_code_name(statuses[i].code);
                assert_int_equal(api_error_http_status(space_error_code_from_name(name)), statuses[i].status);
        }
}

static void test_error_body_shape(void **state)
{
        struct api_response resp = { 0 };
        struct space_error err = { 0 };
        space_error_set(&err, SPACE_E_NOT_FOUND, "sandbox sb-1 not found");
        api_response_error(&resp, &err);
        assert_int_equal(resp.status, 404);
        assert_int_equal(json_object_size(resp.body), 1);
        json_t *e = json_object_get(resp.body, "error");
        assert_int_equal(json_object_size(e), 2);
        assert_string_equal(json_string_value(json_object_get(e, "code")), "not_found");
        assert_string_equal(json_string_value(json_object_get(e, "message")), "sandbox sb-1 not found");

        /* Replacing the body frees the old one (checked under ASan); an empty message
         * falls back to the code's name. */
        struct space_error bare = { .code = SPACE_E_UNAVAILABLE };
        api_response_error(&resp, &bare);
        assert_int_equal(resp.status, 503);
        e = json_object_get(resp.body, "error");
        assert_string_equal(json_string_value(json_object_get(e, "code")), "unavailable");
        assert_string_equal(json_string_value(json_object_get(e, "message")), "unavailable");

        api_response_json(&resp, 204, NULL);
        assert_int_equal(resp.status, 204);
        assert_null(resp.body);
}

static void test_error_body_with_hostile_message(void **state)
{
        struct api_response resp = { 0 };
        struct space_error err = { 0 };
        /* A message built from a request (e.g. an id) must still give a JSON body. */
        space_error_set(&err, SPACE_E_NOT_FOUND, "sandbox %s not found", "\"}\n<script>");
        api_response_error(&resp, &err);
        assert_non_null(resp.body);
        char *text = json_dumps(resp.body, JSON_COMPACT);
        assert_non_null(text);
        json_t *back = json_loads(text, 0, NULL);
        assert_non_null(back);
        assert_true(json_equal(back, resp.body));
        json_decref(back);
        free(text);
        json_decref(resp.body);
}

/* Messages quote request input (ids from the path, truncated with %.64s): bytes that are
 * not UTF-8, or a multi-byte character cut in half, must not cost the client its error body. */
static void test_error_body_with_invalid_utf8_message(void **state)
{
        char id[80];
        memset(id, 'a', 63);
        memcpy(id + 63, "\xc3\xa9", 3); /* U+00E9 straddles the %.64s cut */
        struct space_error errs[3] = { 0 };
        /* GET /v1/sandboxes/%FF */
        space_error_set(&errs[0], SPACE_E_NOT_FOUND, "sandbox %.64s not found", "\xff");
        /* GET /v1/sandboxes/aaa…aé (63 a's): a valid UTF-8 id cut in the middle of é */
        space_error_set(&errs[1], SPACE_E_NOT_FOUND, "sandbox %.64s not found", id);
        /* POST /v1/sandboxes {"env": {"AAA…Aé": "v"}}: the JSON reader quotes the bad key with %.64s */
        json_t *body = json_object(), *env = json_object();
        char key[80];
        memset(key, 'A', 63);
        memcpy(key + 63, "\xc3\xa9", 3);
        json_object_set_new(env, key, json_string("v"));
        json_object_set_new(body, "env", env);
        json_t *ret = NULL;
        assert_int_equal(api_json_string_map(body, "env", api_json_env_name_ok, 256, 100, &ret, &errs[2]), -1);
        json_decref(body);
        char missing[64] = "";
        for (size_t i = 0; i < 3; i++) {
                struct api_response resp = { 0 };
                const struct space_error err = errs[i];
                api_response_error(&resp, &err);
                assert_int_equal(resp.status, api_error_http_status(err.code));
                if (!resp.body) {
                        snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing), " %zu", i);
                        continue;
                }
                json_t *e = json_object_get(resp.body, "error");
                assert_string_equal(json_string_value(json_object_get(e, "code")), space_error_code_name(err.code));
                assert_non_null(json_string_value(json_object_get(e, "message")));
                json_decref(resp.body);
        }
        if (missing[0])
                fail_msg("no error body (message not valid UTF-8) for case(s)%s of 0 1 2", missing);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_every_code_has_its_status),
                cmocka_unit_test(test_status_survives_code_name_round_trip),
                cmocka_unit_test(test_error_body_shape),
                cmocka_unit_test(test_error_body_with_hostile_message),
                cmocka_unit_test(test_error_body_with_invalid_utf8_message),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
