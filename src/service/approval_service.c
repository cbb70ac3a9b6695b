/* Held commands and their approvals (approval_service.h). */
#include "service/approval_service.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data_plane/command_service.h"
#include "service/approval_request.h"
#include "service/approval_webhook.h"
#include "service/policy_gate.h"
#include "service/project_service.h"
#include "spaced/fault_point.h"
#include "spaced/log.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

/* The key that asked: the caller's, or the one that opened its attach session. */
static void asking_key(struct spaced_context *ctx, const struct principal *p, const char *session_id, char *buf, size_t size)
{
        struct attach_session s;
        snprintf(buf, size, "%s", p->key_id);
        if (!buf[0] && session_id && session_id[0] && STORE(ctx, session_get, session_id, &s) == 0)
                snprintf(buf, size, "%s", s.key_id);
}

/* An audit row for a step of a that no request of its own records (the hold, the expiry,
 * the settlement): the platform's, with what happened in its detail. */
static void audit_step(struct spaced_context *ctx, const struct approval_record *a, const char *action, const char *key_id,
                       const char *outcome)
{
        struct audit_record r = { .created_at_ms = wallclock_now_ms() };
        random_id("aud-", 12, r.id, sizeof(r.id));
        snprintf(r.action, sizeof(r.action), "%s", action);
        snprintf(r.target, sizeof(r.target), "%s", a->id);
        snprintf(r.project, sizeof(r.project), "%s", a->project_id);
        snprintf(r.key_id, sizeof(r.key_id), "%s", key_id);
        json_t *d = json_pack("{s:s, s:s, s:s, s:s}", "sandbox", a->sandbox_id, "command", a->command_id, "state",
                              approval_state_name(a->state), "outcome", outcome);
        char *text = d ? json_dumps(d, JSON_COMPACT) : NULL;
        json_decref(d);
        if (text && strlen(text) < sizeof(r.detail))
                memcpy(r.detail, text, strlen(text) + 1);
        free(text);
        int e = STORE(ctx, audit_insert, &r);
        if (e < 0)
                log_error("audit.write_failed", "error=\"%s\" action=%s target=%s note=\"the log line is the record\"",
                          strerror(-e), action, a->id);
}

int approval_service_hold(struct spaced_context *ctx, const struct principal *p, const char *session_id, const struct sandbox *sb,
                          const struct agent_job_spec *spec, const char *tag, const json_t *asked, const char *stdin_text,
                          const struct policy_hold *hold, struct command_record *ret_cmd, struct approval_record *ret_apr,
                          struct space_error *err)
{
        struct approval_record a = { .state = APPROVAL_PENDING };
        struct command_record c = { .state = COMMAND_PENDING_APPROVAL };
        int r = random_id("apr-", 8, a.id, sizeof(a.id));
        if (r == 0)
                r = random_id("cmd-", 8, c.id, sizeof(c.id));
        if (r < 0)
                return space_error_errno(err, r, "approval id");
        snprintf(a.project_id, sizeof(a.project_id), "%s", sb->project_id);
        snprintf(a.sandbox_id, sizeof(a.sandbox_id), "%s", sb->id);
        snprintf(a.command_id, sizeof(a.command_id), "%s", c.id);
        asking_key(ctx, p, session_id, a.key_id, sizeof(a.key_id));
        snprintf(a.policy_id, sizeof(a.policy_id), "%s", hold->policy_id);
        snprintf(a.rule_id, sizeof(a.rule_id), "%s", hold->rule_id);
        snprintf(a.reason, sizeof(a.reason), "%s", hold->reason);
        a.created_at_ms = wallclock_now_ms();
        a.expires_at_ms = a.created_at_ms + ctx->cfg.approval_timeout_s * 1000;
        a.request = approval_request_new(spec, stdin_text);
        snprintf(c.sandbox_id, sizeof(c.sandbox_id), "%s", sb->id);
        snprintf(c.tag, sizeof(c.tag), "%s", tag ? tag : "");
        snprintf(c.reason, sizeof(c.reason), "%s", a.id); /* while pending: the approval it waits on */
        c.spec = asked ? json_deep_copy(asked) : NULL;
        c.created_at_ms = a.created_at_ms;
        if (!a.request || (asked && !c.spec)) {
                approval_record_release(&a);
                command_record_release(&c);
                return space_error_set(err, SPACE_E_INTERNAL, "out of memory");
        }
        r = STORE(ctx, approval_hold, &a, &c);
        if (r < 0) {
                approval_record_release(&a);
                command_record_release(&c);
                return space_error_errno(err, r, "hold the command for approval");
        }
        log_info("approval.requested", "approval=%s project=%s sandbox=%s command=%s key=%s policy=%s rule=%s", a.id,
                 a.project_id, a.sandbox_id, c.id, a.key_id[0] ? a.key_id : "-", a.policy_id,
                 a.rule_id[0] ? a.rule_id : "default");
        audit_step(ctx, &a, "approval.requested", a.key_id, "held");
        approval_webhook_send(ctx->approval_webhook, "approval.requested", &a);
        *ret_cmd = c;
        *ret_apr = a;
        return 0;
}

