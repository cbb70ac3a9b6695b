/* e2b_process_stream: follows a command's log (data_plane/command_log.h) and writes it as
 * envd process events in Connect envelopes: start{pid}, data{stdout|stderr|pty}, keepalive
 * while idle, end{exitCode, exited, status, error}, then the end-of-stream envelope. The
 * read callback blocks (HTTP is thread per connection) waiting on the command's channel,
 * like the SSE route does. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <microhttpd.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "data_plane/command_channels.h"
#include "data_plane/command_follower.h"
#include "data_plane/command_log.h"
#include "data_plane/command_service.h"
#include "e2b/e2b_connect.h"
#include "e2b/e2b_routes.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"


struct process_stream {
        struct spaced_context *ctx;
        struct command_follower *follower;
        int64_t deadline_us; /* monotonic; 0 none */
        int keepalive_ms;
        int64_t idle_since_us; /* when the last event was written */
        struct e2b_buf out;
        size_t out_off;
        bool done;
        bool drop; /* done, and the connection is cut once out is written (no end-of-stream) */
        bool held; /* held for approval: the start event waits until the command starts */
        char sandbox_id[32];
        char command_id[32];
};

#define HELD_CHECK_MS 250

static int emit_event(struct process_stream *st, json_t *event);

/* A held command that started (or ended after starting) gets its start event, first. */
static int held_check(struct process_stream *st)
{
        struct command_record rec;
        if (!st->held || command_service_get(st->ctx, st->sandbox_id, st->command_id, &rec, &(struct space_error){ 0 }) < 0)
                return 0;
        bool started = rec.state == COMMAND_RUNNING || rec.state == COMMAND_EXITED;
        int32_t pid = rec.pid;
        command_record_release(&rec);
        if (!started)
                return 0;
        st->held = false;
        return emit_event(st, json_pack("{s:{s:i}}", "start", "pid", pid));
}

static int emit_event(struct process_stream *st, json_t *event)
{
        json_t *msg = json_pack("{s:o}", "event", event);
        int r = msg ? e2b_connect_frame(&st->out, 0, msg) : -ENOMEM;
        json_decref(msg);
        return r;
}

static int emit_data(struct process_stream *st, const char *kind, const uint8_t *data, size_t len)
{
        char *b64 = malloc(4 * ((len + 2) / 3) + 1);
        if (!b64)
                return -ENOMEM;
        EVP_EncodeBlock((unsigned char *)b64, data, (int)len);
        int r = emit_event(st, json_pack("{s:{s:s}}", "data", kind, b64));
        free(b64);
        return r;
}

/* Go's os.ProcessState wording, which SDKs show: "exit status 2", "signal: killed". A
 * process that was lost (its sandbox destroyed or stopped, its agent gone) has no exit in
 * envd's terms: envd went with it and the stream just drops, which the SDK raises as "the
 * sandbox was killed" once /health says so. */
static int emit_end(struct process_stream *st, const json_t *exit_info)
{
        json_t *code = json_object_get(exit_info, "exit_code");
        if (json_is_true(json_object_get(exit_info, "lost")) || !json_is_integer(code)) {
                st->done = st->drop = true;
                return 0;
        }
        json_t *end = json_object();
        char status[160];
        int sig = (int)json_integer_value(json_object_get(exit_info, "signal"));
        const char *message = json_string_value(json_object_get(exit_info, "message"));
        if (sig > 0) {
                const char *name = strsignal(sig);
                snprintf(status, sizeof(status), "signal: %s", name ? name : "unknown");
                status[8] = (char)tolower((unsigned char)status[8]);
                json_object_set_new(end, "exitCode", json_integer(-1));
                json_object_set_new(end, "exited", json_false());
                json_object_set_new(end, "error", json_string(status));
        } else {
                json_int_t c = json_integer_value(code);
                snprintf(status, sizeof(status), "exit status %lld", (long long)c);
                if (c != 0) {
                        json_object_set_new(end, "exitCode", json_integer(c));
                        json_object_set_new(end, "error", json_string(message && c == 127 ? message : status));
                }
                json_object_set_new(end, "exited", json_true());
        }
        json_object_set_new(end, "status", json_string(status));
        st->done = true;
        int r = emit_event(st, json_pack("{s:o}", "end", end));
        return r < 0 ? r : e2b_connect_end_frame(&st->out, NULL);
}

static int emit_record(void *cls, const struct command_log_record *rec)
{
        struct process_stream *st = cls;
        int h = held_check(st);
        if (h < 0)
                return h;
        if (rec->kind == COMMAND_LOG_EXIT) {
                json_t *info = json_loadb((const char *)rec->data, rec->len, 0, NULL);
                int r = emit_end(st, info);
                json_decref(info);
                return r;
        }
        const char *kind = rec->kind == COMMAND_LOG_STDERR ? "stderr" : rec->kind == COMMAND_LOG_PTY ? "pty" : "stdout";
        return emit_data(st, kind, rec->data, rec->len);
}

/* The end as the store has it, when the log says nothing more. */
static int emit_end_from_store(void *cls, const struct command_record *rec, bool log_ended)
{
        (void)log_ended; /* a reader that started at the log's end still gets an end */
        struct process_stream *st = cls;
        int h = held_check(st);
        if (h < 0)
                return h;
        if (st->held) { /* it never started: denied, expired, or refused by a policy by then */
                struct space_error err = { .code = SPACE_E_POLICY_DENIED };
                snprintf(err.message, sizeof(err.message), "%s", command_lost_message(rec->reason));
                st->done = true;
                return e2b_connect_end_frame(&st->out, &err);
        }
        json_t *info = rec->state == COMMAND_EXITED
                ? json_pack("{s:i, s:i}", "exit_code", rec->exit_code, "signal", rec->term_signal)
                : json_pack("{s:n, s:b, s:s}", "exit_code", "lost", 1, "message", rec->reason);
        int r = info ? emit_end(cls, info) : -ENOMEM;
        json_decref(info);
        return r;
}

