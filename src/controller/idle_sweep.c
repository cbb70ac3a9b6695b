#include "controller/idle_sweep.h"

#include <string.h>

#include "operations/idle_policy.h"
#include "operations/sandbox_lifecycle.h"
#include "operations/sandbox_memory.h"
#include "runtime/runtime_registry.h"
#include "spaced/log.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

/* What the policy asks of sb now: true with *ret_action when it is due. */
static bool idle_due(const struct spaced_context *ctx, const struct sandbox *sb, int64_t now, enum idle_action *ret_action)
{
        if (sb->state != SANDBOX_PAUSED || sandbox_memory_hibernated(sb))
                return false;
        struct idle_rule rule;
        idle_policy_effective(ctx, sb, &rule);
        if (rule.after_s <= 0 || now - sb->updated_at_ms < rule.after_s * 1000)
                return false;
        if (rule.action == IDLE_HIBERNATE) {
                /* A runtime without memory state stays frozen in place. */
                const struct runtime_driver *d = runtime_registry_find(&ctx->runtimes, sb->runtime);
                if (!d || !d->caps.memory_snapshot)
                        return false;
        }
        *ret_action = rule.action;
        return true;
}

void idle_sweep_tick(struct spaced_context *ctx)
{
        struct sandbox *all = NULL;
        size_t n = 0;
        if (STORE(ctx, sandbox_list, (int)SANDBOX_PAUSED, NULL, NULL, &all, &n) < 0)
                return;
        int64_t now = wallclock_now_ms();
        for (size_t i = 0; i < n; i++) {
                bool busy = true;
                enum idle_action action;
                if (!idle_due(ctx, &all[i], now, &action) || STORE(ctx, operation_refers, all[i].id, &busy) < 0 || busy)
                        continue;
                struct operation op;
                struct space_error err = { 0 };
                /* A failed hibernation is told in the sandbox's state_reason, which changes it:
                 * the next attempt comes once it has been idle as long again. */
                int r = action == IDLE_STOP ? sandbox_lifecycle_submit(ctx, all[i].id, SANDBOX_ACTION_STOP, &op, &err)
                                            : sandbox_memory_submit_hibernate(ctx, all[i].id, &op, &err);
                if (r < 0)
                        log_warn("controller.idle_failed", "sandbox=%s action=%s message=\"%s\"", all[i].id,
                                 idle_action_name(action), LOG_ESC(err.message));
                else
                        log_info("controller.idle", "sandbox=%s action=%s idle_s=%lld op=%s", all[i].id, idle_action_name(action),
                                 (long long)((now - all[i].updated_at_ms) / 1000), op.id);
        }
        sandbox_array_free(all, n);
}
