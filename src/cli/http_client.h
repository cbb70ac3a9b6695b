/* http_client: a libcurl handle bound to one spaced base URL and API key. Sends a JSON body,
 * parses the JSON answer. Returns -errno:
 *   -EHOSTUNREACH  could not connect (refused, unresolvable, connect timeout, TLS handshake)
 *   -ETIMEDOUT     connected, but the answer did not come within the timeout
 *   -EBADMSG       the answer is not JSON
 *   -EFBIG         the answer is larger than HTTP_CLIENT_MAX_BODY
 *   -EIO           any other transport failure
 * http_client_error() then says what happened, in curl's words. */
#pragma once

#include <jansson.h>

#define HTTP_CLIENT_MAX_BODY (64u << 20)

struct http_client;

/* key may be NULL (no Authorization header). The client keeps its own copy of the key and
 * wipes it when freed. */
int http_client_new(const char *base_url, const char *key, struct http_client **ret_client);
struct http_client *http_client_free(struct http_client *c);

/* method: "GET", "POST", "DELETE". path starts with '/' and is already escaped. body may be
 * NULL. timeout_s 0 = no limit. On success (any HTTP status) returns 0, the status, and the
 * parsed answer (NULL when the answer is empty). */
int http_client_request(struct http_client *c, const char *method, const char *path, const json_t *body,
                        long timeout_s, long *ret_status, json_t **ret_body);

/* Why the last request failed; "" after a success. */
const char *http_client_error(const struct http_client *c);
