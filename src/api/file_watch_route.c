/* GET /v1/sandboxes/{id}/files/watch?path=&recursive=: changes under a directory as
 * Server-Sent Events (`event: create|write|remove|rename|chmod|overflow`, data
 * {"path","name","type"}), with a `: keepalive` comment when idle (?keepalive_s=, default 15). The connection to the
 * agent stays open for the stream; closing it ends the agent's watch. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "api/api_routes.h"
#include "api/file_request.h"
#include "api/output_encoding.h"
#include "cleanup.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"
#include "service/policy_gate.h"

#define WATCH_POLL_MS 1000

struct watch_stream {
        struct spaced_context *ctx;
        int agent;
        char *pending; /* formatted bytes not yet handed to libmicrohttpd */
        size_t pending_len, pending_off;
        int64_t last_sent_us;
        int64_t keepalive_us;
};

static const char *const event_names[] = { "", "create", "write", "remove", "rename", "chmod", "overflow" };
static const char *const type_names[] = { "other", "file", "directory", "symlink" };

/* One SSE event from a FILE_EVENT frame into st->pending. */
static int format_event(struct watch_stream *st, const struct agent_frame *f)
{
        uint8_t kind = 0;
        struct agent_file_entry e = { 0 };
        size_t cursor = 0;
        agent_frame_get_u8(f, AGENT_F_FILE_EVENT_KIND, &kind);
        if (kind == 0 || kind >= sizeof(event_names) / sizeof(event_names[0]))
                return 0; /* unknown kinds are skipped */
        json_t *data;
        if (agent_files_next_entry(f, &cursor, &e) == 1)
                data = json_pack("{s:o, s:o, s:s}", "path", output_encoding_utf8((const uint8_t *)e.path, e.path_len), "name",
                                 output_encoding_utf8((const uint8_t *)e.name, e.name_len), "type",
                                 type_names[e.type < 4 ? e.type : 0]);
        else
                data = json_object();
        char *text = data ? json_dumps(data, JSON_COMPACT) : NULL;
        json_decref(data);
        if (!text)
                return -ENOMEM;
        free(st->pending);
        st->pending = NULL;
        int n = asprintf(&st->pending, "event: %s\ndata: %s\n\n", event_names[kind], text);
        free(text);
        if (n < 0) {
                st->pending = NULL;
                return -ENOMEM;
        }
        st->pending_len = (size_t)n;
        st->pending_off = 0;
        return 0;
}

static ssize_t watch_read(void *cls, char *buf, size_t max)
{
        struct watch_stream *st = cls;
        for (;;) {
                if (st->pending && st->pending_off < st->pending_len) {
                        size_t n = st->pending_len - st->pending_off;
                        if (n > max)
                                n = max;
                        memcpy(buf, st->pending + st->pending_off, n);
                        st->pending_off += n;
                        st->last_sent_us = monotonic_now_us();
                        return (ssize_t)n;
                }
                if (atomic_load(&st->ctx->shutting_down))
                        return 0;
                struct pollfd p = { .fd = st->agent, .events = POLLIN };
                int r = poll(&p, 1, WATCH_POLL_MS);
                if (r < 0 && errno != EINTR)
                        return -1;
                if (r <= 0) {
                        if (monotonic_now_us() - st->last_sent_us < st->keepalive_us)
                                continue;
                        /* Idle: a comment keeps proxies from timing out and tells us if the client left. */
                        free(st->pending);
                        st->pending = strdup(": keepalive\n\n");
                        st->pending_len = st->pending ? strlen(st->pending) : 0;
                        st->pending_off = 0;
                        continue;
                }
                struct agent_file_reply reply;
                if (agent_files_read(st->agent, &reply, NULL, 0) < 0)
                        return 0; /* the agent ended the watch (directory gone, sandbox stopped) */
                int fr = reply.frame.type == AGENT_MSG_FILE_EVENT ? format_event(st, &reply.frame) : 0;
                agent_file_reply_release(&reply);
                if (fr < 0)
                        return -1;
        }
}

static void watch_free(void *cls)
{
        struct watch_stream *st = cls;
        close(st->agent);
        free(st->pending);
        free(st);
}

void route_file_watch(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct agent_file_args a = { 0 };
        struct file_target t = { 0 };
        struct agent_file_reply reply = { 0 };
        char msg[512] = "";
        long long keepalive_s = 15;
        if (file_query_path(req, "path", &a.path, &err) < 0 || file_query_user(req, &a.user, &err) < 0 ||
            api_request_query_bool(req, "recursive", &a.recursive, &err) < 0 ||
            api_request_query_int(req, "keepalive_s", 1, 300, &keepalive_s, &err) < 0 || file_target_load(req, &t, &err) < 0 ||
            policy_gate_file_request(req->ctx, &t.sb, AGENT_MSG_FILE_WATCH, &a, &err) < 0) {
                file_target_release(&t);
                return api_response_error(resp, &err);
        }
        /* No read timeout: the stream waits for events as long as the client stays. */
        _cleanup_close_ int agent = file_target_connect(&t, 0, &err);
        file_target_release(&t);
        if (agent < 0)
                return api_response_error(resp, &err);
        struct timeval tv = { .tv_sec = FILE_REQUEST_TIMEOUT_MS / 1000 };
        setsockopt(agent, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        int r = agent_files_call(agent, AGENT_MSG_FILE_WATCH, &a, AGENT_MSG_FILE_DONE, &reply, msg, sizeof(msg));
        agent_file_reply_release(&reply);
        if (r < 0) {
                file_error_from_agent(&err, r, msg);
                return api_response_error(resp, &err);
        }
        struct watch_stream *st = calloc(1, sizeof(*st));
        if (!st) {
                space_error_set(&err, SPACE_E_INTERNAL, "out of memory");
                return api_response_error(resp, &err);
        }
        st->ctx = req->ctx;
        st->agent = TAKE_FD(agent);
        /* A first comment so the client sees the stream open at once. */
        st->pending = strdup(": watching\n\n");
        st->pending_len = st->pending ? strlen(st->pending) : 0;
        st->last_sent_us = monotonic_now_us();
        st->keepalive_us = keepalive_s * 1000000;
        resp->status = 200;
        resp->stream = (struct api_stream){ .read = watch_read, .free = watch_free, .cls = st };
        resp->content_type = "text/event-stream";
        resp->headers = json_pack("{s:s}", "Cache-Control", "no-store");
}
