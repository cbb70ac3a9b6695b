/* rootfs_archive: unpacks a tar archive (plain, gzip, zstd, xz… whatever libarchive reads)
 * into a directory without letting it reach outside: absolute paths and `..` are refused,
 * nothing is written through a symbolic link already on disk, hard links must point inside,
 * device files, FIFOs and sockets are skipped (counted), and the unpacked size is capped.
 * With whiteouts, OCI/AUFS whiteout entries (.wh.NAME, .wh..wh..opq) delete what lower
 * layers put there instead of being extracted. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "spaced/space_error.h"

struct rootfs_archive_options {
        bool keep_owner;    /* else everything is root's (build contexts) */
        bool whiteouts;     /* an image layer: apply whiteouts */
        uint64_t max_bytes; /* total size of regular files; 0: no limit */
};

struct rootfs_archive_stats {
        uint64_t entries;
        uint64_t bytes;
        uint64_t skipped; /* devices, FIFOs, sockets */
        uint64_t whiteouts;
};

/* root must exist. Errors: invalid_request for a hostile or unreadable archive,
 * payload_too_large over max_bytes, internal for host failures. */
int rootfs_archive_extract(const char *archive_path, const char *root, const struct rootfs_archive_options *o,
                           struct rootfs_archive_stats *stats, struct space_error *err);
