/* e2b_watch_stream: envd's Filesystem.WatchDir, a Connect server stream of {"start": {}},
 * then {"filesystem": {"name", "type": "EVENT_TYPE_…"}} per change (name relative to the
 * watched directory) and {"keepalive": {}} while idle, on the agent's directory watch. The
 * agent connection stays open for the stream; closing it ends the agent's watch. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent_protocol/agent_files_client.h"
#include "api/file_request.h"
#include "api/output_encoding.h"
#include "cleanup.h"
#include "e2b/e2b_connect.h"
#include "e2b/e2b_routes.h"
#include "runtime/runtime_registry.h"
#include "service/sandbox_access.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"
#include "service/policy_gate.h"

#define WATCH_POLL_MS 1000

struct watch_stream {
        struct spaced_context *ctx;
        int agent;
        char dir[PATH_MAX];
        struct e2b_buf out;
        size_t out_off;
        int64_t idle_since_us, keepalive_us, deadline_us;
        bool done;
        /* includeEntry (envd 0.6.3): each event carries the entry's EntryInfo, stat'ed as
         * the watching user when the event comes (none for a removal or a path gone) */
        bool include_entry;
        struct principal principal;
        char sandbox_id[32];
        char user[65];
};

static const char *const event_types[] = {
        "", "EVENT_TYPE_CREATE", "EVENT_TYPE_WRITE", "EVENT_TYPE_REMOVE", "EVENT_TYPE_RENAME", "EVENT_TYPE_CHMOD"
};

static int emit(struct watch_stream *st, json_t *msg)
{
        int r = msg ? e2b_connect_frame(&st->out, 0, msg) : -ENOMEM;
        json_decref(msg);
        return r;
}

/* A FILE_EVENT frame as a filesystem event; overflow and unknown kinds are dropped (envd has
 * no word for lost events). */
static int emit_event(struct watch_stream *st, const struct agent_frame *f)
{
        uint8_t kind = 0;
        struct agent_file_entry e = { 0 };
        size_t cursor = 0;
        agent_frame_get_u8(f, AGENT_F_FILE_EVENT_KIND, &kind);
        if (kind == 0 || kind >= sizeof(event_types) / sizeof(event_types[0]) || agent_files_next_entry(f, &cursor, &e) != 1)
                return 0;
        size_t n = strlen(st->dir);
        const char *rel = e.path;
        uint32_t rel_len = e.path_len;
        if (rel_len > n && strncmp(rel, st->dir, n) == 0 && (rel[n] == '/' || n == 1)) {
                size_t skip = n == 1 ? 1 : n + 1;
                rel += skip;
                rel_len -= (uint32_t)skip;
        }
        /* An unnamed file being filled (O_TMPFILE, an upload) shows in inotify as "#<inode>"
         * until it is linked: not a file anyone made, so not an event. */
        const char *base = memrchr(rel, '/', rel_len);
        base = base ? base + 1 : rel;
        size_t base_len = rel_len - (size_t)(base - rel);
        if (base_len > 1 && base[0] == '#' && strspn(base + 1, "0123456789") >= base_len - 1)
                return 0;
        json_t *event =
                json_pack("{s:o, s:s}", "name", output_encoding_utf8((const uint8_t *)rel, rel_len), "type", event_types[kind]);
        if (event && st->include_entry && kind != AGENT_FILE_EVENT_REMOVE && e.path_len < PATH_MAX) {
                char path[PATH_MAX];
                memcpy(path, e.path, e.path_len);
                path[e.path_len] = '\0';
                json_t *entry = e2b_files_stat_new(st->ctx, &st->principal, st->sandbox_id, st->user, path);
                if (entry)
                        json_object_set_new(event, "entry", entry);
        }
        return emit(st, event ? json_pack("{s:o}", "filesystem", event) : NULL);
}

static ssize_t watch_read(void *cls, char *buf, size_t max)
{
        struct watch_stream *st = cls;
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
                        return 0;
                struct space_error err = { 0 };
                if (atomic_load(&st->ctx->shutting_down))
                        space_error_set(&err, SPACE_E_UNAVAILABLE, "spaced is stopping: watch again");
                else if (st->deadline_us && monotonic_now_us() >= st->deadline_us)
                        space_error_set(&err, SPACE_E_TIMEOUT, "the watch's timeout passed");
                if (err.code) {
                        st->done = true;
                        if (e2b_connect_end_frame(&st->out, &err) < 0)
                                return -1;
                        continue;
                }
                struct pollfd p = { .fd = st->agent, .events = POLLIN };
                int r = poll(&p, 1, WATCH_POLL_MS);
                if (r < 0 && errno != EINTR)
                        return -1;
                if (r <= 0) {
                        if (monotonic_now_us() - st->idle_since_us >= st->keepalive_us &&
                            emit(st, json_pack("{s:{}}", "keepalive")) < 0)
                                return -1;
                        continue;
                }
                struct agent_file_reply reply;
                if (agent_files_read(st->agent, &reply, NULL, 0) < 0) {
                        /* The agent ended the watch: the directory went, or the sandbox stopped. */
                        st->done = true;
                        if (e2b_connect_end_frame(&st->out, NULL) < 0)
                                return -1;
                        continue;
                }
                int er = reply.frame.type == AGENT_MSG_FILE_EVENT ? emit_event(st, &reply.frame) : 0;
                agent_file_reply_release(&reply);
                if (er < 0)
                        return -1;
        }
}

