/* bench_command: the data-plane calls space-bench makes — sessions (with the API key) and
 * streamed commands (with a session's attach token). */
#pragma once

#include <stddef.h>

#include "bench_client.h"

#define BENCH_TOKEN_MAX 128

struct bench_session {
        char id[64];
        char token[BENCH_TOKEN_MAX]; /* wiped by bench_session_delete() */
};

/* POST /v1/sandboxes/{id}/sessions with the control client. Returns 0, -EPROTO (the reason
 * in bench_client_error()) or -EIO. */
int bench_session_create(struct bench_client *control, const char *sandbox_id, struct bench_session *ret);
/* DELETE /v1/sandboxes/{id}/sessions/{sid}; wipes the token whatever happens. Returns 0,
 * -EPROTO or -EIO. */
int bench_session_delete(struct bench_client *control, const char *sandbox_id, struct bench_session *s);

/* POST /v1/sandboxes/{id}/commands with `body` (a JSON object) on a client holding the
 * attach token. Returns 0 with the command id, -EAGAIN when the sandbox is not running yet
 * (409/503), -EPROTO or -EIO. */
int bench_command_start(struct bench_client *data, const char *sandbox_id, const char *body, char *ret_id, size_t size);
/* The same, retrying -EAGAIN for up to 10 s (a sandbox just created). */
int bench_command_start_retry(struct bench_client *data, const char *sandbox_id, const char *body, char *ret_id,
                              size_t size);
/* POST …/commands/{cid}/stdin {"text": text}. Returns 0, -EPROTO or -EIO. */
int bench_command_stdin(struct bench_client *data, const char *sandbox_id, const char *command_id, const char *text);
