/* command_exec: a v1 exec run as a streamed command, for sandboxes whose commands are
 * watched (command_service_watches): the one-shot EXEC has no channel for the verdicts of
 * the exec watch, the output channel has. The result is an exec's: output kept up to
 * output_cap per stream (truncated beyond), the exit code, signal, timeout and duration. The
 * command stays in the sandbox's commands (tag "exec"). */
#pragma once

#include <jansson.h>

#include "runtime/runtime_driver.h"
#include "spaced/space_error.h"
#include "state_store/state_store.h"

struct spaced_context;

/* asked: what the caller sent (stored as the command's spec). *ret filled on success
 * (exec_result_release). */
int command_exec_run(struct spaced_context *ctx, const struct sandbox *sb, const struct exec_request *er, json_t *asked,
                     struct exec_result *ret, struct space_error *err);
