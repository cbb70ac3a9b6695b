#include "storage/pool_health.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/btrfs.h>
#include <linux/fs.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"

const char *pool_condition_name(enum pool_condition c)
{
        switch (c) {
        case POOL_OK:
                return "ok";
        case POOL_LOW_SPACE:
                return "low_space";
        case POOL_READ_ONLY:
                return "read_only";
        case POOL_FAILED:
                return "failed";
        }
        return "failed";
}

static int64_t now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Sum of the error counters of every device of the filesystem behind fd. */
static uint64_t device_errors(int fd)
{
        struct btrfs_ioctl_fs_info_args fs = { 0 };
        if (ioctl(fd, BTRFS_IOC_FS_INFO, &fs) < 0)
                return 0;
        uint64_t total = 0;
        for (uint64_t id = 0, seen = 0; id <= fs.max_id && seen < fs.num_devices; id++) {
                struct btrfs_ioctl_get_dev_stats st = { .devid = id, .nr_items = BTRFS_DEV_STAT_VALUES_MAX };
                if (ioctl(fd, BTRFS_IOC_GET_DEV_STATS, &st) < 0)
                        continue;
                seen++;
                for (uint64_t i = 0; i < st.nr_items && i < BTRFS_DEV_STAT_VALUES_MAX; i++)
                        total += st.values[i];
        }
        return total;
}

/* A small write that must reach the device: what a sandbox's write needs to work. */
static int write_probe(int rootfd)
{
        static const char probe[] = ".health-probe";
        _cleanup_close_ int fd = openat(rootfd, probe, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        char buf[4096];
        memset(buf, 'p', sizeof(buf));
        int r = 0;
        if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf) || fsync(fd) < 0)
                r = errno ? -errno : -EIO;
        unlinkat(rootfd, probe, 0);
        return r;
}

static void fail_with(struct pool_health *h, enum pool_condition c, const char *what, const char *path, int err)
{
        h->condition = c;
        snprintf(h->reason, sizeof(h->reason), "%s %s failed: %s", what, path, strerror(err));
}

void pool_health_check(const struct btrfs_pool *p, uint64_t low_space_bytes, struct pool_health *ret)
{
        struct pool_health h = { .condition = POOL_OK,
                                 .checked_at_ms = now_ms(),
                                 .trimmed_at_ms = ret->trimmed_at_ms,
                                 .trimmed_bytes = ret->trimmed_bytes };
        _cleanup_close_ int rootfd = open(p->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        struct statvfs sv;
        if (rootfd < 0 || fstatvfs(rootfd, &sv) < 0) {
                fail_with(&h, POOL_FAILED, "opening the pool at", p->root, errno);
                *ret = h;
                return;
        }
        h.pool_bytes = (uint64_t)sv.f_blocks * sv.f_frsize;
        h.pool_free_bytes = (uint64_t)sv.f_bavail * sv.f_frsize;
        h.device_errors = device_errors(rootfd);
        if (p->image[0]) {
                struct stat st;
                char dir[PATH_MAX];
                snprintf(dir, sizeof(dir), "%s", p->image);
                char *slash = strrchr(dir, '/');
                if (slash)
                        *slash = '\0';
                struct statvfs hv;
                if (stat(p->image, &st) == 0) {
                        h.image_bytes = (uint64_t)st.st_size;
                        h.image_allocated_bytes = (uint64_t)st.st_blocks * 512;
                }
                if (statvfs(slash ? dir : ".", &hv) == 0)
                        h.host_free_bytes = (uint64_t)hv.f_bavail * hv.f_frsize;
        }
        int r;
        if (sv.f_flag & ST_RDONLY) {
                h.condition = POOL_READ_ONLY;
                snprintf(h.reason, sizeof(h.reason),
                         "the pool is read-only (btrfs forces it so after a write error, e.g. when the filesystem under its "
                         "image ran out of space): sandboxes cannot write; see the kernel log");
        } else if ((r = write_probe(rootfd)) < 0)
                fail_with(&h, r == -EROFS ? POOL_READ_ONLY : POOL_FAILED, "a write to the pool at", p->root, -r);
        else if (h.device_errors > 0) {
                h.condition = POOL_FAILED;
                snprintf(h.reason, sizeof(h.reason), "the pool's device reports %llu I/O errors (btrfs device stats %s)",
                         (unsigned long long)h.device_errors, p->root);
        } else if (p->image[0] && h.host_free_bytes < low_space_bytes &&
                   h.image_bytes > h.image_allocated_bytes + h.host_free_bytes) {
                h.condition = POOL_LOW_SPACE;
                snprintf(h.reason, sizeof(h.reason),
                         "the filesystem under the pool image has %llu MiB free, and the image may still grow by %llu MiB: "
                         "writes that need more fail and btrfs then makes the pool read-only",
                         (unsigned long long)(h.host_free_bytes >> 20),
                         (unsigned long long)((h.image_bytes - h.image_allocated_bytes) >> 20));
        }
        *ret = h;
}

int64_t pool_health_trim(const struct btrfs_pool *p)
{
        _cleanup_close_ int fd = open(p->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        struct fstrim_range range = { .start = 0, .len = UINT64_MAX, .minlen = 0 };
        if (ioctl(fd, FITRIM, &range) < 0)
                return -errno;
        return (int64_t)range.len;
}

int pool_health_image_size(const char *dir, uint64_t want, uint64_t minimum, uint64_t *ret_bytes, uint64_t *ret_free)
{
        struct statvfs hv;
        if (statvfs(dir, &hv) < 0)
                return -errno;
        uint64_t avail = (uint64_t)hv.f_bavail * hv.f_frsize;
        *ret_free = avail;
        /* Leave the host filesystem a tenth of what is free (the database, logs, other users). */
        uint64_t fits = avail - avail / 10;
        if (fits < minimum)
                return -ENOSPC;
        *ret_bytes = want < fits ? want : fits;
        return 0;
}

void pool_monitor_init(struct pool_monitor *m)
{
        pthread_mutex_init(&m->lock, NULL);
        memset(&m->last, 0, sizeof(m->last));
}

void pool_monitor_set(struct pool_monitor *m, const struct pool_health *h)
{
        pthread_mutex_lock(&m->lock);
        m->last = *h;
        pthread_mutex_unlock(&m->lock);
}

void pool_monitor_get(struct pool_monitor *m, struct pool_health *ret)
{
        pthread_mutex_lock(&m->lock);
        *ret = m->last;
        pthread_mutex_unlock(&m->lock);
}
