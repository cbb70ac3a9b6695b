/* GET /v1/sandboxes/{id}/commands/{cid}/events: a command's output as Server-Sent Events.
 *
 * Each record of the command log is one event whose id is its sequence number, so a client
 * that reconnects with Last-Event-ID: n (or ?after=n) gets exactly the events after n,
 * whether spaced restarted in between or not. The stream ends after the exit event. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_json.h"
#include "api/api_routes.h"
#include "data_plane/command_channels.h"
#include "data_plane/command_follower.h"
#include "data_plane/command_log.h"
#include "data_plane/command_service.h"
#include "microhttpd.h"
#include "api/api_render.h"
#include "service/approval_service.h"
#include "service/sandbox_access.h"
#include "service/session_service.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

#define SESSION_CHECK_MS 5000

struct event_stream {
        struct spaced_context *ctx;
        struct principal caller; /* who opened the stream */
        char sandbox_id[32];
        char session_id[32];
        int64_t session_checked_ms;
        struct command_follower *follower;
        int keepalive_ms;
        int64_t idle_since_us; /* when the last bytes went out */
        char *out;
        size_t out_len, out_off, out_cap;
        bool done;
};

static int out_reserve(struct event_stream *st, size_t n)
{
        if (st->out_len + n <= st->out_cap)
                return 0;
        size_t cap = st->out_cap ? st->out_cap : 4096;
        while (cap < st->out_len + n)
                cap *= 2;
        char *grown = realloc(st->out, cap);
        if (!grown)
                return -ENOMEM;
        st->out = grown;
        st->out_cap = cap;
        return 0;
}

