#include "storage/btrfs_pool.h"

#include "spaced/dir_tree.h"

#include <btrfsutil.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "cleanup.h"
#include "spaced/host_command.h"

bool btrfs_pool_is_btrfs(const char *path)
{
        struct statfs sfs;
        return statfs(path, &sfs) == 0 && sfs.f_type == BTRFS_SUPER_MAGIC;
}

static int errno_from_btrfsutil(enum btrfs_util_error e)
{
        if (e == BTRFS_UTIL_OK)
                return 0;
        return errno ? -errno : -EIO;
}

static int ensure_image_mounted(struct btrfs_pool *p, uint64_t image_bytes, char *reason, size_t reason_size)
{
        char out[1024];
        struct stat st;
        bool fresh = stat(p->image, &st) < 0;
        if (fresh) {
                _cleanup_close_ int fd = open(p->image, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
                if (fd < 0 || ftruncate(fd, (off_t)image_bytes) < 0) {
                        snprintf(reason, reason_size, "cannot create pool image %s: %m", p->image);
                        unlink(p->image);
                        return -errno;
                }
                char *mkfs[] = { "mkfs.btrfs", "-q", "-f", "-L", "space-pool", p->image, NULL };
                int r = host_command_run(mkfs, NULL, out, sizeof(out), 120);
                if (r != 0) {
                        snprintf(reason, reason_size, "mkfs.btrfs %s failed (%d): %s", p->image, r, out);
                        unlink(p->image);
                        return r < 0 ? r : -EIO;
                }
        }
        /* nosuid,nodev: setuid-root files and device nodes made in sandboxes (host uid 0 on
         * disk through the idmap) or carried in by imports are inert on the host. */
        char *mount[] = { "mount", "-o", "loop,noatime,nosuid,nodev,user_subvol_rm_allowed", p->image, p->root, NULL };
        int r = host_command_run(mount, NULL, out, sizeof(out), 60);
        if (r != 0) {
                snprintf(reason, reason_size, "mounting %s on %s failed (%d): %s", p->image, p->root, r, out);
                return r < 0 ? r : -EIO;
        }
        return 0;
}

int btrfs_pool_open(const char *state_dir, uint64_t image_bytes, struct btrfs_pool *ret, char *reason, size_t reason_size)
{
        struct btrfs_pool p = { 0 };
        int r;
        if (snprintf(p.root, sizeof(p.root), "%s/pool", state_dir) >= (int)sizeof(p.root))
                return -ENAMETOOLONG;
        r = dir_tree_create(p.root, 0700);
        if (r < 0) {
                snprintf(reason, reason_size, "cannot create %s: %s", p.root, strerror(-r));
                return r;
        }
        if (!btrfs_pool_is_btrfs(p.root)) {
                if (btrfs_pool_is_btrfs(state_dir)) {
                        /* The state directory is already btrfs: use it directly. */
                } else {
                        snprintf(p.image, sizeof(p.image), "%s/pool.img", state_dir);
                        r = ensure_image_mounted(&p, image_bytes, reason, reason_size);
                        if (r < 0)
                                return r;
                }
        } else if (!btrfs_pool_is_btrfs(state_dir)) {
                snprintf(p.image, sizeof(p.image), "%s/pool.img", state_dir);
                /* Mounted by an older spaced, perhaps without nosuid,nodev: add them. */
                char out[1024];
                char *remount[] = { "mount", "-o", "remount,nosuid,nodev", p.root, NULL };
                r = host_command_run(remount, NULL, out, sizeof(out), 60);
                if (r != 0) {
                        snprintf(reason, reason_size, "remounting %s nosuid,nodev failed (%d): %s", p.root, r, out);
                        return r < 0 ? r : -EIO;
                }
        }
        static const char *const dirs[] = { "templates", "sandboxes", "snapshots", "staging", "layers", "builds", "disk-images" };
        for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
                char d[PATH_MAX];
                snprintf(d, sizeof(d), "%s/%s", p.root, dirs[i]);
                r = dir_tree_create(d, 0700);
                if (r < 0) {
                        snprintf(reason, reason_size, "cannot create %s: %s", d, strerror(-r));
                        return r;
                }
        }
        *ret = p;
        return 0;
}

