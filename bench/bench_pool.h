/* bench_pool: how much of spaced's btrfs pool is used, read on its mount point (the storage
 * measure). Needs the `btrfs` command (btrfs-progs) and the pool mounted where it runs. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct bench_pool_usage {
        bool ok;               /* the figures below were read */
        int64_t statfs_used;   /* statvfs(): (f_blocks - f_bfree) * f_frsize, what df shows as used */
        int64_t raw_used;      /* `btrfs filesystem usage -b`, Overall "Used:" (metadata counted per copy) */
        int64_t data_used;     /* its "Data,<profile>: ... Used:" */
        int64_t metadata_used; /* its "Metadata,<profile>: ... Used:" (one copy) */
        double metadata_ratio; /* its "Metadata ratio:" (2 for DUP) */
};

/* syncfs() on the pool, then reads statvfs() and `btrfs filesystem usage -b`. Returns 0 (ret->ok
 * set) or -errno (the reason printed). */
int bench_pool_usage(const char *pool, struct bench_pool_usage *ret);

/* `btrfs subvolume sync POOL`: waits until btrfs has cleaned up every deleted subvolume (their
 * space is freed in the background), at most timeout_s seconds. Returns 0 or -errno. */
int bench_pool_subvolume_sync(const char *pool, int timeout_s);
