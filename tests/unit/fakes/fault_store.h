/* fault_store: a state_store backend that delegates every call to an inner store (any
 * backend, through its ops table) and fails calls as a fault_plan says: a write (or a call
 * of the op the plan names) fails with -EIO, or after a "crash" writes are lost and reads
 * fail. Store writes are counted as steps; reads are not (a plan naming a read op counts
 * it). It can also make sandboxes and snapshots look older than they are (updated_at and
 * created_at moved back), so that the controller's deadlines for stuck states can be
 * tested without waiting. */
#pragma once

#include <stdint.h>

#include "state_store/state_store.h"

#include "fault_plan.h"

extern const struct state_store_ops fault_store_ops;

/* Wraps inner (the wrapper owns it from now on: closing it closes inner); plan may be NULL.
 * ret is a handle to store in spaced_context.store. */
int fault_store_wrap(struct state_handle inner, struct fault_plan *plan, struct state_handle *ret);
/* The inner store, to read what was really written (no faults, no ageing). */
struct state_handle fault_store_inner(struct state_store *st);
/* Sandboxes read through the wrapper show updated_at_ms - age_ms, snapshots created_at_ms - age_ms. */
void fault_store_set_age(struct state_store *st, int64_t age_ms);