int approval_service_list(struct spaced_context *ctx, const struct principal *p, const char *project, int state,
                          const struct store_page *page, struct approval_record **ret, size_t *ret_n, struct space_error *err)
{
        const char *scope;
        if (project_service_scope(ctx, p, project, &scope, err) < 0)
                return -1;
        int r = STORE(ctx, approval_list, scope, state, page, ret, ret_n);
        return r < 0 ? space_error_errno(err, r, "list approvals") : 0;
}

int approval_service_get(struct spaced_context *ctx, const struct principal *p, const char *id, struct approval_record *ret,
                         struct space_error *err)
{
        struct approval_record a;
        int r = STORE(ctx, approval_get, NULL, id, &a);
        if (r == -ENOENT || (r == 0 && !principal_sees_project(p, a.project_id))) {
                if (r == 0)
                        approval_record_release(&a);
                return space_error_set(err, SPACE_E_NOT_FOUND, "approval %.64s not found", id);
        }
        if (r < 0)
                return space_error_errno(err, r, "read approval %.64s", id);
        *ret = a;
        return 0;
}

int approval_service_for_command(struct spaced_context *ctx, const struct command_record *c, struct approval_record *ret)
{
        return c->state == COMMAND_PENDING_APPROVAL ? STORE(ctx, approval_get, NULL, c->reason, ret) : -ENOENT;
}

/* An approved command, started as it was asked, unless it cannot be any more: the reason it
 * ends with instead ("" when it started). */
static const char *start_approved(struct spaced_context *ctx, const struct approval_record *a, const struct command_record *c)
{
        struct sandbox sb;
        struct space_error err = { 0 };
        struct agent_job_spec spec;
        const char *stdin_text = NULL;
        if (STORE(ctx, sandbox_get, a->sandbox_id, &sb) < 0)
                return "sandbox_not_running";
        const char *why = "";
        if (sb.state != SANDBOX_RUNNING)
                why = "sandbox_not_running";
        else if (approval_request_spec(a->request, &spec, &stdin_text) < 0)
                why = "start_failed";
        if (why[0]) {
                sandbox_release(&sb);
                return why;
        }
        /* Policies may have changed while it waited: a denial now still wins. */
        struct policy_hold again;
        if (policy_gate_command(ctx, &sb, spec.argv, spec.user, spec.cwd, &again, &err) < 0) {
                log_info("approval.policy_denied", "approval=%s command=%s message=\"%s\"", a->id, c->id, LOG_ESC(err.message));
                why = "policy_denied";
        } else {
                struct command_record started;
                if (command_service_start_held(ctx, &sb, &spec, c, &started, &err) < 0) {
                        log_warn("approval.start_failed", "approval=%s command=%s error=\"%s\"", a->id, c->id,
                                 LOG_ESC(err.message));
                        why = "start_failed";
                } else {
                        command_record_release(&started);
                        if (stdin_text &&
                            (command_service_input(ctx, &sb, c->id, stdin_text, strlen(stdin_text), &err) < 0 ||
                             command_service_close_stdin(ctx, &sb, c->id, &err) < 0))
                                log_warn("approval.stdin_failed", "approval=%s command=%s error=\"%s\"", a->id, c->id,
                                         LOG_ESC(err.message));
                }
        }
        approval_request_spec_release(&spec);
        sandbox_release(&sb);
        return why;
}

/* What a decided approval means for its command, if that is still pending. */
static void settle(struct spaced_context *ctx, const struct approval_record *a)
{
        struct command_record c;
        if (a->state == APPROVAL_PENDING || STORE(ctx, command_get, a->sandbox_id, a->command_id, &c) < 0)
                return;
        if (c.state == COMMAND_PENDING_APPROVAL) {
                const char *why = a->state == APPROVAL_APPROVED ? start_approved(ctx, a, &c)
                        : a->state == APPROVAL_EXPIRED          ? "approval_expired"
                                                                : "approval_denied";
                int r = why[0] ? command_service_end_held(ctx, &c, why) : 0;
                if (r < 0)
                        log_warn("approval.settle_failed", "approval=%s command=%s error=\"%s\"", a->id, c.id, strerror(-r));
                /* Once per settlement (a crash before this line settles it again at start). */
                audit_step(ctx, a, a->state == APPROVAL_EXPIRED ? "approval.expired" : "approval.settled", "",
                           why[0] ? why : "started");
        }
        command_record_release(&c);
}

