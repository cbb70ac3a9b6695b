/* btrfs_pool: the btrfs filesystem that holds templates and sandbox root filesystems.
 * Layout under the pool root:
 *   templates/<name>     read-only subvolume per ready template
 *   sandboxes/<id>       writable snapshot of a template: the sandbox's rootfs
 *   snapshots/<id>       read-only snapshot of a sandbox's rootfs
 *   staging/             subvolumes under construction (template builds); swept at start
 *   layers/<key>         read-only layers of Spacefile builds, named by their cache key
 *   disk-images/         raw ext4 images of templates for the microvm runtime (by subvolume uuid)
 * If the state directory is not on btrfs, the pool is a sparse image file
 * <state>/pool.img formatted with btrfs and loop-mounted at <state>/pool. */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct btrfs_pool {
        char root[PATH_MAX];
        char image[PATH_MAX]; /* empty when the state dir itself is btrfs */
};

/* Finds or creates the pool; mounts the image if needed. Returns 0 or -errno; on failure
 * ret_reason says what went wrong. */
int btrfs_pool_open(const char *state_dir, uint64_t image_bytes, struct btrfs_pool *ret, char *ret_reason, size_t reason_size);

int btrfs_pool_template_path(const struct btrfs_pool *p, const char *name, char *buf, size_t size);
int btrfs_pool_sandbox_path(const struct btrfs_pool *p, const char *id, char *buf, size_t size);
int btrfs_pool_snapshot_path(const struct btrfs_pool *p, const char *id, char *buf, size_t size);
int btrfs_pool_layer_path(const struct btrfs_pool *p, const char *key, char *buf, size_t size);
int btrfs_pool_staging_path(const struct btrfs_pool *p, const char *name, char *buf, size_t size);
/* <pool>/disk-images */
int btrfs_pool_disk_images_dir(const struct btrfs_pool *p, char *buf, size_t size);
/* The subvolume's uuid (36 characters, lower-case hex and dashes); 0 or -errno. */
int btrfs_pool_subvolume_uuid(const char *path, char *buf, size_t size);

/* Writable (or read-only) snapshot of src at dst. -EEXIST if dst exists. */
int btrfs_pool_snapshot(const char *src, const char *dst, bool read_only);
int btrfs_pool_subvolume_create(const char *path);
int btrfs_pool_set_read_only(const char *path, bool read_only);
/* Deletes a subvolume and the subvolumes below it; 0 if it does not exist. */
int btrfs_pool_subvolume_delete(const char *path);
/* 1 if the subvolume at path was modified after the snapshot at snapshot_path was taken
 * (its generation is newer than the snapshot's creation transaction), 0 if not, -errno.
 * Call btrfs_pool_sync() first so that buffered writes count. */
int btrfs_pool_changed_since(const char *path, const char *snapshot_path);
int btrfs_pool_sync(const struct btrfs_pool *p);
/* True if path is on a btrfs filesystem. */
bool btrfs_pool_is_btrfs(const char *path);
