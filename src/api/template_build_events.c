/* GET /v1/templates/builds/{op}/events: a build's log as Server-Sent Events.
 *
 * One event per line of the log: `event: line`, `data: {"text": "..."}`, and as id the byte
 * offset in the log just after that line. A client that reconnects with Last-Event-ID: n (or
 * ?after=n) gets the lines after offset n, whether spaced restarted in between or not. When
 * the build has ended the stream closes with `event: end`, `data: {"state", "error"}`. */
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api/api_json.h"
#include "api/api_render.h"
#include "api/api_routes.h"
#include "api/output_encoding.h"
#include "service/operation_service.h"
#include "spaced/spaced_context.h"
#include "templates/build_log.h"

#define KEEPALIVE_TICKS 150 /* of 100 ms: a comment line every 15 s keeps proxies from timing out */

struct build_events {
        struct spaced_context *ctx;
        struct principal caller; /* who opened the stream */
        char op_id[32];
        char path[4096];
        int fd;
        off_t offset; /* of the next byte of the log to turn into events */
        char *out;
        size_t out_len, out_off;
        bool done;
        int idle;
};

static int out_add(struct build_events *st, const char *text)
{
        size_t n = strlen(text);
        char *grown = realloc(st->out, st->out_len + n + 1);
        if (!grown)
                return -1;
        st->out = grown;
        memcpy(st->out + st->out_len, text, n + 1);
        st->out_len += n;
        return 0;
}

static int add_event(struct build_events *st, long long id, const char *event, json_t *data)
{
        char *text = json_dumps(data, JSON_COMPACT | JSON_ENSURE_ASCII);
        json_decref(data);
        char head[96];
        if (id >= 0)
                snprintf(head, sizeof(head), "id: %lld\nevent: %s\ndata: ", id, event);
        else
                snprintf(head, sizeof(head), "event: %s\ndata: ", event);
        int r = text && out_add(st, head) == 0 && out_add(st, text) == 0 && out_add(st, "\n\n") == 0 ? 0 : -1;
        free(text);
        return r;
}

/* Turns the complete lines written since offset into events (all of it when final). */
static int produce(struct build_events *st, bool final)
{
        if (st->fd < 0)
                st->fd = open(st->path, O_RDONLY | O_CLOEXEC);
        if (st->fd < 0)
                return 0;
        char buf[65536];
        ssize_t n = pread(st->fd, buf, sizeof(buf), st->offset);
        if (n <= 0)
                return n < 0 ? -1 : 0;
        size_t used = 0;
        for (;;) {
                char *nl = memchr(buf + used, '\n', (size_t)n - used);
                size_t len = nl ? (size_t)(nl - (buf + used)) : (size_t)n - used;
                if (!nl && !(final && len > 0) && !(len == sizeof(buf) && used == 0))
                        break; /* an unfinished line waits for its end */
                if (!nl && len == 0)
                        break;
                json_t *line = json_pack("{s:o}", "text", output_encoding_utf8((const uint8_t *)buf + used, len));
                used += len + (nl ? 1 : 0);
                if (add_event(st, (long long)(st->offset + (off_t)used), "line", line) < 0)
                        return -1;
                if (used >= (size_t)n)
                        break;
        }
        st->offset += (off_t)used;
        return used > 0;
}

static ssize_t events_read(void *cls, char *buf, size_t max)
{
        struct build_events *st = cls;
        for (;;) {
                if (st->out_off < st->out_len) {
                        size_t n = st->out_len - st->out_off < max ? st->out_len - st->out_off : max;
                        memcpy(buf, st->out + st->out_off, n);
                        st->out_off += n;
                        if (st->out_off == st->out_len)
                                st->out_off = st->out_len = 0;
                        return (ssize_t)n;
                }
                if (st->done || atomic_load(&st->ctx->shutting_down))
                        return 0;
                struct operation op;
                bool over = operation_service_over(st->ctx, &st->caller, st->op_id, &op);
                int r = produce(st, over);
                if (r < 0)
                        return -1;
                if (r > 0)
                        continue;
                if (over) {
                        json_t *end = json_pack(
                                "{s:s, s:o}", "state", operation_state_name(op.state), "error",
                                op.error_code[0] ? json_pack("{s:s, s:s}", "code", op.error_code, "message", op.error_message)
                                                 : json_null());
                        if (add_event(st, -1, "end", end) < 0)
                                return -1;
                        st->done = true;
                        continue;
                }
                if (++st->idle >= KEEPALIVE_TICKS) {
                        st->idle = 0;
                        if (out_add(st, ": keepalive\n\n") < 0)
                                return -1;
                        continue;
                }
                nanosleep(&(struct timespec){ .tv_nsec = 100 * 1000 * 1000 }, NULL);
        }
}

static void events_free(void *cls)
{
        struct build_events *st = cls;
        if (st->fd >= 0)
                close(st->fd);
        free(st->out);
        free(st);
}

void route_template_build_events(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct operation op;
        const char *id = req->segments[3];
        const char *after = api_request_query(req, "after");
        const char *last = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, "Last-Event-ID");
        const char *from = last && *last ? last : after;
        long long offset = 0;
        if (from) {
                char *end;
                errno = 0;
                offset = strtoll(from, &end, 10);
                if (errno || end == from || *end || offset < 0) {
                        space_error_set(&err, SPACE_E_INVALID_REQUEST,
                                        "Last-Event-ID / after must be an event id (a log offset)");
                        return api_response_error(resp, &err);
                }
        }
        if (!api_json_name_ok(id)) {
                space_error_set(&err, SPACE_E_NOT_FOUND, "build %.64s not found", id);
                return api_response_error(resp, &err);
        }
        if (operation_service_get_build(req->ctx, &req->principal, id, &op, &err) < 0)
                return api_response_error(resp, &err);
        struct build_events *st = calloc(1, sizeof(*st));
        if (!st) {
                space_error_set(&err, SPACE_E_INTERNAL, "out of memory");
                return api_response_error(resp, &err);
        }
        st->ctx = req->ctx;
        st->caller = req->principal;
        st->fd = -1;
        st->offset = (off_t)offset;
        snprintf(st->op_id, sizeof(st->op_id), "%s", id);
        build_log_path(req->ctx->cfg.state_dir, id, st->path, sizeof(st->path));
        resp->status = 200;
        resp->stream = (struct api_stream){ .read = events_read, .free = events_free, .cls = st };
        resp->content_type = "text/event-stream";
        resp->headers = json_pack("{s:s, s:s}", "Cache-Control", "no-store", "X-Space-Operation-Id", id);
}
