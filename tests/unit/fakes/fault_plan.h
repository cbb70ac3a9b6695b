/* fault_plan: when a fake (fake_driver, fault_store) fails a call. One plan can be shared by
 * the store and the driver, so that "step N" counts the state-store writes and the driver
 * calls of an operation in the order they happen.
 *
 * Two ways to fail:
 * - once: the Nth counted call fails (the store with -EIO, the driver with an internal
 *   space_error); everything before and after works. A transient error the code must
 *   handle.
 * - crash: the Nth counted call and everything after it has no effect, as if the process
 *   had been killed there: store writes are lost (they report success) and store reads
 *   find nothing (-ENOENT), so that nothing waits on retries of a dead process; driver
 *   calls fail and change nothing. The test then "restarts" (a new queue, reconciler_startup) on what was
 *   left. */
#pragma once

#include <pthread.h>
#include <stdbool.h>

enum fault_mode { FAULT_OFF = 0, FAULT_ONCE, FAULT_CRASH };

struct fault_plan {
        pthread_mutex_t lock;
        enum fault_mode mode;
        long fail_at;  /* the counted call that fails, from 1 */
        char only[32]; /* "" counts every store write and driver call; else only calls of this name */
        long steps;    /* counted calls since armed */
        bool fired;
        char fired_at[64]; /* "store:sandbox_settle", "driver:start" */
};

void fault_plan_init(struct fault_plan *p);
void fault_plan_destroy(struct fault_plan *p);
/* Starts counting from zero: the nth counted call (of `only`, when not NULL) fails. */
void fault_plan_arm(struct fault_plan *p, enum fault_mode mode, long n, const char *only);
void fault_plan_disarm(struct fault_plan *p);

enum fault_verdict {
        FAULT_PASS,   /* run the call */
        FAULT_FAIL,   /* fail it */
        FAULT_VANISH, /* crashed: a write is lost (report success), anything else fails */
};
/* A call of `what` by `source` ("store", "driver"). counted: whether it is a step of an
 * unnamed plan (store writes and driver calls are, store reads are not); a plan that names
 * an op counts that op's calls alone, reads included. */
enum fault_verdict fault_plan_check(struct fault_plan *p, const char *source, const char *what, bool counted);

bool fault_plan_fired(struct fault_plan *p);
long fault_plan_steps(struct fault_plan *p);
