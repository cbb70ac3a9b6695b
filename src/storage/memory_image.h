/* memory_image: where a memory snapshot's checkpoint image lives in the pool:
 * pool/memory/<snapshot id>/, a directory beside the snapshot's subvolume
 * (pool/snapshots/<id>). It is written as <id>.partial and renamed into place once whole,
 * so a directory named by a snapshot id is always a complete image. Sandboxes never see
 * it (it is no part of any rootfs) and exports do not carry it. Low level: 0 or -errno. */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct btrfs_pool;

int memory_image_path(const struct btrfs_pool *p, const char *snapshot_id, char *buf, size_t size);
/* The empty directory an image is written into (<path>.partial, emptied of what an
 * interrupted attempt left; pool/memory made if missing). */
int memory_image_begin(const struct btrfs_pool *p, const char *snapshot_id, char *ret_partial, size_t size);
/* Moves the written image into place (replacing one an earlier attempt finished). */
int memory_image_commit(const struct btrfs_pool *p, const char *snapshot_id);
/* Removes the image and any partial one; 0 when there is none. */
int memory_image_remove(const struct btrfs_pool *p, const char *snapshot_id);
/* 1 if the complete image exists, 0 if not, -errno. */
int memory_image_exists(const struct btrfs_pool *p, const char *snapshot_id);
/* Bytes the image's files take on disk, or -errno (-ENOENT: none). */
int64_t memory_image_bytes(const struct btrfs_pool *p, const char *snapshot_id);
/* The snapshot ids that have an image or a partial one in the pool (for the orphan sweep):
 * *ret_ids a malloc'd array of malloc'd strings and *ret_partial a malloc'd array saying
 * which of them are partial (both NULL when there is none). */
int memory_image_list(const struct btrfs_pool *p, char ***ret_ids, int **ret_partial, size_t *ret_n);
/* Renames the complete image under from_key to to_id's place, never over one (an imported
 * image joining the snapshot it came with). */
int memory_image_adopt(const struct btrfs_pool *p, const char *from_key, const char *to_id);
/* The runtime whose image snapshot_id's is, by its files ("gvisor", "microvm"), or NULL
 * when it has none. */
const char *memory_image_runtime(const struct btrfs_pool *p, const char *snapshot_id);
/* 0 when dir holds only single-linked regular files named as the files of one kind of
 * image are: runsc's (checkpoint.img among them, pages_meta.img, pages.img) or the microvm
 * driver's (memory.img and machine, both); -EINVAL otherwise (an imported archive made
 * anything else). */
int memory_image_check_files(const char *dir);