static int out_printf(struct event_stream *st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int out_printf(struct event_stream *st, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(NULL, 0, fmt, ap);
        va_end(ap);
        if (n < 0 || out_reserve(st, (size_t)n + 1) < 0)
                return -ENOMEM;
        va_start(ap, fmt);
        vsnprintf(st->out + st->out_len, (size_t)n + 1, fmt, ap);
        va_end(ap);
        st->out_len += (size_t)n;
        return 0;
}

static const char *kind_name(enum command_log_kind k)
{
        switch (k) {
        case COMMAND_LOG_STDERR:
                return "stderr";
        case COMMAND_LOG_PTY:
                return "pty";
        case COMMAND_LOG_EXIT:
                return "exit";
        default:
                return "stdout";
        }
}

/* One output record: data is base64 inside a small JSON object, written straight out. */
static int emit_record(void *cls, const struct command_log_record *rec)
{
        struct event_stream *st = cls;
        if (rec->kind == COMMAND_LOG_EXIT) {
                st->done = true;
                return out_printf(st, "id: %" PRIu64 "\nevent: exit\ndata: %.*s\n\n", rec->seq, (int)rec->len,
                                  (const char *)rec->data);
        }
        size_t b64 = 4 * ((rec->len + 2) / 3);
        if (out_printf(st, "id: %" PRIu64 "\nevent: %s\ndata: {\"data\":\"", rec->seq, kind_name(rec->kind)) < 0 ||
            out_reserve(st, b64 + 8) < 0)
                return -ENOMEM;
        st->out_len += (size_t)EVP_EncodeBlock((unsigned char *)st->out + st->out_len, rec->data, (int)rec->len);
        return out_printf(st, "\"}\n\n");
}

static int emit_dropped(void *cls, uint64_t first, uint64_t last)
{
        return out_printf(
                cls,
                "id: %" PRIu64 "\nevent: dropped\ndata: {\"first_seq\":%" PRIu64 ",\"last_seq\":%" PRIu64
                ",\"message\":\"older output was dropped: the command's log (or the sandbox's logs) reached its cap\"}\n\n",
                last, first, last);
}

/* Whether the command's log went with its sandbox (destroyed, or being destroyed: the
 * logs are removed before the row says destroyed). */
static bool log_removed_with_sandbox(struct spaced_context *ctx, const struct principal *p, const char *sandbox_id)
{
        struct sandbox sb;
        struct space_error unseen;
        if (sandbox_access_load(ctx, p, sandbox_id, &sb, &unseen) < 0)
                return false;
        bool gone = sb.state == SANDBOX_DESTROYED || sb.state == SANDBOX_DESTROYING;
        sandbox_release(&sb);
        return gone;
}

/* The end as the store has it, when the log has none: a command that never wrote one.
 * When the log was removed with its sandbox, what the reader missed is unknown: a `gone`
 * event (no id: there is nothing to resume from) says so, and no exit is made up. */
static int emit_end_from_store(void *cls, const struct command_record *rec, bool log_ended)
{
        struct event_stream *st = cls;
        uint64_t after = command_follower_position(st->follower);
        st->done = true;
        if (log_ended) /* the exit was sent */
                return 0;
        if (log_removed_with_sandbox(st->ctx, &st->caller, st->sandbox_id)) {
                char msg[160];
                snprintf(msg, sizeof(msg),
                         "the command's output was removed with its sandbox (destroyed): events after %" PRIu64 " cannot be sent",
                         after);
                json_t *g = json_pack("{s:s, s:s, s:s}", "reason", "log_removed", "message", msg, "command_state",
                                      rec->state == COMMAND_EXITED ? "exited" : "lost");
                if (g && rec->state == COMMAND_EXITED)
                        json_object_set_new(g, "exit_code", json_integer(rec->exit_code));
                else if (g && rec->reason[0])
                        json_object_set_new(g, "command_reason", json_string(rec->reason));
                char *text = g ? json_dumps(g, JSON_COMPACT) : NULL;
                json_decref(g);
                int r = text ? out_printf(st, "event: gone\ndata: %s\n\n", text) : -ENOMEM;
                free(text);
                return r;
        }
        if (rec->state == COMMAND_EXITED)
                return out_printf(st, "id: %" PRIu64 "\nevent: exit\ndata: {\"exit_code\":%d,\"signal\":%d,\"timed_out\":%s}\n\n",
                                  after + 1, rec->exit_code, rec->term_signal, rec->timed_out ? "true" : "false");
        const char *reason = rec->reason[0] ? rec->reason : "log_removed";
        json_t *j = json_pack("{s:n, s:b, s:s, s:s}", "exit_code", "lost", 1, "reason", reason, "message",
                              command_lost_message(reason));
        char *text = json_dumps(j, JSON_COMPACT);
        json_decref(j);
        int r = text ? out_printf(st, "id: %" PRIu64 "\nevent: exit\ndata: %s\n\n", after + 1, text) : -ENOMEM;
        free(text);
        return r;
}

static const struct command_follower_sink sink = {
        .record = emit_record,
        .dropped = emit_dropped,
        .ended = emit_end_from_store,
};

/* A stream lasts only as long as the token it was opened with: revoking or letting it
 * expire ends it (checked every few seconds), and the reconnect is refused. */
static bool session_still_valid(struct event_stream *st)
{
        int64_t now = wallclock_now_ms();
        if (now - st->session_checked_ms < SESSION_CHECK_MS)
                return true;
        st->session_checked_ms = now;
        return session_service_active(st->ctx, st->session_id);
}

/* How long the next wait may be: until a keepalive is due, and at most until the
 * session is checked again. */
static int wait_ms(const struct event_stream *st)
{
        int64_t left = st->keepalive_ms - (monotonic_now_us() - st->idle_since_us) / 1000;
        if (left > SESSION_CHECK_MS)
                left = SESSION_CHECK_MS;
        return left < 1 ? 1 : (int)left;
}

static ssize_t stream_read(void *cls, char *buf, size_t max)
{
        struct event_stream *st = cls;
        for (;;) {
                if (!session_still_valid(st))
                        return 0;
                if (st->out_off < st->out_len) {
                        size_t n = st->out_len - st->out_off;
                        if (n > max)
                                n = max;
                        memcpy(buf, st->out + st->out_off, n);
                        st->out_off += n;
                        if (st->out_off == st->out_len)
                                st->out_off = st->out_len = 0;
                        st->idle_since_us = monotonic_now_us();
                        return (ssize_t)n;
                }
                if (st->done)
                        return 0;
                int p = command_follower_next(st->follower, wait_ms(st));
                if (p == -ESHUTDOWN)
                        return 0;
                if (p < 0)
                        return -1; /* -EPIPE: the client went away; the command goes on */
                if (p == 0 && monotonic_now_us() - st->idle_since_us >= (int64_t)st->keepalive_ms * 1000 &&
                    out_printf(st, ": keepalive\n\n") < 0)
                        return -1;
                if (command_follower_done(st->follower) && st->out_len == 0)
                        st->done = true;
        }
}

static void stream_free(void *cls)
{
        struct event_stream *st = cls;
        command_follower_free(st->follower);
        free(st->out);
        free(st);
}

static int after_parse(struct api_request *req, uint64_t *ret, struct space_error *err)
{
        const char *v = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, "Last-Event-ID");
        const char *q = api_request_query(req, "after");
        if (q)
                v = q;
        if (!v || !*v)
                return 0;
        char *end;
        errno = 0;
        unsigned long long n = strtoull(v, &end, 10);
        if (errno || *end || v[0] == '-')
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "Last-Event-ID / after must be a sequence number");
        *ret = n;
        return 0;
}

