/* storage_gate: work that would fail on the pool as it is now is refused when it is asked
 * for (503 unavailable, the pool's condition as the reason), rather than accepted and failed
 * later, or worse, made to push a pool that is nearly out of room into read-only. */
#pragma once

#include "spaced/space_error.h"

struct spaced_context;

enum storage_need {
        STORAGE_WRITES, /* snapshot, restore, destroy: refused while the pool cannot take writes */
        STORAGE_GROWS,  /* create, fork, template build, import: also refused while low on space */
};

/* 0, or -1 with err filled (SPACE_E_UNAVAILABLE) naming what is wrong with the pool. */
int storage_gate_check(struct spaced_context *ctx, enum storage_need need, struct space_error *err);
