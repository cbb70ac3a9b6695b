/* cli_sse: an incremental parser of Server-Sent Events (text/event-stream). Bytes go in as
 * they arrive; each complete event (id, event name, data lines joined by '\n') is handed to
 * a callback. Comments (": keepalive") and unknown fields are skipped. */
#pragma once

#include <stddef.h>

typedef int (*cli_sse_event_fn)(void *userdata, const char *id, const char *event, const char *data, size_t len);

struct cli_sse {
        cli_sse_event_fn on_event;
        void *userdata;
        char *line;
        size_t line_len, line_cap;
        char *data;
        size_t data_len, data_cap;
        char id[64];
        char event[64];
        unsigned comments; /* comment lines seen (": keepalive": the stream is idle) */
};

void cli_sse_init(struct cli_sse *p, cli_sse_event_fn fn, void *userdata);
/* Returns 0, -ENOMEM, or what the callback returned when it was negative (parsing stops). */
int cli_sse_feed(struct cli_sse *p, const char *buf, size_t len);
void cli_sse_release(struct cli_sse *p);
