/* e2b_routes: what the E2B front door's handlers see (one struct e2b_call per request) and
 * the handlers themselves, grouped by the file that holds them. The wire format is E2B's
 * (docs/e2b.md): control-API errors are {"code": <int>, "message"}, envd errors are
 * Connect errors {"code": "<name>", "message"}. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/api_request.h"
#include "spaced/space_error.h"
#include "state_store/state_store.h"

struct e2b_front;

struct e2b_call {
        struct api_request req; /* path segments, body, connection */
        struct e2b_front *front;
        /* envd calls: the sandbox addressed; control calls: the id in the path (a sandbox's,
         * or a snapshot's for DELETE /templates/{id}) */
        char sandbox_id[32];
        char user[65];
        /* authenticated by a signed /files URL, which covers its query's path, username
         * and operation and nothing else: no other path may be written with it */
        bool signed_url;
};

typedef void (*e2b_handler)(struct e2b_call *call, struct api_response *resp);

/* The header's value or NULL (names are matched ignoring case). */
const char *e2b_call_header(const struct e2b_call *call, const char *name);

/* Control API answers. */
void e2b_reply_error(struct api_response *resp, unsigned status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* err's message with the HTTP status its code maps to (api_error_http_status). */
void e2b_reply_space_error(struct api_response *resp, const struct space_error *err);
/* 204, no body. */
void e2b_reply_empty(struct api_response *resp);

/* e2b_sandboxes.c: the control API, and what e2b_history.c shares of it */
struct spaced_context;
struct operation;
/* The answer of create, connect and fork: sandboxID, envdAccessToken, … */
json_t *e2b_render_created(struct e2b_call *call, const struct sandbox *sb);
/* Waits (up to 2 min) for the operation; its failure (or the wait's) as err. */
int e2b_wait_operation(struct spaced_context *ctx, const struct operation *op, struct space_error *err);
/* The body as a JSON object (empty: {}); answers 400 itself when it is not one. */
int e2b_body_object(struct e2b_call *call, json_t **ret, struct api_response *resp);
/* "timeout" (seconds) when present. */
int e2b_timeout_field(const json_t *body, long long *ret, struct space_error *err);
/* Sets the timeout of the call's sandbox id (the caller's), counting from now when it runs;
 * only_extend keeps a later expiry. */
int e2b_set_timeout(struct e2b_call *call, const char *id, long long timeout_s, bool only_extend, struct space_error *err);
/* A ready snapshot labelled name (the newest), for templateID = a snapshot name. */
int e2b_snapshot_by_name(struct spaced_context *ctx, const struct principal *p, const char *name, char *ret_id, size_t size);

void e2b_sandbox_create(struct e2b_call *call, struct api_response *resp);
void e2b_sandbox_list(struct e2b_call *call, struct api_response *resp);
void e2b_sandbox_list_v1(struct e2b_call *call, struct api_response *resp);
void e2b_sandbox_get(struct e2b_call *call, struct api_response *resp);
void e2b_sandbox_kill(struct e2b_call *call, struct api_response *resp);
void e2b_sandbox_timeout(struct e2b_call *call, struct api_response *resp);
void e2b_sandbox_pause(struct e2b_call *call, struct api_response *resp);
void e2b_sandbox_connect(struct e2b_call *call, struct api_response *resp);
void e2b_sandbox_resume(struct e2b_call *call, struct api_response *resp);

/* e2b_history.c: snapshots, fork, metrics */
void e2b_snapshot_create(struct e2b_call *call, struct api_response *resp);
void e2b_snapshot_list(struct e2b_call *call, struct api_response *resp);
void e2b_snapshot_delete(struct e2b_call *call, struct api_response *resp);
void e2b_sandbox_fork(struct e2b_call *call, struct api_response *resp);
void e2b_sandbox_metrics(struct e2b_call *call, struct api_response *resp);

/* e2b_network.c: E2B's egress fields on space's policy */
/* The create body's allow_internet_access and network as space's network member (*ret a
 * new reference; NULL: the server's default). 0, or -1 with err. */
int e2b_network_for_create(const struct spaced_context *ctx, const json_t *body, json_t **ret, bool *ret_private_ports,
                           struct space_error *err);
void e2b_sandbox_network_update(struct e2b_call *call, struct api_response *resp);

/* e2b_envd_process.c: envd's /health and process.Process service */
void e2b_envd_health(struct e2b_call *call, struct api_response *resp);
void e2b_process_start(struct e2b_call *call, struct api_response *resp);
void e2b_process_connect(struct e2b_call *call, struct api_response *resp);
void e2b_process_list(struct e2b_call *call, struct api_response *resp);
void e2b_process_send_input(struct e2b_call *call, struct api_response *resp);
void e2b_process_send_signal(struct e2b_call *call, struct api_response *resp);
void e2b_process_close_stdin(struct e2b_call *call, struct api_response *resp);
void e2b_process_update(struct e2b_call *call, struct api_response *resp);

/* e2b_envd_files.c: envd's filesystem.Filesystem service and /files */
void e2b_fs_stat(struct e2b_call *call, struct api_response *resp);
void e2b_fs_list_dir(struct e2b_call *call, struct api_response *resp);
void e2b_fs_make_dir(struct e2b_call *call, struct api_response *resp);
void e2b_fs_move(struct e2b_call *call, struct api_response *resp);
void e2b_fs_remove(struct e2b_call *call, struct api_response *resp);
void e2b_files_download(struct e2b_call *call, struct api_response *resp);
/* /files errors are plain JSON {"code": <status>, "message"}, like the control API's
 * (a sandbox not running: 502 as envd's proxy; full disk or memory: 507). */
void e2b_files_reply_error(struct api_response *resp, const struct space_error *err);
/* EntryInfo in protobuf JSON. Returns a new reference. */
struct agent_file_entry;
json_t *e2b_files_render_entry(const struct agent_file_entry *e);
/* The user files are handled as: the call's (Basic auth), or ?username=; NULL for root. */
const char *e2b_files_agent_user(const char *user);
/* An absolute path: as given, or relative to the user's home (/root for root, else
 * /home/<user>), checked as the files API wants it. */
int e2b_files_resolve(const char *user, const char *path, char *buf, size_t size, struct space_error *err);

/* e2b_watch_stream.c: Filesystem.WatchDir */
void e2b_fs_watch_dir(struct e2b_call *call, struct api_response *resp);

/* e2b_process_stream.c: a command's output as a Connect server stream of process events,
 * starting with start{pid}, then the command's log from its first record (Start) or, with
 * from_end, only what it gets after this call (Connect, as envd).
 * deadline_ms 0: none; otherwise the stream ends with deadline_exceeded then (the command
 * goes on). keepalive_ms: how often an idle stream carries a keepalive event. */
/* pid < 0: the command is held for approval; its start event comes when it starts. */
int e2b_process_stream_begin(struct e2b_call *call, const char *command_id, int32_t pid, bool from_end, int64_t deadline_ms,
                             int keepalive_ms, struct api_response *resp, struct space_error *err);
