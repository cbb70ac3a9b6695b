#include "controller/idle_hibernation.h"

#include <string.h>

#include "operations/sandbox_memory.h"
#include "runtime/runtime_registry.h"
#include "spaced/log.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

static bool idle_candidate(const struct spaced_context *ctx, const struct sandbox *sb, int64_t now)
{
        if (sb->state != SANDBOX_PAUSED || sandbox_memory_hibernated(sb) ||
            now - sb->updated_at_ms < ctx->cfg.hibernate_idle_s * 1000)
                return false;
        const struct runtime_driver *d = runtime_registry_find(&ctx->runtimes, sb->runtime);
        return d && d->caps.memory_snapshot;
}

void idle_hibernation_tick(struct spaced_context *ctx)
{
        struct sandbox *all = NULL;
        size_t n = 0;
        if (ctx->cfg.hibernate_idle_s <= 0 || STORE(ctx, sandbox_list, -1, NULL, NULL, &all, &n) < 0)
                return;
        int64_t now = wallclock_now_ms();
        for (size_t i = 0; i < n; i++) {
                bool busy = true;
                if (!idle_candidate(ctx, &all[i], now) || STORE(ctx, operation_refers, all[i].id, &busy) < 0 || busy)
                        continue;
                struct operation op;
                struct space_error err = { 0 };
                /* A failure is told in the sandbox's state_reason, which changes it: the next
                 * attempt comes once it has been idle as long again. */
                if (sandbox_memory_submit_hibernate(ctx, all[i].id, &op, &err) < 0)
                        log_warn("controller.hibernate_failed", "sandbox=%s message=\"%s\"", all[i].id, LOG_ESC(err.message));
                else
                        log_info("controller.hibernate", "sandbox=%s idle_s=%lld op=%s", all[i].id,
                                 (long long)((now - all[i].updated_at_ms) / 1000), op.id);
        }
        sandbox_array_free(all, n);
}
