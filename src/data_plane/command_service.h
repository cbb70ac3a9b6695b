/* command_service: starting and steering streamed commands (the data plane's verbs).
 * Fills a struct space_error and returns -1 on failure. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "agent_protocol/agent_job_client.h"
#include "spaced/space_error.h"
#include "state_store/state_store.h"

struct spaced_context;

/* Whether commands of sb are started with the exec watch (docs/governance.md): its runtime
 * can, and its project has command rules. */
bool command_service_watches(struct spaced_context *ctx, const struct sandbox *sb);
/* Starts spec (its job_id is chosen here) in the running sandbox sb; *ret is the command's
 * record (caller releases). spec_json is stored as what was asked. */
int command_service_start(struct spaced_context *ctx, const struct sandbox *sb, struct agent_job_spec *spec, const char *tag,
                          json_t *spec_json, struct command_record *ret, struct space_error *err);
/* Starts a command held for approval (its pending_approval row: its id, tag and spec) as
 * spec; *ret as command_service_start's. A held command the agent refuses ends lost
 * (start_failed), since no caller waits on the answer. */
int command_service_start_held(struct spaced_context *ctx, const struct sandbox *sb, struct agent_job_spec *spec,
                               const struct command_record *held, struct command_record *ret, struct space_error *err);
/* Ends a held command that will not run: lost with reason (approval_denied,
 * approval_expired, policy_denied, ...). 0 when it is not pending any more; -errno. */
int command_service_end_held(struct spaced_context *ctx, const struct command_record *held, const char *reason);
/* The command's record; not_found when the sandbox has no such command. */
int command_service_get(struct spaced_context *ctx, const char *sandbox_id, const char *command_id, struct command_record *ret,
                        struct space_error *err);
/* Writes to its stdin (waiting while the agent's stdin queue is full). */
int command_service_input(struct spaced_context *ctx, const struct sandbox *sb, const char *command_id, const void *data,
                          size_t len, struct space_error *err);
int command_service_close_stdin(struct spaced_context *ctx, const struct sandbox *sb, const char *command_id,
                                struct space_error *err);
int command_service_signal(struct spaced_context *ctx, const struct sandbox *sb, const char *command_id, int sig,
                           struct space_error *err);
int command_service_resize(struct spaced_context *ctx, const struct sandbox *sb, const char *command_id, uint32_t cols,
                           uint32_t rows, struct space_error *err);