int approval_service_decide(struct spaced_context *ctx, const struct principal *p, const char *id, bool approve,
                            const char *comment, struct approval_record *ret, struct space_error *err)
{
        struct approval_record a;
        if (approval_service_get(ctx, p, id, &a, err) < 0)
                return -1;
        int r = 0;
        if (a.key_id[0] && strcmp(a.key_id, p->key_id) == 0)
                r = space_error_set(err, SPACE_E_FORBIDDEN,
                                    "approval %s was asked for by this key (%s): another key must decide it", a.id, a.key_id);
        else if (a.state != APPROVAL_PENDING)
                r = space_error_set(err, SPACE_E_CONFLICT, "approval %s is %s already", a.id, approval_state_name(a.state));
        else if (wallclock_now_ms() >= a.expires_at_ms) {
                approval_service_expire(ctx);
                r = space_error_set(err, SPACE_E_CONFLICT, "approval %s has expired", a.id);
        }
        if (r < 0) {
                approval_record_release(&a);
                return -1;
        }
        enum approval_state to = approve ? APPROVAL_APPROVED : APPROVAL_DENIED;
        r = STORE(ctx, approval_decide, a.id, to, p->key_id, comment ? comment : "", wallclock_now_ms());
        approval_record_release(&a);
        if (r == -EALREADY)
                return space_error_set(err, SPACE_E_CONFLICT, "approval %s was decided meanwhile", id);
        if (r < 0)
                return space_error_errno(err, r, "decide approval %s", id);
        if (STORE(ctx, approval_get, NULL, id, &a) < 0)
                return space_error_set(err, SPACE_E_INTERNAL, "approval %s cannot be read back", id);
        log_info("approval.decided", "approval=%s state=%s key=%s command=%s", a.id, approval_state_name(a.state),
                 p->key_id[0] ? p->key_id : "-", a.command_id);
        approval_webhook_send(ctx->approval_webhook, a.state == APPROVAL_APPROVED ? "approval.approved" : "approval.denied", &a);
        fault_point("approval.after_decide", approval_state_name(a.state)); /* decided, not settled: the restart settles it */
        settle(ctx, &a);
        *ret = a;
        return 0;
}

void approval_service_expire(struct spaced_context *ctx)
{
        struct approval_record *all = NULL;
        size_t n = 0;
        if (STORE(ctx, approval_list, NULL, APPROVAL_PENDING, NULL, &all, &n) < 0)
                return;
        int64_t now = wallclock_now_ms();
        for (size_t i = 0; i < n; i++) {
                if (now < all[i].expires_at_ms)
                        continue;
                if (STORE(ctx, approval_decide, all[i].id, APPROVAL_EXPIRED, "", "", now) < 0)
                        continue; /* decided meanwhile: the decider settles it */
                all[i].state = APPROVAL_EXPIRED;
                log_info("approval.expired", "approval=%s command=%s", all[i].id, all[i].command_id);
                all[i].decided_at_ms = now;
                approval_webhook_send(ctx->approval_webhook, "approval.expired", &all[i]);
                settle(ctx, &all[i]);
        }
        approval_record_array_free(all, n);
}

void approval_service_resume(struct spaced_context *ctx)
{
        static const enum approval_state decided[] = { APPROVAL_APPROVED, APPROVAL_DENIED, APPROVAL_EXPIRED };
        for (size_t k = 0; k < sizeof(decided) / sizeof(decided[0]); k++) {
                struct approval_record *all = NULL;
                size_t n = 0;
                if (STORE(ctx, approval_list, NULL, (int)decided[k], NULL, &all, &n) < 0)
                        continue;
                for (size_t i = 0; i < n; i++) {
                        struct sandbox sb;
                        bool here = true; /* its command runs on the sandbox's node */
                        if (STORE(ctx, sandbox_get, all[i].sandbox_id, &sb) == 0) {
                                here = spaced_node_owns(ctx, &sb);
                                sandbox_release(&sb);
                        }
                        if (here)
                                settle(ctx, &all[i]);
                }
                approval_record_array_free(all, n);
        }
        approval_service_expire(ctx);
        /* At least once: requests still pending go to the webhook again (the receiver
         * deduplicates on X-Space-Delivery). */
        struct approval_record *pending = NULL;
        size_t n = 0;
        if (ctx->approval_webhook && STORE(ctx, approval_list, NULL, APPROVAL_PENDING, NULL, &pending, &n) == 0) {
                for (size_t i = 0; i < n; i++)
                        approval_webhook_send(ctx->approval_webhook, "approval.requested", &pending[i]);
                approval_record_array_free(pending, n);
        }
}
