/* http_client: a libcurl handle bound to one spaced base URL and API key. Sends a JSON body,
 * parses the JSON answer. Returns -errno:
 *   -EHOSTUNREACH  could not connect (refused, unresolvable, connect timeout, TLS handshake)
 *   -ETIMEDOUT     connected, but the answer did not come within the timeout
 *   -EBADMSG       the answer is not JSON
 *   -EFBIG         the answer is larger than HTTP_CLIENT_MAX_BODY
 *   -ECONNRESET    the answer was cut short (the connection closed before its end)
 *   -ECANCELED     a streamed transfer's own read or write failed (http_client_transfer)
 *   -EIO           any other transport failure
 * http_client_error() then says what happened, in curl's words. */
#pragma once

#include <jansson.h>
#include <signal.h>
#include <sys/types.h>

#define HTTP_CLIENT_MAX_BODY (64u << 20)

struct http_client;

/* key may be NULL (no Authorization header). The client keeps its own copy of the key and
 * wipes it when freed. */
int http_client_new(const char *base_url, const char *key, struct http_client **ret_client);
struct http_client *http_client_free(struct http_client *c);

/* method: "GET", "POST", "DELETE". path starts with '/' and is already escaped. body may be
 * NULL. timeout_s 0 = no limit. On success (any HTTP status) returns 0, the status, and the
 * parsed answer (NULL when the answer is empty). */
int http_client_request(struct http_client *c, const char *method, const char *path, const json_t *body, long timeout_s,
                        long *ret_status, json_t **ret_body);

/* A streamed request (http_client_transfer): a request body read piece by piece, and a 2xx
 * answer's body handed on as it arrives; nothing is held whole in memory. */
struct http_client_stream {
        const char *content_type; /* of the request body; NULL: none sent */
        const char *accept;       /* the Accept header; NULL: any */
        /* The request body, when set: fills buf with up to max bytes and returns how many,
         * 0 at its end, or -errno. */
        ssize_t (*read)(void *userdata, char *buf, size_t max);
        long long size; /* the request body's length, or -1: unknown (sent chunked) */
        /* The body of a 2xx answer, when set: takes the next piece, returns 0 or -errno.
         * Other answers are parsed as JSON, as http_client_request does. */
        int (*write)(void *userdata, const char *data, size_t len);
        void *userdata;
        /* When set, sent as the Last-Event-ID header (an SSE stream's resume point); read at
         * each try, so a stream that updates it resumes where it was. */
        const char *last_event_id;
        /* When set, the stream may be tried again (cli_request's retries): puts the request
         * body back at its start and drops any partly received answer. */
        void (*rewind)(void *userdata);
        /* When set, checked about once a second: nonzero stops the transfer (-EINTR), e.g. a
         * flag a SIGINT handler sets. */
        const volatile sig_atomic_t *interrupted;
        int error; /* set by the transfer: the -errno read or write returned, else 0 */
};

/* Like http_client_request, but the bodies go through stream. There is no overall time limit;
 * a transfer that moves no byte for HTTP_CLIENT_STALL_S seconds fails with -ETIMEDOUT. When
 * read or write fails the transfer stops and -ECANCELED is returned (stream->error says why).
 * ret_body is NULL after a 2xx answer that went to write. */
#define HTTP_CLIENT_STALL_S 600L
int http_client_transfer(struct http_client *c, const char *method, const char *path, struct http_client_stream *stream,
                         long *ret_status, json_t **ret_body);

/* A header of the last answer (the first of that name), or NULL. Valid until the next
 * request. */
const char *http_client_header(const struct http_client *c, const char *name);

/* Why the last request failed; "" after a success. */
const char *http_client_error(const struct http_client *c);
