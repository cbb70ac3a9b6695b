/* e2b_connect: the parts of the Connect protocol (connectrpc.com) that envd speaks with the
 * JSON codec: a unary call is a JSON body in and out; a server stream is a request of one
 * envelope and a response of envelopes, the last one flagged end-of-stream. An envelope is
 * [u8 flags][u32 big-endian length][JSON]. Errors carry string codes (not_found, …). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/api_request.h"
#include "spaced/space_error.h"

#define E2B_CONNECT_FLAG_COMPRESSED 0x01
#define E2B_CONNECT_FLAG_END_STREAM 0x02
#define E2B_CONNECT_STREAM_TYPE "application/connect+json"

/* A growable byte buffer for response frames. Functions return 0 or -ENOMEM. */
struct e2b_buf {
        char *data;
        size_t len, cap;
};
int e2b_buf_reserve(struct e2b_buf *b, size_t more);
int e2b_buf_append(struct e2b_buf *b, const void *data, size_t len);
void e2b_buf_release(struct e2b_buf *b);

/* Appends one envelope holding the JSON text of msg (not consumed). */
int e2b_connect_frame(struct e2b_buf *b, uint8_t flags, const json_t *msg);
/* The end-of-stream envelope: {} or {"error": {"code", "message"}} when err is set. */
int e2b_connect_end_frame(struct e2b_buf *b, const struct space_error *err);

/* The request message: the one envelope of a streaming request (content type
 * application/connect+json), else the JSON body of a unary one. Must be an object. */
int e2b_connect_request(const struct api_request *req, json_t **ret, struct space_error *err);

/* The Connect name of an error code ("not_found") and its HTTP status for unary calls. */
const char *e2b_connect_code_name(enum space_error_code code);
unsigned e2b_connect_http_status(enum space_error_code code);
/* A unary error answer. */
void e2b_connect_reply_error(struct api_response *resp, const struct space_error *err);
/* A unary success: the message (owned) as application/json. */
void e2b_connect_reply(struct api_response *resp, json_t *msg);
/* A whole stream answered at once: just the end-of-stream frame with err (HTTP 200). */
void e2b_connect_reply_stream_error(struct api_response *resp, const struct space_error *err);
