/* btrfs_quota: enforced disk limits on the pool with btrfs quota groups.
 *
 * The pool runs simple quotas (squota, Linux >= 6.7) where the kernel has them, else full
 * qgroups. Every sandbox rootfs subvolume's qgroup 0/<subvolid> gets a limit on exclusive
 * bytes (its disk_mb) and is a member of one level-1 group, BTRFS_QUOTA_SANDBOXES, limited
 * to the pool's size minus a reserve: sandboxes together can never take the reserve, so
 * templates, snapshots and (when the state dir is the pool) the database keep room.
 * Metadata is charged too, so empty files and directories count against the same limit.
 *
 * With squota an extent is charged to the subvolume that wrote it for as long as it
 * exists anywhere: data kept alive by a sandbox's snapshots keeps counting against the
 * sandbox (and the group) until those snapshots are deleted. Read-only snapshots are not
 * members of the group; they add only metadata of their own.
 *
 * Low level: returns 0 or -errno, logs nothing. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* qgroup 1/1: the parent of every sandbox rootfs qgroup. */
#define BTRFS_QUOTA_SANDBOXES ((UINT64_C(1) << 48) | 1)

/* Turns quotas on (simple quotas if the kernel has them; an already enabled mode is kept),
 * creates the sandboxes group if needed and limits it to the pool's size minus
 * reserve_bytes. *ret_group_limit gets that limit. Idempotent. -ENOSPC if the reserve
 * leaves nothing, -EOPNOTSUPP/-EINVAL where the kernel has no qgroups. */
int btrfs_quota_enable(const char *pool_root, uint64_t reserve_bytes, uint64_t *ret_group_limit);
/* Turns quotas off on the pool (all qgroups and limits go). Idempotent. */
int btrfs_quota_disable(const char *pool_root);
/* True if quotas are on in the filesystem of path; ret_mode (may be NULL) gets
 * "squota" or "qgroup". */
bool btrfs_quota_enabled(const char *path, char *ret_mode, size_t mode_size);
/* Makes the subvolume at path a member of the sandboxes group and, if limit_bytes > 0,
 * limits its exclusive bytes to limit_bytes. Idempotent: safe to repeat on every start. */
int btrfs_quota_limit_subvolume(const char *path, uint64_t limit_bytes);