static int pool_path(const struct btrfs_pool *p, const char *dir, const char *name, char *buf, size_t size)
{
        if (!name || !*name || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
                return -EINVAL;
        return snprintf(buf, size, "%s/%s/%s", p->root, dir, name) >= (int)size ? -ENAMETOOLONG : 0;
}

int btrfs_pool_template_path(const struct btrfs_pool *p, const char *name, char *buf, size_t size)
{
        return pool_path(p, "templates", name, buf, size);
}

int btrfs_pool_sandbox_path(const struct btrfs_pool *p, const char *id, char *buf, size_t size)
{
        return pool_path(p, "sandboxes", id, buf, size);
}

int btrfs_pool_snapshot_path(const struct btrfs_pool *p, const char *id, char *buf, size_t size)
{
        return pool_path(p, "snapshots", id, buf, size);
}

int btrfs_pool_disk_images_dir(const struct btrfs_pool *p, char *buf, size_t size)
{
        return snprintf(buf, size, "%s/disk-images", p->root) >= (int)size ? -ENAMETOOLONG : 0;
}

int btrfs_pool_subvolume_uuid(const char *path, char *buf, size_t size)
{
        struct btrfs_util_subvolume_info info;
        enum btrfs_util_error e = btrfs_util_subvolume_info(path, 0, &info);
        if (e != BTRFS_UTIL_OK)
                return errno_from_btrfsutil(e);
        if (size < 37)
                return -ENAMETOOLONG;
        const uint8_t *u = info.uuid;
        snprintf(buf, size, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2], u[3], u[4],
                 u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
        return 0;
}

int btrfs_pool_layer_path(const struct btrfs_pool *p, const char *key, char *buf, size_t size)
{
        return pool_path(p, "layers", key, buf, size);
}

int btrfs_pool_staging_path(const struct btrfs_pool *p, const char *name, char *buf, size_t size)
{
        return pool_path(p, "staging", name, buf, size);
}

int btrfs_pool_snapshot(const char *src, const char *dst, bool read_only)
{
        errno = 0;
        int flags = read_only ? BTRFS_UTIL_CREATE_SNAPSHOT_READ_ONLY : 0;
        if (access(dst, F_OK) == 0)
                return -EEXIST;
        return errno_from_btrfsutil(btrfs_util_create_snapshot(src, dst, flags, NULL, NULL));
}

int btrfs_pool_subvolume_create(const char *path)
{
        errno = 0;
        return errno_from_btrfsutil(btrfs_util_create_subvolume(path, 0, NULL, NULL));
}

int btrfs_pool_set_read_only(const char *path, bool read_only)
{
        errno = 0;
        return errno_from_btrfsutil(btrfs_util_set_subvolume_read_only(path, read_only));
}

int btrfs_pool_subvolume_delete(const char *path)
{
        struct stat st;
        if (lstat(path, &st) < 0)
                return errno == ENOENT ? 0 : -errno;
        errno = 0;
        enum btrfs_util_error e = btrfs_util_delete_subvolume(path, BTRFS_UTIL_DELETE_SUBVOLUME_RECURSIVE);
        if (e == BTRFS_UTIL_OK)
                return 0;
        if (errno == EPERM || errno == EROFS) {
                /* A read-only subvolume with read-only children: make it writable, then retry. */
                btrfs_util_set_subvolume_read_only(path, false);
                errno = 0;
                e = btrfs_util_delete_subvolume(path, BTRFS_UTIL_DELETE_SUBVOLUME_RECURSIVE);
        }
        int r = errno_from_btrfsutil(e);
        /* Someone else deleted it between the lstat and here: gone is what was asked. */
        if (r < 0 && lstat(path, &st) < 0 && errno == ENOENT)
                return 0;
        return r;
}

int btrfs_pool_changed_since(const char *path, const char *snapshot_path)
{
        struct btrfs_util_subvolume_info now, then;
        errno = 0;
        if (btrfs_util_subvolume_info(path, 0, &now) != BTRFS_UTIL_OK ||
            btrfs_util_subvolume_info(snapshot_path, 0, &then) != BTRFS_UTIL_OK)
                return errno ? -errno : -EIO;
        return now.generation > then.otransid ? 1 : 0;
}

int btrfs_pool_sync(const struct btrfs_pool *p)
{
        errno = 0;
        return errno_from_btrfsutil(btrfs_util_sync(p->root));
}
