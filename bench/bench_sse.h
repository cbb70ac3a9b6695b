/* bench_sse: an incremental parser of a text/event-stream (Server-Sent Events), and the
 * decoding of the data plane's output payload {"data":"<base64>"}. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bench_sse_event {
        uint64_t id;       /* 0 when the event had no id field */
        const char *event; /* "message" when it had no event field */
        const char *data;  /* the data lines joined by '\n'; NUL-terminated */
        size_t data_len;
};

/* Called once per dispatched event; returns 0 to go on, <0 to stop the stream. */
typedef int (*bench_sse_fn)(void *userdata, const struct bench_sse_event *ev);

struct bench_sse {
        bench_sse_fn fn;
        void *userdata;
        char *line; /* a line cut by the end of a chunk */
        size_t line_len, line_cap;
        char *data;
        size_t data_len, data_cap;
        char event[32];
        uint64_t id;
        bool has_data;
        size_t comments; /* comment lines seen (": keepalive") */
        size_t events;   /* events dispatched */
};

void bench_sse_init(struct bench_sse *p, bench_sse_fn fn, void *userdata);
/* Forgets a partly received event (after a reconnect); keeps the buffers. */
void bench_sse_reset(struct bench_sse *p);
void bench_sse_release(struct bench_sse *p);
/* Parses one chunk of the stream. Returns 0, the callback's negative answer (parsing stops
 * there), or -ENOMEM. */
int bench_sse_feed(struct bench_sse *p, const char *buf, size_t n);

/* The base64 text of an output event's data {"data":"..."}. Returns 0 or -EBADMSG. */
int bench_sse_payload(const struct bench_sse_event *ev, const char **ret_b64, size_t *ret_len);
/* The decoded size of n base64 characters, at most. */
static inline size_t bench_base64_max(size_t n)
{
        return n / 4 * 3 + 3;
}
/* Decodes base64 (with padding, no line breaks) into out, which holds bench_base64_max(n)
 * bytes. Returns the decoded length or -EBADMSG. */
long bench_base64_decode(const char *in, size_t n, unsigned char *out);
