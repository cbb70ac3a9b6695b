#include "service/sandbox_service.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "operations/operation_queue.h"
#include "operations/sandbox_lifecycle.h"
#include "operations/sandbox_memory.h"
#include "runtime/runtime_registry.h"
#include "service/project_service.h"
#include "service/sandbox_access.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

#define WAKE_WAIT_MS 120000

int sandbox_service_list(struct spaced_context *ctx, const struct principal *p, const char *project, int state_filter,
                         const struct store_page *page, struct sandbox **ret, size_t *ret_n, struct space_error *err)
{
        const char *scope;
        if (project_service_scope(ctx, p, project, &scope, err) < 0)
                return -1;
        int r = STORE(ctx, sandbox_list, state_filter, scope, page, ret, ret_n);
        return r < 0 ? space_error_errno(err, r, "list sandboxes") : 0;
}

int sandbox_service_get_running(struct spaced_context *ctx, const struct principal *p, const char *id, struct sandbox *ret,
                                struct space_error *err)
{
        struct sandbox sb;
        if (sandbox_access_load(ctx, p, id, &sb, err) < 0)
                return -1;
        if (sb.state != SANDBOX_RUNNING) {
                space_error_set(err, SPACE_E_UNAVAILABLE, "sandbox %s is %s", sb.id, sandbox_state_name(sb.state));
                sandbox_release(&sb);
                return -1;
        }
        *ret = sb;
        return 0;
}

static int apply(struct sandbox *sb, const struct sandbox_change *c, struct space_error *err)
{
        if (c->metadata) {
                json_t *m = json_deep_copy(c->metadata);
                if (!m)
                        return space_error_set(err, SPACE_E_INTERNAL, "out of memory");
                json_decref(sb->metadata);
                sb->metadata = m;
        }
        if (c->on_timeout)
                snprintf(sb->on_timeout, sizeof(sb->on_timeout), "%s", c->on_timeout);
        if (c->set_rolling) {
                json_decref(sb->rolling);
                sb->rolling = c->rolling ? json_deep_copy(c->rolling) : NULL;
                if (c->rolling && !sb->rolling)
                        return space_error_set(err, SPACE_E_INTERNAL, "out of memory");
        }
        if (c->set_idle) {
                json_decref(sb->idle);
                sb->idle = c->idle ? json_deep_copy(c->idle) : NULL;
                if (c->idle && !sb->idle)
                        return space_error_set(err, SPACE_E_INTERNAL, "out of memory");
        }
        if (c->timeout_s >= 0)
                sb->timeout_s = c->timeout_s;
        return 0;
}

int sandbox_service_change(struct spaced_context *ctx, const struct principal *p, const char *id, const struct sandbox_change *c,
                           struct sandbox *ret, struct space_error *err)
{
        struct sandbox sb;
        if (sandbox_access_load(ctx, p, id, &sb, err) < 0)
                return -1;
        int r = -1;
        if (sb.state == SANDBOX_DESTROYED || sb.state == SANDBOX_DESTROYING) {
                space_error_set(err, SPACE_E_INVALID_STATE, "sandbox %s is %s", sb.id, sandbox_state_name(sb.state));
                goto out;
        }
        bool sooner = c->only_extend && c->timeout_s >= 0 && sb.state == SANDBOX_RUNNING &&
                sb.expires_at_ms > wallclock_now_ms() + c->timeout_s * 1000;
        if (!sooner) {
                if (apply(&sb, c, err) < 0 || (c->set_rolling && sandbox_memory_rolling_check(ctx, &sb, err) < 0))
                        goto out;
                /* One write: a new timeout of a running sandbox and the deadline it arms. */
                bool arm = c->timeout_s >= 0 && sb.state == SANDBOX_RUNNING;
                if (arm)
                        sb.expires_at_ms = sandbox_step_expiry_at(&sb);
                int w = STORE(ctx, sandbox_set_settings, &sb, arm);
                if (w < 0) {
                        space_error_errno(err, w, "store settings of %s", sb.id);
                        goto out;
                }
        }
        r = 0;
        sandbox_release(&sb);
        return ret ? sandbox_access_load(ctx, p, id, ret, err) : 0;
out:
        sandbox_release(&sb);
        return r;
}

