/* pool_health: whether the btrfs pool can take writes, and how much room is really left.
 *
 * A loop-mounted pool image is sparse: it grows as sandboxes write, and when the host
 * filesystem under it is full, the loop device fails writes, btrfs aborts its transaction
 * and forces the whole pool read-only. So spaced sizes a new image to what its filesystem
 * can hold, watches the host filesystem's free space against what the image may still
 * claim, probes the pool (mount flags, btrfs device error counters, a small write with
 * fsync), trims it so that space freed inside the pool goes back to the host, and tells
 * the truth in /v1/health and in refusals of work that would fail. */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "storage/btrfs_pool.h"

enum pool_condition {
        POOL_OK,
        POOL_LOW_SPACE, /* degraded: the host filesystem is nearly full under a growing image */
        POOL_READ_ONLY, /* failed: btrfs (or someone) made the pool read-only */
        POOL_FAILED,    /* failed: writes to the pool fail, or the device reports errors */
};

struct pool_health {
        enum pool_condition condition;
        char reason[256];
        uint64_t pool_bytes, pool_free_bytes;        /* statvfs of the pool */
        uint64_t image_bytes, image_allocated_bytes; /* the image file: apparent and real size (0: no image) */
        uint64_t host_free_bytes;                    /* the filesystem under the image */
        uint64_t device_errors;                      /* btrfs write/read/flush/corruption/generation errors */
        int64_t checked_at_ms, trimmed_at_ms;
        uint64_t trimmed_bytes; /* by the last trim */
};

/* "ok", "low_space", "read_only", "failed". */
const char *pool_condition_name(enum pool_condition c);

/* Checks the pool now (statvfs, device stats, a write probe, the host filesystem).
 * low_space_bytes: host free space below which the pool counts as low on space. The trim
 * figures of *ret (the previous check) are kept. */
void pool_health_check(const struct btrfs_pool *p, uint64_t low_space_bytes, struct pool_health *ret);

/* Discards the pool's free space (FITRIM): with a loop-mounted image the loop device punches
 * the holes into the image file, which so shrinks. Bytes trimmed, or -errno. */
int64_t pool_health_trim(const struct btrfs_pool *p);

/* The size a new pool image may have in a directory: `want`, or less when the filesystem
 * there cannot hold it. Returns 0 and *ret_bytes; -ENOSPC when even the minimum does not fit.
 * *ret_free is that filesystem's free space. */
int pool_health_image_size(const char *dir, uint64_t want, uint64_t minimum, uint64_t *ret_bytes, uint64_t *ret_free);

/* The latest check, shared between the controller (which runs checks) and request handlers. */
struct pool_monitor {
        pthread_mutex_t lock;
        struct pool_health last;
};
void pool_monitor_init(struct pool_monitor *m);
void pool_monitor_set(struct pool_monitor *m, const struct pool_health *h);
void pool_monitor_get(struct pool_monitor *m, struct pool_health *ret);
