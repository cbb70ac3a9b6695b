#include "storage/btrfs_quota.h"

#include <btrfsutil.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/btrfs.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "cleanup.h"
#include "storage/btrfs_pool.h"

#ifndef BTRFS_QUOTA_CTL_ENABLE_SIMPLE_QUOTA
#define BTRFS_QUOTA_CTL_ENABLE_SIMPLE_QUOTA 4 /* Linux 6.7; older uapi headers lack it */
#endif

static int open_btrfs_dir(const char *path)
{
        if (!btrfs_pool_is_btrfs(path))
                return -ENOTTY;
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

static int quota_ctl(int fd, uint64_t cmd)
{
        struct btrfs_ioctl_quota_ctl_args a = { .cmd = cmd };
        return ioctl(fd, BTRFS_IOC_QUOTA_CTL, &a) < 0 ? -errno : 0;
}

/* /sys/fs/btrfs/<fsid>/qgroups of the filesystem of fd; -ENOENT when quotas are off. */
static int qgroups_sysfs(int fd, char *buf, size_t size)
{
        struct btrfs_ioctl_fs_info_args info = { 0 };
        if (ioctl(fd, BTRFS_IOC_FS_INFO, &info) < 0)
                return -errno;
        int n = snprintf(buf, size, "/sys/fs/btrfs/");
        for (size_t i = 0; i < BTRFS_FSID_SIZE && (size_t)n + 3 < size; i++) {
                n += snprintf(buf + n, size - (size_t)n, "%02x", info.fsid[i]);
                if (i == 3 || i == 5 || i == 7 || i == 9)
                        n += snprintf(buf + n, size - (size_t)n, "-");
        }
        if ((size_t)n + sizeof("/qgroups") > size)
                return -ENAMETOOLONG;
        snprintf(buf + n, size - (size_t)n, "/qgroups");
        return access(buf, F_OK) == 0 ? 0 : -errno;
}

static bool fd_quota_enabled(int fd, char *ret_mode, size_t mode_size)
{
        char dir[256], path[300];
        if (qgroups_sysfs(fd, dir, sizeof(dir)) < 0)
                return false;
        if (ret_mode && mode_size) {
                snprintf(ret_mode, mode_size, "qgroup");
                snprintf(path, sizeof(path), "%s/mode", dir);
                _cleanup_close_ int mfd = open(path, O_RDONLY | O_CLOEXEC);
                char m[32];
                ssize_t k = mfd >= 0 ? read(mfd, m, sizeof(m) - 1) : -1;
                if (k > 0) {
                        m[k] = 0;
                        m[strcspn(m, "\n")] = 0;
                        snprintf(ret_mode, mode_size, "%s", m);
                }
        }
        return true;
}

bool btrfs_quota_enabled(const char *path, char *ret_mode, size_t mode_size)
{
        _cleanup_close_ int fd = open_btrfs_dir(path);
        return fd >= 0 && fd_quota_enabled(fd, ret_mode, mode_size);
}

static int qgroup_limit(int fd, uint64_t qgroupid, uint64_t max_excl)
{
        struct btrfs_ioctl_qgroup_limit_args a = {
                .qgroupid = qgroupid,
                .lim = { .flags = BTRFS_QGROUP_LIMIT_MAX_EXCL, .max_excl = max_excl },
        };
        return ioctl(fd, BTRFS_IOC_QGROUP_LIMIT, &a) < 0 ? -errno : 0;
}

int btrfs_quota_enable(const char *pool_root, uint64_t reserve_bytes, uint64_t *ret_group_limit)
{
        _cleanup_close_ int fd = open_btrfs_dir(pool_root);
        if (fd < 0)
                return fd;
        struct statfs sfs;
        if (fstatfs(fd, &sfs) < 0)
                return -errno;
        uint64_t total = (uint64_t)sfs.f_blocks * (uint64_t)sfs.f_bsize;
        if (reserve_bytes >= total)
                return -ENOSPC;
        int r = 0;
        if (!fd_quota_enabled(fd, NULL, 0)) {
                r = quota_ctl(fd, BTRFS_QUOTA_CTL_ENABLE_SIMPLE_QUOTA);
                if (r == -EINVAL || r == -EOPNOTSUPP) /* a kernel before simple quotas */
                        r = quota_ctl(fd, BTRFS_QUOTA_CTL_ENABLE);
                if (r < 0)
                        return r;
        }
        struct btrfs_ioctl_qgroup_create_args c = { .create = 1, .qgroupid = BTRFS_QUOTA_SANDBOXES };
        if (ioctl(fd, BTRFS_IOC_QGROUP_CREATE, &c) < 0 && errno != EEXIST)
                return -errno;
        uint64_t limit = total - reserve_bytes;
        if ((r = qgroup_limit(fd, BTRFS_QUOTA_SANDBOXES, limit)) < 0)
                return r;
        if (ret_group_limit)
                *ret_group_limit = limit;
        return 0;
}

int btrfs_quota_disable(const char *pool_root)
{
        _cleanup_close_ int fd = open_btrfs_dir(pool_root);
        if (fd < 0)
                return fd;
        if (!fd_quota_enabled(fd, NULL, 0))
                return 0;
        return quota_ctl(fd, BTRFS_QUOTA_CTL_DISABLE);
}

int btrfs_quota_limit_subvolume(const char *path, uint64_t limit_bytes)
{
        _cleanup_close_ int fd = open_btrfs_dir(path);
        if (fd < 0)
                return fd;
        uint64_t id = 0;
        errno = 0;
        if (btrfs_util_subvolume_id_fd(fd, &id) != BTRFS_UTIL_OK)
                return errno ? -errno : -EIO;
        if (id == 5)            /* BTRFS_FS_TREE_OBJECTID: the top level */
                return -EINVAL; /* a plain directory, not a subvolume of its own */
        struct btrfs_ioctl_qgroup_assign_args a = { .assign = 1, .src = id, .dst = BTRFS_QUOTA_SANDBOXES };
        /* EEXIST: a member already. A positive return (full qgroups only: the group's count
         * is now inconsistent) asks for a rescan; squota adds the member's usage at once. */
        int r = ioctl(fd, BTRFS_IOC_QGROUP_ASSIGN, &a);
        if (r < 0 && errno == ENOENT) {
                /* A subvolume made while quotas were off (before an upgrade, or with
                 * --disk-quota off) has no qgroup yet. */
                struct btrfs_ioctl_qgroup_create_args c = { .create = 1, .qgroupid = id };
                if (ioctl(fd, BTRFS_IOC_QGROUP_CREATE, &c) < 0 && errno != EEXIST)
                        return -errno;
                r = ioctl(fd, BTRFS_IOC_QGROUP_ASSIGN, &a);
        }
        if (r < 0 && errno != EEXIST)
                return -errno;
        if (r > 0) {
                struct btrfs_ioctl_quota_rescan_args rescan = { 0 };
                if (ioctl(fd, BTRFS_IOC_QUOTA_RESCAN, &rescan) < 0 && errno != EINPROGRESS)
                        return -errno;
        }
        if (limit_bytes == 0)
                return 0;
        return qgroup_limit(fd, id, limit_bytes);
}
