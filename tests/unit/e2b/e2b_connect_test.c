/* Unit tests of e2b_connect: Connect envelopes, request parsing, error codes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "e2b/e2b_connect.h"

static uint32_t be32(const char *p)
{
        const uint8_t *u = (const uint8_t *)p;
        return (uint32_t)u[0] << 24 | (uint32_t)u[1] << 16 | (uint32_t)u[2] << 8 | u[3];
}

static void test_frame_is_flag_length_json(void **state)
{
        struct e2b_buf b = { 0 };
        json_t *msg = json_pack("{s:{s:{s:i}}}", "event", "start", "pid", 7);
        assert_int_equal(e2b_connect_frame(&b, 0, msg), 0);
        assert_true(b.len > 5);
        assert_int_equal((uint8_t)b.data[0], 0);
        assert_int_equal(be32(b.data + 1), b.len - 5);
        assert_memory_equal(b.data + 5, "{\"event\":{\"start\":{\"pid\":7}}}", b.len - 5);
        json_decref(msg);
        e2b_buf_release(&b);
}

static void test_end_frame_empty_and_with_error(void **state)
{
        struct e2b_buf b = { 0 };
        assert_int_equal(e2b_connect_end_frame(&b, NULL), 0);
        assert_int_equal((uint8_t)b.data[0], E2B_CONNECT_FLAG_END_STREAM);
        assert_int_equal(be32(b.data + 1), 2);
        assert_memory_equal(b.data + 5, "{}", 2);
        size_t first = b.len;
        struct space_error err = { .code = SPACE_E_NOT_FOUND };
        strcpy(err.message, "process with pid 9 not found");
        assert_int_equal(e2b_connect_end_frame(&b, &err), 0);
        assert_int_equal((uint8_t)b.data[first], E2B_CONNECT_FLAG_END_STREAM);
        uint32_t n = be32(b.data + first + 1);
        json_t *j = json_loadb(b.data + first + 5, n, 0, NULL);
        assert_non_null(j);
        assert_string_equal(json_string_value(json_object_get(json_object_get(j, "error"), "code")), "not_found");
        json_decref(j);
        e2b_buf_release(&b);
}

static struct api_request request(const char *content_type, const char *body, size_t len)
{
        return (struct api_request){ .content_type = content_type, .body = body, .body_len = len };
}

static void test_request_unwraps_one_envelope(void **state)
{
        char body[64] = { 0, 0, 0, 0, 14 };
        memcpy(body + 5, "{\"stdin\":true}", 14);
        struct api_request req = request("application/connect+json", body, 19);
        struct space_error err = { 0 };
        json_t *msg = NULL;
        assert_int_equal(e2b_connect_request(&req, &msg, &err), 0);
        assert_true(json_is_true(json_object_get(msg, "stdin")));
        json_decref(msg);
}

static void test_request_rejects_bad_envelopes(void **state)
{
        struct space_error err = { 0 };
        json_t *msg = NULL;
        char cut[] = { 0, 0, 0, 0, 40, '{', '}' };
        struct api_request req = request("application/connect+json", cut, sizeof(cut));
        assert_int_equal(e2b_connect_request(&req, &msg, &err), -1);
        assert_int_equal(err.code, SPACE_E_INVALID_REQUEST);
        char compressed[] = { 1, 0, 0, 0, 2, '{', '}' };
        req = request("application/connect+json", compressed, sizeof(compressed));
        assert_int_equal(e2b_connect_request(&req, &msg, &err), -1);
        req = request("application/connect+json", "\0\0", 2);
        assert_int_equal(e2b_connect_request(&req, &msg, &err), -1);
        req = request("application/proto", "x", 1);
        assert_int_equal(e2b_connect_request(&req, &msg, &err), -1);
        req = request("application/json", "[1]", 3);
        assert_int_equal(e2b_connect_request(&req, &msg, &err), -1);
        assert_null(msg);
}

static void test_request_unary_json_and_empty(void **state)
{
        struct space_error err = { 0 };
        json_t *msg = NULL;
        struct api_request req = request("application/json; charset=utf-8", "{\"a\":1}", 7);
        assert_int_equal(e2b_connect_request(&req, &msg, &err), 0);
        assert_int_equal(json_integer_value(json_object_get(msg, "a")), 1);
        json_decref(msg);
        req = request(NULL, "", 0);
        assert_int_equal(e2b_connect_request(&req, &msg, &err), 0);
        assert_int_equal(json_object_size(msg), 0);
        json_decref(msg);
}

static void test_codes_and_statuses(void **state)
{
        assert_string_equal(e2b_connect_code_name(SPACE_E_NOT_FOUND), "not_found");
        assert_int_equal(e2b_connect_http_status(SPACE_E_NOT_FOUND), 404);
        assert_string_equal(e2b_connect_code_name(SPACE_E_INVALID_REQUEST), "invalid_argument");
        assert_int_equal(e2b_connect_http_status(SPACE_E_INVALID_REQUEST), 400);
        assert_string_equal(e2b_connect_code_name(SPACE_E_UNAUTHORIZED), "unauthenticated");
        assert_int_equal(e2b_connect_http_status(SPACE_E_UNAUTHORIZED), 401);
        assert_string_equal(e2b_connect_code_name(SPACE_E_UNAVAILABLE), "unavailable");
        assert_int_equal(e2b_connect_http_status(SPACE_E_UNAVAILABLE), 503);
        assert_string_equal(e2b_connect_code_name(SPACE_E_TIMEOUT), "deadline_exceeded");
        assert_string_equal(e2b_connect_code_name(SPACE_E_INTERNAL), "internal");
        assert_int_equal(e2b_connect_http_status(SPACE_E_INTERNAL), 500);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_frame_is_flag_length_json),    cmocka_unit_test(test_end_frame_empty_and_with_error),
                cmocka_unit_test(test_request_unwraps_one_envelope), cmocka_unit_test(test_request_rejects_bad_envelopes),
                cmocka_unit_test(test_request_unary_json_and_empty), cmocka_unit_test(test_codes_and_statuses),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
