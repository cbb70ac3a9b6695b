#include "controller/daemon_health.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spaced/log.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

#define PROBE_EVERY_TICKS 5

struct daemon_health {
        pthread_mutex_t lock;
        struct daemon_health_view view;
        int64_t last_tick_us; /* monotonic */
};

int daemon_health_new(struct daemon_health **ret)
{
        struct daemon_health *h = calloc(1, sizeof(*h));
        if (!h)
                return -ENOMEM;
        pthread_mutex_init(&h->lock, NULL);
        h->view.store_ok = true; /* until the first probe says otherwise: spaced just opened it */
        h->last_tick_us = monotonic_now_us();
        *ret = h;
        return 0;
}

void daemon_health_free(struct daemon_health *h)
{
        if (!h)
                return;
        pthread_mutex_destroy(&h->lock);
        free(h);
}

void daemon_health_tick(struct spaced_context *ctx, unsigned tick)
{
        struct daemon_health *h = ctx->health;
        if (!h)
                return;
        pthread_mutex_lock(&h->lock);
        h->last_tick_us = monotonic_now_us();
        pthread_mutex_unlock(&h->lock);
        if (tick % PROBE_EVERY_TICKS != 0)
                return;
        int64_t now = wallclock_now_ms();
        int r = STORE(ctx, probe_write, now);
        pthread_mutex_lock(&h->lock);
        bool was_ok = h->view.store_ok;
        h->view.store_ok = r == 0;
        h->view.store_checked_at_ms = now;
        if (r < 0)
                snprintf(h->view.store_reason, sizeof(h->view.store_reason), "a write to the state store failed: %s",
                         strerror(-r));
        else
                h->view.store_reason[0] = '\0';
        pthread_mutex_unlock(&h->lock);
        if (was_ok && r < 0)
                log_error("store.unhealthy", "error=\"%s\" note=\"writes to the state store fail\"", strerror(-r));
        else if (!was_ok && r == 0)
                log_info("store.healthy", "note=\"the state store takes writes again\"");
}

void daemon_health_get(struct daemon_health *h, struct daemon_health_view *ret)
{
        memset(ret, 0, sizeof(*ret));
        if (!h) {
                ret->store_ok = true;
                return;
        }
        pthread_mutex_lock(&h->lock);
        *ret = h->view;
        ret->controller_idle_us = monotonic_now_us() - h->last_tick_us;
        pthread_mutex_unlock(&h->lock);
}
