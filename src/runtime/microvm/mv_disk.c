/* The disks of microvm sandboxes: each template's rootfs is made once into a raw ext4
 * image on the pool (<pool>/disk-images/<subvolume uuid>.ext4, mkfs.ext4 -d, written
 * beside and renamed); a sandbox's subvolume holds a reflink copy of it (disk.img), so a
 * create costs the same whatever the size, and the btrfs snapshots, restores and quotas of
 * the subvolume work on the disk unchanged. */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "runtime/microvm/mv_driver.h"
#include "spaced/host_command.h"
#include "storage/btrfs_pool.h"

#define IMAGE_BYTES (2ULL << 30) /* the disk's size as the guest sees it (sparse on the pool) */

int mv_disk_path(const struct mv_driver *mv, const struct sandbox *sb, char *buf, size_t size)
{
        char dir[PATH_MAX];
        int r = btrfs_pool_sandbox_path(mv->host.config.pool, sb->id, dir, sizeof(dir));
        if (r < 0)
                return r;
        return snprintf(buf, size, "%s/" MV_DISK, dir) >= (int)size ? -ENAMETOOLONG : 0;
}

/* The template's image, made now if it is not there yet. */
static int template_image(const struct mv_driver *mv, const char *template_path, char *buf, size_t size, struct space_error *err)
{
        char uuid[40], partial[PATH_MAX + 32], out[512];
        int r = btrfs_pool_subvolume_uuid(template_path, uuid, sizeof(uuid));
        if (r < 0)
                return space_error_errno(err, r, "subvolume of %s", template_path);
        if (snprintf(buf, size, "%s/%s.ext4", mv->images_dir, uuid) >= (int)size)
                return space_error_errno(err, ENAMETOOLONG, "image of %s", template_path);
        if (access(buf, F_OK) == 0)
                return 0;
        /* two creates of one template may both make it: each its own partial, one rename wins */
        snprintf(partial, sizeof(partial), "%s.partial.%d.%ld", buf, (int)getpid(), (long)gettid());
        _cleanup_close_ int fd = open(partial, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0 || ftruncate(fd, (off_t)IMAGE_BYTES) < 0) {
                r = -errno;
                unlink(partial);
                return space_error_errno(err, -r, "create %s", partial);
        }
        char *argv[] = { "mkfs.ext4",           "-q",    "-F", "-L", "space-rootfs", "-E", "root_owner=0:0", "-d",
                         (char *)template_path, partial, NULL };
        r = host_command_run(argv, NULL, out, sizeof(out), 600);
        if (r != 0) {
                unlink(partial);
                return space_error_set(err, SPACE_E_INTERNAL, "mkfs.ext4 -d %s failed (%d): %s", template_path, r,
                                       out[0] ? out : "no output");
        }
        if (fsync(fd) < 0 || rename(partial, buf) < 0) {
                r = errno;
                unlink(partial);
                return space_error_errno(err, r, "store %s", buf);
        }
        return 0;
}

/* dst (written beside, then renamed) becomes a copy-on-write clone of src. */
static int reflink(const char *src, const char *dst, struct space_error *err)
{
        char partial[PATH_MAX + 16];
        snprintf(partial, sizeof(partial), "%s.partial", dst);
        _cleanup_close_ int in = open(src, O_RDONLY | O_CLOEXEC);
        if (in < 0)
                return space_error_errno(err, errno, "open %s", src);
        _cleanup_close_ int out = open(partial, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (out < 0)
                return space_error_errno(err, errno, "create %s", partial);
        if (ioctl(out, FICLONE, in) < 0 || fsync(out) < 0 || rename(partial, dst) < 0) {
                int e = errno;
                unlink(partial);
                return space_error_errno(err, e, "reflink %s to %s", src, dst);
        }
        return 0;
}

int mv_disk_create(const struct runtime_driver *d, const struct sandbox *sb, const char *template_path, struct space_error *err)
{
        const struct mv_driver *mv = mv_driver_of(d);
        char dir[PATH_MAX], disk[PATH_MAX], src[PATH_MAX];
        int r = btrfs_pool_sandbox_path(mv->host.config.pool, sb->id, dir, sizeof(dir));
        if (r < 0 || (r = mv_disk_path(mv, sb, disk, sizeof(disk))) < 0)
                return space_error_errno(err, -r, "sandbox path");
        /* a microvm sandbox's snapshot holds its disk: clone that; a template, its image */
        if (snprintf(src, sizeof(src), "%s/" MV_DISK, template_path) >= (int)sizeof(src) || access(src, F_OK) < 0)
                if (template_image(mv, template_path, src, sizeof(src), err) < 0)
                        return -1;
        r = btrfs_pool_subvolume_create(dir);
        if (r == -EEXIST) { /* a create interrupted half way: start again */
                btrfs_pool_subvolume_delete(dir);
                r = btrfs_pool_subvolume_create(dir);
        }
        if (r < 0)
                return space_error_errno(err, -r, "create %s", dir);
        if (reflink(src, disk, err) < 0) {
                btrfs_pool_subvolume_delete(dir);
                return -1;
        }
        return 0;
}
