/* fake_driver: a runtime driver (runtime/runtime_driver.h) that keeps each sandbox's host
 * resources in memory: whether its rootfs exists (and what it was made from), whether its
 * init runs, is paused, and whether it has run state left (a kill leaves it, a stop clears
 * it). It checks what a real driver's host would refuse (start without a rootfs, deleting
 * the rootfs of a running sandbox, restoring a running one, a source that does not exist)
 * and fails calls as a shared fault_plan says. Snapshots are directories made at the path
 * asked for (the pool's snapshots/<id>), so that code reading the pool finds them.
 * The instance is adopted by a runtime_registry, which frees it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "runtime/runtime_driver.h"

#include "fault_plan.h"

#define FAKE_DRIVER_NAME "fake"

struct fake_resources {
        bool rootfs;
        bool running;     /* its init is alive */
        bool paused;      /* frozen */
        bool run_state;   /* host-side run state (a run dir) */
        long boot;        /* which start launched it: the runtime_state it hands out is {"boot":N} */
        char source[512]; /* what its rootfs was made (or restored) from */
};

/* A new instance (its ops->init already run); faults NULL for none. */
int fake_driver_new(struct fault_plan *faults, struct runtime_driver **ret);

/* What the fake's host holds for id; false when it holds nothing. */
bool fake_driver_get(const struct runtime_driver *d, const char *id, struct fake_resources *ret);
/* Sets what the host holds for id, as if it were there (an orphan) or changed behind
 * spaced's back (an init that died, a rootfs someone deleted); all false: gone. */
void fake_driver_put(const struct runtime_driver *d, const char *id, const struct fake_resources *res);
/* Ids holding any resource (sorted as added); the caller frees the array and each id. */
size_t fake_driver_ids(const struct runtime_driver *d, char ***ret);
/* How many calls of verb ("start", …; NULL: all) the instance has had. */
long fake_driver_calls(const struct runtime_driver *d, const char *verb);
/* Calls of verb wait (before they do anything) until the hold is lifted with NULL: a
 * handler can be caught in the middle. */
void fake_driver_hold(const struct runtime_driver *d, const char *verb);
/* Waits up to timeout_ms until n calls wait on the hold; returns how many do. */
int fake_driver_await_held(const struct runtime_driver *d, int n, int timeout_ms);
/* The runtime_state a launched sandbox's row must hold: {"boot":N}. */
void fake_driver_handle(long boot, char *buf, size_t size);
