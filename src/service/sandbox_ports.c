#include "service/sandbox_ports.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "runtime/runtime_registry.h"
#include "service/sandbox_access.h"
#include "service/sandbox_service.h"
#include "spaced/spaced_context.h"

#define HOLDERS_MAX 1024 /* sandboxes with connections open at once, host-wide */

/* The open connections per sandbox: one table for the process (the cap is per sandbox, and
 * a sandbox belongs to one daemon). */
static struct holder {
        char id[32];
        unsigned open;
} holders[HOLDERS_MAX];
static pthread_mutex_t holders_lock = PTHREAD_MUTEX_INITIALIZER;

static int hold(const char *id, unsigned cap)
{
        int r = -ENOSPC, free_slot = -1;
        pthread_mutex_lock(&holders_lock);
        for (int i = 0; i < HOLDERS_MAX; i++) {
                if (holders[i].open && strcmp(holders[i].id, id) == 0) {
                        if (holders[i].open < cap) {
                                holders[i].open++;
                                r = 0;
                        } else {
                                r = -EBUSY;
                        }
                        goto out;
                }
                if (!holders[i].open && free_slot < 0)
                        free_slot = i;
        }
        if (free_slot >= 0) {
                snprintf(holders[free_slot].id, sizeof(holders[free_slot].id), "%s", id);
                holders[free_slot].open = 1;
                r = 0;
        }
out:
        pthread_mutex_unlock(&holders_lock);
        return r;
}

static void unhold(const char *id)
{
        pthread_mutex_lock(&holders_lock);
        for (int i = 0; i < HOLDERS_MAX; i++)
                if (holders[i].open && strcmp(holders[i].id, id) == 0) {
                        holders[i].open--;
                        break;
                }
        pthread_mutex_unlock(&holders_lock);
}

static int load_running(struct spaced_context *ctx, const struct principal *p, const char *id, bool wake_it, struct sandbox *ret,
                        struct space_error *err)
{
        if (sandbox_access_load(ctx, p, id, ret, err) < 0)
                return -1;
        if (ret->state == SANDBOX_RUNNING)
                return 0;
        if (!wake_it) {
                space_error_set(err, SPACE_E_INVALID_STATE, "sandbox %s is %s", id, sandbox_state_name(ret->state));
                sandbox_release(ret);
                return -1;
        }
        int r = sandbox_service_wake(ctx, ret, NULL, err);
        sandbox_release(ret);
        if (r < 0)
                return -1;
        if (sandbox_access_load(ctx, p, id, ret, err) < 0)
                return -1;
        if (ret->state != SANDBOX_RUNNING) {
                space_error_set(err, SPACE_E_INVALID_STATE, "sandbox %s is %s", id, sandbox_state_name(ret->state));
                sandbox_release(ret);
                return -1;
        }
        return 0;
}

int sandbox_ports_open(struct spaced_context *ctx, const struct principal *p, const char *id, uint16_t port, bool wake_it,
                       struct sandbox_port_conn *ret, struct space_error *err)
{
        struct sandbox sb;
        if (port == 0)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "port must be 1-65535");
        if (load_running(ctx, p, id, wake_it, &sb, err) < 0)
                return -1;
        const struct runtime_driver *d = runtime_registry_find(&ctx->runtimes, sb.runtime);
        int r = 0;
        if (!d || !d->ops->port_connect) {
                r = space_error_set(err, SPACE_E_UNSUPPORTED, "the %s runtime does not serve sandbox ports", sb.runtime);
                goto out;
        }
        int h = hold(sb.id, ctx->cfg.ingress_connections);
        if (h < 0) {
                r = space_error_set(err, SPACE_E_UNAVAILABLE,
                                    "sandbox %s has %u connections to its ports open (--ingress-connections)", sb.id,
                                    ctx->cfg.ingress_connections);
                goto out;
        }
        int timeout_ms = (int)ctx->cfg.ingress_timeout_s * 1000;
        int fd = d->ops->port_connect(d, &sb, port, timeout_ms, timeout_ms);
        if (fd < 0) {
                unhold(sb.id);
                if (fd == -ECONNREFUSED)
                        r = space_error_set(err, SPACE_E_BAD_GATEWAY, "nothing listens on port %u of sandbox %s", port, sb.id);
                else if (fd == -ETIMEDOUT)
                        r = space_error_set(err, SPACE_E_TIMEOUT, "port %u of sandbox %s did not accept within %u s", port, sb.id,
                                            ctx->cfg.ingress_timeout_s);
                else if (fd == -ESRCH)
                        r = space_error_set(err, SPACE_E_INVALID_STATE, "sandbox %s runs no process", sb.id);
                else
                        r = space_error_errno(err, fd, "connect to port %u of sandbox %s", port, sb.id);
                goto out;
        }
        ret->fd = fd;
        snprintf(ret->sandbox_id, sizeof(ret->sandbox_id), "%s", sb.id);
out:
        sandbox_release(&sb);
        return r;
}

void sandbox_ports_close(struct sandbox_port_conn *c)
{
        if (!c || c->fd < 0)
                return;
        close(c->fd);
        c->fd = -1;
        unhold(c->sandbox_id);
}
