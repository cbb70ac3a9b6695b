/* idle_sweep: the controller's side of the idle policy (operations/idle_policy.h). A sandbox
 * paused for as long as its policy says (since its last change of state) is hibernated, where
 * its runtime has memory state (its processes go to disk and its RAM is released;
 * docs/memory-state.md), or stopped, as the policy's action says. A hibernated one is left
 * as it is, and so are sandboxes an operation is about to drive (for later). */
#pragma once

struct spaced_context;

void idle_sweep_tick(struct spaced_context *ctx);
