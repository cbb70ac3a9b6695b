/* sandbox_memory: the memory half of memory snapshots (docs/memory-state.md). A memory
 * snapshot (kind "memory") is a pair taken at one frozen moment: the btrfs snapshot of the
 * rootfs (pool/snapshots/<id>) and the runtime's checkpoint image (storage/memory_image.h).
 * The row turns ready only once both are whole; deleting it removes both. Restore and fork
 * of one launch the sandbox from its image on a copy of its rootfs. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "spaced/space_error.h"
#include "state_store/state_store.h"

struct runtime_driver;
struct spaced_context;

bool sandbox_memory_of(const struct snapshot *snap);
/* Refuses a memory snapshot the driver or the sandbox's state cannot give: unsupported
 * (422) for a driver without memory state (or without it for a sandbox with_network, a
 * profile other than none), invalid_state for a sandbox without processes. */
int sandbox_memory_check(const struct runtime_driver *d, const char *sandbox_id, enum sandbox_state state, bool with_network,
                         struct space_error *err);
/* Takes the pair for snap: rootfs snapshot at dst and the image, then moves the image into
 * place. Redone after a crash, it starts again from nothing. */
int sandbox_memory_take(struct spaced_context *ctx, const struct runtime_driver *d, const struct sandbox *sb,
                        const struct snapshot *snap, const char *dst, int64_t *ret_pause_us, struct space_error *err);
/* Launches sb (its rootfs already a copy of the snapshot's) from snapshot_id's image and
 * records its handle, as sandbox_step_launch does. */
int sandbox_memory_launch(struct spaced_context *ctx, struct sandbox *sb, const char *snapshot_id, struct space_error *err);
/* Removes snapshot_id's image (and a partial one); logged, never fails. */
void sandbox_memory_drop(struct spaced_context *ctx, const char *snapshot_id);
/* Hibernation: pause {memory_to_disk: true}. The image of sandbox sb goes to
 * pool/memory/<sandbox id> (storage/memory_image.h, keyed by the sandbox's id), then its
 * processes are ended and its RAM released; the caller settles it paused with runtime_state
 * RUNTIME_STATE_HIBERNATED. The image is whole on disk, then the sandbox's runtime_state
 * says hibernated, then its processes end: redone after a crash at any point it takes the
 * image again (the sandbox still frozen) or only ends the processes. */
int sandbox_memory_hibernate(struct spaced_context *ctx, const struct runtime_driver *d, const struct sandbox *sb,
                             struct space_error *err);
/* resume of a hibernated sandbox: launched from its image and its handle recorded; the
 * caller settles it running, then drops the image (sandbox_memory_drop with its id). */
int sandbox_memory_wake(struct spaced_context *ctx, struct sandbox *sb, struct space_error *err);
bool sandbox_memory_hibernated(const struct sandbox *sb);
/* Whether sb's runtime has memory state on this host (its pause can be a hibernation). */
bool sandbox_memory_can_hibernate(struct spaced_context *ctx, const struct sandbox *sb);
/* 422 unsupported when sb's rolling policy asks for memory and its runtime has none. */
int sandbox_memory_rolling_check(struct spaced_context *ctx, const struct sandbox *sb, struct space_error *err);
/* At start: ready memory snapshots whose image is missing go (row and subvolume), and
 * images no row owns (or partial ones of rows already ready) are removed. */
void sandbox_memory_reconcile(struct spaced_context *ctx);
/* Submits pause {memory_to_disk: true}: 422 unsupported on a runtime without memory state. */
int sandbox_memory_submit_hibernate(struct spaced_context *ctx, const char *id, struct operation *ret_op,
                                    struct space_error *err);
