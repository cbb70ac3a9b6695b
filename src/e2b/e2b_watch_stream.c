/* e2b_watch_stream: envd's Filesystem.WatchDir, a Connect server stream of {"start": {}},
 * then {"filesystem": FilesystemEvent} per change (e2b_watch_event.h) and {"keepalive": {}}
 * while idle, on the agent's directory watch. The agent connection stays open for the
 * stream; closing it ends the agent's watch. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_protocol/agent_files_client.h"
#include "e2b/e2b_connect.h"
#include "e2b/e2b_routes.h"
#include "e2b/e2b_watch_event.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

#define WATCH_POLL_MS 1000

struct watch_stream {
        struct e2b_watch_scope scope;
        int agent;
        struct e2b_buf out;
        size_t out_off;
        int64_t idle_since_us, keepalive_us, deadline_us;
        bool done;
};

static int emit(struct watch_stream *st, json_t *msg)
{
        int r = msg ? e2b_connect_frame(&st->out, 0, msg) : -ENOMEM;
        json_decref(msg);
        return r;
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
                if (atomic_load(&st->scope.ctx->shutting_down))
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
                json_t *event = e2b_watch_event_new(&st->scope, &reply.frame);
                agent_file_reply_release(&reply);
                if (event && emit(st, json_pack("{s:o}", "filesystem", event)) < 0)
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
        struct watch_stream *st = calloc(1, sizeof(*st));
        if (!st) {
                space_error_set(&err, SPACE_E_INTERNAL, "out of memory");
                return e2b_connect_reply_stream_error(resp, &err);
        }
        st->agent = -1;
        if (e2b_connect_request(&call->req, &msg, &err) < 0 || (st->agent = e2b_watch_open(call, msg, &st->scope, &err)) < 0)
                goto fail;
        const char *timeout = e2b_call_header(call, "Connect-Timeout-Ms");
        long long ms = timeout ? strtoll(timeout, NULL, 10) : 0;
        const char *ping = e2b_call_header(call, "Keepalive-Ping-Interval");
        long long ping_s = ping ? strtoll(ping, NULL, 10) : 0;
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
