/* policy_gate: the checks both front doors make before an action a policy can govern, in
 * the words of that action (policy_service_check does the deciding). Each returns 0 when
 * allowed, -1 with policy_denied (403) or the error that kept the check from being made;
 * only commands can be held for approval (policy_gate_command). */
#pragma once

#include "policy/policy.h"
#include "spaced/space_error.h"
#include "state_store/state_store.h"

struct spaced_context;

struct policy_hold;
/* A command (exec, a streamed command, an E2B process) about to start in sb: its argv as it
 * will run, its user (NULL: root) and working directory (NULL: the default). 1 when a rule
 * requires approval and hold is given (filled: service/approval_service.h holds it); with
 * hold NULL that is a denial. */
int policy_gate_command(struct spaced_context *ctx, const struct sandbox *sb, char *const *argv, const char *user,
                        const char *cwd, struct policy_hold *hold, struct space_error *err);
/* A file operation of sb's on path (file.read, file.write, file.delete), as user (NULL: root). */
int policy_gate_file(struct spaced_context *ctx, const struct sandbox *sb, enum policy_action action, const char *path,
                     const char *user, struct space_error *err);
/* A sandbox about to be made in project_id from template templ. */
int policy_gate_create(struct spaced_context *ctx, const char *project_id, const char *templ, struct space_error *err);
/* A fork of sb into count children. */
int policy_gate_fork(struct spaced_context *ctx, const struct sandbox *sb, int64_t count, struct space_error *err);
/* The export of a snapshot of sandbox_id in project_id. */
int policy_gate_export(struct spaced_context *ctx, const char *project_id, const char *sandbox_id, struct space_error *err);

struct agent_file_args;
/* A file request about to go to sb's agent (enum agent_msg_type: FILE_STAT, READ, LIST, WATCH
 * read its path; MKDIR and CREATE write it; REMOVE deletes it; MOVE deletes its path and
 * writes its dest). The one mapping both doors' file routes use. */
int policy_gate_file_request(struct spaced_context *ctx, const struct sandbox *sb, int type, const struct agent_file_args *a,
                             struct space_error *err);
