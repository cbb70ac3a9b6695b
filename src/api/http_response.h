/* http_response: turns an api_response (JSON body or stream) into a libmicrohttpd
 * response and queues it. Shared by spaced's API server and the E2B front door. */
#pragma once

#include <microhttpd.h>
#include <stdbool.h>

#include "api/api_request.h"
#include "api/request_trail.h"

/* Queues resp on conn, taking what it owns (body text, stream).
 * json_newline: end a JSON body with '\n' (spaced's API does; E2B's does not). Streams
 * are read in blocks of stream_block bytes. */
/* A request body gathered in memory up to a limit (NUL-terminated for the JSON parser). */
struct http_body {
        char *data;
        size_t len, cap;
        bool too_large; /* more than the limit came: the rest is dropped, the answer is 413 */
};

/* Appends n bytes; over limit only marks too_large. Returns 0, or -ENOMEM. */
int http_body_append(struct http_body *b, const char *data, size_t n, size_t limit);

/* With a trail (or NULL): X-Request-Id is added, and the status, error code and bytes sent
 * are recorded in it. */
enum MHD_Result http_response_send(struct MHD_Connection *conn, struct api_response *resp, bool json_newline, size_t stream_block,
                                   struct request_trail *trail);