/* envd has no word for dropped output: the output is just shorter (.dropped NULL). */
static const struct command_follower_sink sink = {
        .record = emit_record,
        .ended = emit_end_from_store,
};

/* How long the next wait may be: until a keepalive is due or the deadline passes (the
 * follower itself looks at the client and at shutdown every second). */
static int wait_ms(const struct process_stream *st)
{
        int64_t now = monotonic_now_us();
        int64_t left = st->keepalive_ms - (now - st->idle_since_us) / 1000;
        if (st->deadline_us && (st->deadline_us - now) / 1000 < left)
                left = (st->deadline_us - now) / 1000;
        if (st->held && left > HELD_CHECK_MS)
                left = HELD_CHECK_MS;
        return left < 1 ? 1 : (int)left;
}

static ssize_t stream_read(void *cls, char *buf, size_t max)
{
        struct process_stream *st = cls;
        for (;;) {
                if (st->out_off < st->out.len) {
                        size_t n = st->out.len - st->out_off;
                        if (n > max)
                                n = max;
                        memcpy(buf, st->out.data + st->out_off, n);
                        st->out_off += n;
                        if (st->out_off == st->out.len)
                                st->out_off = st->out.len = 0;
                        st->idle_since_us = monotonic_now_us();
                        return (ssize_t)n;
                }
                if (st->done)
                        return st->drop ? -1 : 0; /* -1: the connection is cut, no end-of-stream */
                if (atomic_load(&st->ctx->shutting_down)) {
                        struct space_error err = { .code = SPACE_E_UNAVAILABLE };
                        snprintf(err.message, sizeof(err.message), "spaced is stopping; the process goes on: connect again");
                        st->done = true;
                        if (e2b_connect_end_frame(&st->out, &err) < 0)
                                return -1;
                        continue;
                }
                if (st->deadline_us && monotonic_now_us() >= st->deadline_us) {
                        struct space_error err = { .code = SPACE_E_TIMEOUT };
                        snprintf(err.message, sizeof(err.message), "the call's timeout passed; the process goes on");
                        st->done = true;
                        if (e2b_connect_end_frame(&st->out, &err) < 0)
                                return -1;
                        continue;
                }
                if (held_check(st) < 0)
                        return -1;
                if (st->out.len > 0)
                        continue;
                int p = command_follower_next(st->follower, wait_ms(st));
                if (p == -ESHUTDOWN)
                        continue; /* said above */
                if (p < 0)
                        return -1; /* -EPIPE: the client went away; the process goes on and a Connect call can follow it again */
                if (p == 0 && monotonic_now_us() - st->idle_since_us >= (int64_t)st->keepalive_ms * 1000 &&
                    emit_event(st, json_pack("{s:{}}", "keepalive")) < 0)
                        return -1;
        }
}

static void stream_free(void *cls)
{
        struct process_stream *st = cls;
        command_follower_free(st->follower);
        e2b_buf_release(&st->out);
        free(st);
}

int e2b_process_stream_begin(struct e2b_call *call, const char *command_id, int32_t pid, bool from_end, int64_t deadline_ms,
                             int keepalive_ms, struct api_response *resp, struct space_error *err)
{
        struct process_stream *st = calloc(1, sizeof(*st));
        if (!st)
                return space_error_set(err, SPACE_E_INTERNAL, "out of memory");
        st->ctx = call->req.ctx;
        char log_dir[PATH_MAX];
        uint64_t after = 0;
        command_channels_log_dir(st->ctx, call->sandbox_id, command_id, log_dir, sizeof(log_dir));
        /* No log yet: nothing was written, so its start is its end. */
        int q = from_end ? command_log_end_seq(log_dir, &after) : 0;
        if (q < 0 && q != -ENOENT) {
                free(st);
                return space_error_set(err, SPACE_E_INTERNAL, "read the output log of %s: %s", command_id, strerror(-q));
        }
        st->keepalive_ms = keepalive_ms > 0 ? keepalive_ms : 30000;
        st->deadline_us = deadline_ms > 0 ? monotonic_now_us() + deadline_ms * 1000 : 0;
        st->idle_since_us = monotonic_now_us();
        st->held = pid < 0;
        snprintf(st->sandbox_id, sizeof(st->sandbox_id), "%s", call->sandbox_id);
        snprintf(st->command_id, sizeof(st->command_id), "%s", command_id);
        const union MHD_ConnectionInfo *info = MHD_get_connection_info(call->req.conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (command_follower_new(st->ctx, call->sandbox_id, command_id, after, info ? info->connect_fd : -1, &sink, st,
                                 &st->follower) < 0 ||
            (!st->held && emit_event(st, json_pack("{s:{s:i}}", "start", "pid", pid)) < 0)) {
                stream_free(st);
                return space_error_set(err, SPACE_E_INTERNAL, "out of memory");
        }
        resp->status = 200;
        resp->content_type = E2B_CONNECT_STREAM_TYPE;
        resp->stream = (struct api_stream){ .read = stream_read, .free = stream_free, .cls = st };
        return 0;
}
