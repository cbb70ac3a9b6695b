/* idle_hibernation: the controller's idle policy (--hibernate-idle S). A sandbox paused for
 * S seconds (since its last change of state) whose runtime has memory state is hibernated:
 * its processes go to disk and its RAM is released (docs/memory-state.md); resume wakes it.
 * Sandboxes an operation is about to drive are left for later. */
#pragma once

struct spaced_context;

void idle_hibernation_tick(struct spaced_context *ctx);
