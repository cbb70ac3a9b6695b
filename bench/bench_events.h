/* bench_events: GET /v1/sandboxes/{id}/commands/{cid}/events with an attach token, read as
 * it arrives through a bench_sse parser. One libcurl easy handle, reused from connection to
 * connection; usable alone (bench_events_run) or in a curl multi handle (bench_events_curl). */
#pragma once

#include <curl/curl.h>
#include <stdint.h>

#include "bench_sse.h"

struct bench_events {
        CURL *curl;
        struct curl_slist *headers;
        char *base_url;
        char *token;
        struct bench_sse sse;
        size_t bytes;  /* received on the current connection */
        int stop;      /* the callback asked to stop (the transfer was cut on purpose) */
        int failed;    /* parsing failed (-errno) */
        char curl_error[CURL_ERROR_SIZE];
};

/* Returns 0 or -ENOMEM. fn is called for every event (see bench_sse). */
int bench_events_new(const char *base_url, bench_sse_fn fn, void *userdata, struct bench_events **ret);
void bench_events_free(struct bench_events *e);

/* Prepares the next connection: the token, the command, Last-Event-ID (none when 0) and
 * ?keepalive_s= (none when 0). Returns 0, -ENOMEM or -ENAMETOOLONG. */
int bench_events_prepare(struct bench_events *e, const char *token, const char *sandbox_id, const char *command_id,
                         uint64_t last_event_id, int keepalive_s);

/* Runs the prepared connection to its end. Returns 0 when the stream ended by itself or the
 * callback stopped it, -EPROTO on an HTTP status other than 200, -EIO on transport failure,
 * or the parser's -errno. */
int bench_events_run(struct bench_events *e);

/* The same judgement for a transfer a curl multi handle finished with `rc`. */
int bench_events_result(struct bench_events *e, CURLcode rc);