static void watch_free(void *cls)
{
        struct watch_stream *st = cls;
        if (st->agent >= 0)
                close(st->agent);
        e2b_buf_release(&st->out);
        free(st);
}

/* {"path", "recursive", "includeEntry"}; the path as Stat takes it (relative: to the user's home). */
void e2b_fs_watch_dir(struct e2b_call *call, struct api_response *resp)
{
        struct space_error err = { 0 };
        json_t *msg = NULL;
        struct sandbox sb;
        struct agent_file_reply reply = { 0 };
        char text[512] = "";
        struct watch_stream *st = calloc(1, sizeof(*st));
        if (!st) {
                space_error_set(&err, SPACE_E_INTERNAL, "out of memory");
                return e2b_connect_reply_stream_error(resp, &err);
        }
        st->agent = -1;
        if (e2b_connect_request(&call->req, &msg, &err) < 0 ||
            e2b_files_resolve(call->user, json_string_value(json_object_get(msg, "path")), st->dir, sizeof(st->dir), &err) < 0)
                goto fail;
        int r = sandbox_access_load(call->req.ctx, &call->req.principal, call->sandbox_id, &sb, &err);
        if (r < 0 || sb.state != SANDBOX_RUNNING) {
                if (r == 0)
                        sandbox_release(&sb);
                space_error_set(&err, r < 0 && err.code == SPACE_E_NOT_FOUND ? SPACE_E_NOT_FOUND : SPACE_E_UNAVAILABLE,
                                "sandbox %s is not running", call->sandbox_id);
                goto fail;
        }
        struct agent_file_args watched = { .path = st->dir, .user = e2b_files_agent_user(call->user) };
        if (policy_gate_file_request(call->req.ctx, &sb, AGENT_MSG_FILE_WATCH, &watched, &err) < 0) {
                sandbox_release(&sb);
                goto fail;
        }
        /* No read timeout: the stream waits for events as long as the client stays. */
        st->agent = file_agent_connect(&call->req.ctx->runtimes, &sb, 0, &err);
        sandbox_release(&sb);
        if (st->agent < 0)
                goto fail;
        struct timeval tv = { .tv_sec = 30 };
        setsockopt(st->agent, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        struct agent_file_args a = { .path = st->dir,
                                     .recursive = json_is_true(json_object_get(msg, "recursive")),
                                     .user = strcmp(call->user, "root") == 0 ? NULL : call->user };
        r = agent_files_call(st->agent, AGENT_MSG_FILE_WATCH, &a, AGENT_MSG_FILE_DONE, &reply, text, sizeof(text));
        agent_file_reply_release(&reply);
        if (r < 0) {
                file_error_from_agent(&err, r, text);
                goto fail;
        }
        const char *timeout = e2b_call_header(call, "Connect-Timeout-Ms");
        long long ms = timeout ? strtoll(timeout, NULL, 10) : 0;
        const char *ping = e2b_call_header(call, "Keepalive-Ping-Interval");
        long long ping_s = ping ? strtoll(ping, NULL, 10) : 0;
        st->ctx = call->req.ctx;
        st->include_entry = json_is_true(json_object_get(msg, "includeEntry"));
        st->principal = call->req.principal;
        snprintf(st->sandbox_id, sizeof(st->sandbox_id), "%s", call->sandbox_id);
        snprintf(st->user, sizeof(st->user), "%s", call->user);
        st->idle_since_us = monotonic_now_us();
        st->keepalive_us = (ping_s > 0 && ping_s <= 300 ? ping_s : 30) * 1000000LL;
        st->deadline_us = ms > 0 ? monotonic_now_us() + ms * 1000 : 0;
        if (emit(st, json_pack("{s:{}}", "start")) < 0) {
                space_error_set(&err, SPACE_E_INTERNAL, "out of memory");
                goto fail;
        }
        json_decref(msg);
        resp->status = 200;
        resp->content_type = E2B_CONNECT_STREAM_TYPE;
        resp->stream = (struct api_stream){ .read = watch_read, .free = watch_free, .cls = st };
        return;
fail:
        watch_free(st);
        json_decref(msg);
        e2b_connect_reply_stream_error(resp, &err);
}
