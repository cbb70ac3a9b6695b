/* e2b_watch_event: the agent's directory watch as envd's filesystem events. */
#include "e2b/e2b_watch_event.h"

#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "agent_protocol/agent_files_client.h"
#include "api/file_request.h"
#include "api/output_encoding.h"
#include "e2b/e2b_connect.h"
#include "e2b/e2b_routes.h"
#include "runtime/runtime_registry.h"
#include "service/policy_gate.h"
#include "service/sandbox_access.h"
#include "spaced/spaced_context.h"

static const char *const event_types[] = {
        "", "EVENT_TYPE_CREATE", "EVENT_TYPE_WRITE", "EVENT_TYPE_REMOVE", "EVENT_TYPE_RENAME", "EVENT_TYPE_CHMOD"
};

int e2b_watch_open(struct e2b_call *call, const json_t *msg, struct e2b_watch_scope *scope, struct space_error *err)
{
        struct sandbox sb;
        struct agent_file_reply reply = { 0 };
        char text[512] = "";
        *scope = (struct e2b_watch_scope){ .ctx = call->req.ctx };
        if (e2b_files_resolve(call->user, json_string_value(json_object_get(msg, "path")), scope->dir, sizeof(scope->dir), err) <
            0)
                return -1;
        int r = sandbox_access_load(call->req.ctx, &call->req.principal, call->sandbox_id, &sb, err);
        if (r < 0 || sb.state != SANDBOX_RUNNING) {
                if (r == 0)
                        sandbox_release(&sb);
                return space_error_set(err, r < 0 && err->code == SPACE_E_NOT_FOUND ? SPACE_E_NOT_FOUND : SPACE_E_UNAVAILABLE,
                                       "sandbox %s is not running", call->sandbox_id);
        }
        struct agent_file_args a = { .path = scope->dir,
                                     .recursive = json_is_true(json_object_get(msg, "recursive")),
                                     .with_entry = json_is_true(json_object_get(msg, "includeEntry")),
                                     .user = e2b_files_agent_user(call->user) };
        if (policy_gate_file_request(call->req.ctx, &sb, AGENT_MSG_FILE_WATCH, &a, err) < 0) {
                sandbox_release(&sb);
                return -1;
        }
        /* No read timeout: the watch waits for events as long as it is wanted. */
        int fd = file_agent_connect(&call->req.ctx->runtimes, &sb, 0, err);
        sandbox_release(&sb);
        if (fd < 0)
                return -1;
        struct timeval tv = { .tv_sec = 30 };
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        r = agent_files_call(fd, AGENT_MSG_FILE_WATCH, &a, AGENT_MSG_FILE_DONE, &reply, text, sizeof(text));
        agent_file_reply_release(&reply);
        if (r < 0) {
                close(fd);
                return file_error_from_agent(err, r, text);
        }
        snprintf(scope->sandbox_id, sizeof(scope->sandbox_id), "%s", call->sandbox_id);
        return fd;
}

json_t *e2b_watch_event_new(const struct e2b_watch_scope *scope, const struct agent_frame *f)
{
        uint8_t kind = 0;
        struct agent_file_entry e = { 0 };
        size_t cursor = 0;
        if (f->type != AGENT_MSG_FILE_EVENT)
                return NULL;
        agent_frame_get_u8(f, AGENT_F_FILE_EVENT_KIND, &kind);
        if (kind == 0 || kind >= sizeof(event_types) / sizeof(event_types[0]) || agent_files_next_entry(f, &cursor, &e) != 1)
                return NULL;
        size_t n = strlen(scope->dir);
        const char *rel = e.path;
        uint32_t rel_len = e.path_len;
        if (rel_len > n && strncmp(rel, scope->dir, n) == 0 && (rel[n] == '/' || n == 1)) {
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
                return NULL;
        json_t *event =
                json_pack("{s:o, s:s}", "name", output_encoding_utf8((const uint8_t *)rel, rel_len), "type", event_types[kind]);
        /* With includeEntry the agent put the entry, as it was at the event, after the event. */
        struct agent_file_entry entry;
        if (event && agent_files_next_entry(f, &cursor, &entry) == 1)
                json_object_set_new(event, "entry", e2b_files_render_entry(&entry));
        return event;
}
