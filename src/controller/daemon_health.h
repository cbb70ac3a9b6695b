/* daemon_health: what the controller finds about spaced itself, for /v1/health and
 * /v1/ready — whether the state store still takes writes (a probe row rewritten every 5 s:
 * a read-only or full disk, or a broken file, shows here before a client's write fails) and
 * when the controller thread last ticked (a tick that stops means the timeouts, the
 * reconciliation and the pool checks stopped too). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct spaced_context;
struct daemon_health;

int daemon_health_new(struct daemon_health **ret);
void daemon_health_free(struct daemon_health *h);

/* Called once a second by the controller thread (and once at start, tick 0, so that the
 * first answer is a measured one). */
void daemon_health_tick(struct spaced_context *ctx, unsigned tick);

struct daemon_health_view {
        bool store_ok;
        char store_reason[160];      /* why not, when not */
        int64_t store_checked_at_ms; /* wall clock; 0 before the first probe */
        int64_t controller_idle_us;  /* since the controller's last tick */
};
void daemon_health_get(struct daemon_health *h, struct daemon_health_view *ret);