int sandbox_service_clear_expiry(struct spaced_context *ctx, const struct principal *p, const char *id, struct space_error *err)
{
        struct sandbox sb;
        if (sandbox_access_load(ctx, p, id, &sb, err) < 0)
                return -1;
        sandbox_release(&sb);
        int r = STORE(ctx, sandbox_set_expiry, id, 0);
        return r < 0 ? space_error_errno(err, r, "clear the timeout of %s", id) : 0;
}

int sandbox_service_expire_now(struct spaced_context *ctx, const struct principal *p, const char *id, struct space_error *err)
{
        struct sandbox sb;
        if (sandbox_access_load(ctx, p, id, &sb, err) < 0)
                return -1;
        enum sandbox_state state = sb.state;
        sandbox_release(&sb);
        if (state != SANDBOX_RUNNING)
                return space_error_set(err, SPACE_E_INVALID_STATE, "sandbox %s is %s", id, sandbox_state_name(state));
        int r = STORE(ctx, sandbox_set_expiry, id, wallclock_now_ms());
        return r < 0 ? space_error_errno(err, r, "set the timeout of %s", id) : 0;
}

void sandbox_service_token_caller(struct spaced_context *ctx, const char *id, struct principal *ret)
{
        struct sandbox sb;
        memset(ret, 0, sizeof(*ret));
        if (!id || !*id || STORE(ctx, sandbox_get, id, &sb) < 0)
                return;
        snprintf(ret->project_id, sizeof(ret->project_id), "%s", sb.project_id);
        sandbox_release(&sb);
}

int sandbox_service_running_ids(struct spaced_context *ctx, char (**ret)[32], size_t *ret_n, struct space_error *err)
{
        struct sandbox *all = NULL;
        size_t n = 0;
        int r = STORE(ctx, sandbox_list, SANDBOX_RUNNING, NULL, NULL, &all, &n);
        if (r < 0)
                return space_error_errno(err, r, "list sandboxes");
        char(*ids)[32] = calloc(n ? n : 1, sizeof(*ids));
        if (!ids) {
                sandbox_array_free(all, n);
                return space_error_set(err, SPACE_E_INTERNAL, "out of memory");
        }
        for (size_t i = 0; i < n; i++)
                snprintf(ids[i], sizeof(ids[i]), "%s", all[i].id);
        sandbox_array_free(all, n);
        *ret = ids;
        *ret_n = n;
        return 0;
}

int sandbox_service_usage(struct spaced_context *ctx, const struct sandbox *sb, struct runtime_stats *ret)
{
        memset(ret, 0, sizeof(*ret));
        const struct runtime_driver *d = runtime_registry_find(&ctx->runtimes, sb->runtime);
        if (!d)
                return -ENODEV;
        if (sb->state != SANDBOX_RUNNING && sb->state != SANDBOX_PAUSED)
                return -ESRCH;
        return d->ops->stats(d, sb, ret);
}

int sandbox_service_wake(struct spaced_context *ctx, const struct sandbox *sb, bool *ret_woken, struct space_error *err)
{
        if (ret_woken)
                *ret_woken = false;
        if (sb->state == SANDBOX_RUNNING)
                return 0;
        enum sandbox_action action;
        if (sb->state == SANDBOX_PAUSED)
                action = SANDBOX_ACTION_RESUME;
        else if (sb->state == SANDBOX_STOPPED)
                action = SANDBOX_ACTION_START;
        else
                return space_error_set(err, SPACE_E_INVALID_STATE, "sandbox %s is %s; try again shortly", sb->id,
                                       sandbox_state_name(sb->state));
        struct operation op, latest;
        if (sandbox_lifecycle_submit(ctx, sb->id, action, &op, err) < 0)
                return -1;
        int r = operation_queue_wait(ctx->queue, op.id, WAKE_WAIT_MS, &latest);
        if (r == -ETIMEDOUT)
                return space_error_set(err, SPACE_E_TIMEOUT, "%s of %s is still running after %d s", op.kind, op.target,
                                       WAKE_WAIT_MS / 1000);
        if (r < 0)
                return space_error_errno(err, r, "wait for %s", op.id);
        if (latest.state == OPERATION_FAILED)
                return space_error_set(err, space_error_code_from_name(latest.error_code), "%s", latest.error_message);
        if (ret_woken)
                *ret_woken = true;
        return 0;
}
