/* approval_service: commands a require_approval rule holds (docs/governance.md).
 *
 * A held command is a command row in state pending_approval and an approval row, written
 * together (state_store approval_hold). A principal with approval.write in the command's
 * project — never the key that asked — approves or denies it, once; a pending approval
 * past its deadline (--approval-timeout) expires, which denies it. Then the command is
 * settled: approved, it starts exactly as it was asked (a policy that denies it by then
 * still wins); denied or expired, it ends lost with the reason. A decision is written
 * before its effect, and approval_service_resume settles at start whatever a crash left
 * decided but unsettled, so a kill -9 at any point converges. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "agent_protocol/agent_job_client.h"
#include "auth/principal.h"
#include "service/policy_service.h"
#include "spaced/space_error.h"
#include "state_store/state_store.h"

struct spaced_context;

/* Holds spec (as the front door would have started it in sb; tag and asked as for
 * command_service_start; stdin_text: exec's stdin, NULL for none) because of hold. The key
 * that asked is p's, or for a data-plane caller the one that opened attach session_id.
 * *ret_cmd is the pending command, *ret_apr its approval (caller releases both). */
int approval_service_hold(struct spaced_context *ctx, const struct principal *p, const char *session_id, const struct sandbox *sb,
                          const struct agent_job_spec *spec, const char *tag, const json_t *asked, const char *stdin_text,
                          const struct policy_hold *hold, struct command_record *ret_cmd, struct approval_record *ret_apr,
                          struct space_error *err);
/* Approvals of project (as project_service_scope), state < 0 for any, paged (page NULL:
 * all). approval_record_array_free. */
int approval_service_list(struct spaced_context *ctx, const struct principal *p, const char *project, int state,
                          const struct store_page *page, struct approval_record **ret, size_t *ret_n, struct space_error *err);
/* not_found when unknown or another project's (unless p sees every project). */
int approval_service_get(struct spaced_context *ctx, const struct principal *p, const char *id, struct approval_record *ret,
                         struct space_error *err);
/* The approval a held command waits on (its pending_approval row names it), for the
 * command's own readers, who already may see the command. */
int approval_service_for_command(struct spaced_context *ctx, const struct command_record *c, struct approval_record *ret);
/* Approves (or denies) a pending approval with comment, and settles its command. forbidden
 * when p is the key that asked; conflict when it is decided (or expired) already. *ret is
 * the approval as decided. */
int approval_service_decide(struct spaced_context *ctx, const struct principal *p, const char *id, bool approve,
                            const char *comment, struct approval_record *ret, struct space_error *err);
/* Expires the pending approvals past their deadline and settles their commands. */
void approval_service_expire(struct spaced_context *ctx);
/* At start: settles every decided approval whose command is still pending (a crash between
 * the decision and its effect), then expires what is due. */
void approval_service_resume(struct spaced_context *ctx);

/* A thread that runs approval_service_expire every second until approval_expiry_stop. */
struct approval_expiry;
int approval_expiry_start(struct spaced_context *ctx, struct approval_expiry **ret);
void approval_expiry_stop(struct approval_expiry *e);