void route_command_events(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct command_record rec;
        uint64_t after = 0;
        long long keepalive_s = 15;
        if (!api_json_name_ok(req->segments[4])) {
                space_error_set(&err, SPACE_E_NOT_FOUND, "command %.64s not found", req->segments[4]);
                return api_response_error(resp, &err);
        }
        if (after_parse(req, &after, &err) < 0 || api_request_query_int(req, "keepalive_s", 1, 300, &keepalive_s, &err) < 0 ||
            command_service_get(req->ctx, req->segments[2], req->segments[4], &rec, &err) < 0)
                return api_response_error(resp, &err);
        /* A held command's stream opens saying what it waits for (no id: it is not a record
         * of the log, and a reconnect that finds it still pending hears it again). */
        json_t *requested = NULL;
        struct approval_record apr;
        if (approval_service_for_command(req->ctx, &rec, &apr) == 0) {
                requested = json_pack("{s:s, s:s, s:s*, s:s, s:o}", "approval_id", apr.id, "policy_id", apr.policy_id, "rule_id",
                                      apr.rule_id[0] ? apr.rule_id : NULL, "reason", apr.reason, "expires_at",
                                      api_render_time(apr.expires_at_ms));
                approval_record_release(&apr);
        }
        command_record_release(&rec);
        if (log_removed_with_sandbox(req->ctx, &req->principal, req->segments[2])) {
                json_decref(requested);
                space_error_set(&err, SPACE_E_GONE, "the output of command %s was removed with sandbox %s (destroyed)",
                                req->segments[4], req->segments[2]);
                return api_response_error(resp, &err);
        }
        struct event_stream *st = calloc(1, sizeof(*st));
        if (!st) {
                json_decref(requested);
                space_error_set(&err, SPACE_E_INTERNAL, "out of memory");
                return api_response_error(resp, &err);
        }
        st->ctx = req->ctx;
        st->caller = req->principal;
        snprintf(st->sandbox_id, sizeof(st->sandbox_id), "%s", req->segments[2]);
        snprintf(st->session_id, sizeof(st->session_id), "%s", req->session_id);
        st->session_checked_ms = wallclock_now_ms();
        st->keepalive_ms = (int)keepalive_s * 1000;
        st->idle_since_us = monotonic_now_us();
        if (requested) {
                char *text = json_dumps(requested, JSON_COMPACT);
                json_decref(requested);
                if (!text || out_printf(st, "event: approval_requested\ndata: %s\n\n", text) < 0) {
                        free(text);
                        free(st->out);
                        free(st);
                        space_error_set(&err, SPACE_E_INTERNAL, "out of memory");
                        return api_response_error(resp, &err);
                }
                free(text);
        }
        const union MHD_ConnectionInfo *info = MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (command_follower_new(req->ctx, st->sandbox_id, req->segments[4], after, info ? info->connect_fd : -1, &sink, st,
                                 &st->follower) < 0) {
                free(st->out);
                free(st);
                space_error_set(&err, SPACE_E_INTERNAL, "out of memory");
                return api_response_error(resp, &err);
        }
        resp->status = 200;
        resp->content_type = "text/event-stream";
        resp->headers = json_pack("{s:s, s:s}", "Cache-Control", "no-store", "X-Accel-Buffering", "no");
        resp->stream = (struct api_stream){ .read = stream_read, .free = stream_free, .cls = st };
}
