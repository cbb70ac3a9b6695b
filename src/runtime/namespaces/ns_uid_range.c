#include "runtime/namespaces/ns_uid_range.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"

struct ns_uid_ranges {
        char dir[PATH_MAX];
        char instance[64];
        char state_dir[PATH_MAX];
        uint32_t first, stride, count;
};

static int mkdir_p(const char *path)
{
        char buf[PATH_MAX];
        snprintf(buf, sizeof(buf), "%s", path);
        for (char *p = buf + 1; *p; p++)
                if (*p == '/') {
                        *p = '\0';
                        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                                return -errno;
                        *p = '/';
                }
        return mkdir(buf, 0700) < 0 && errno != EEXIST ? -errno : 0;
}

int ns_uid_ranges_open(const char *dir, const char *instance, const char *state_dir, struct ns_uid_ranges **ret)
{
        return ns_uid_ranges_open_slots(dir && dir[0] ? dir : NS_UID_RANGE_DIR, instance, state_dir, NS_UID_BASE_FIRST, 65536u,
                                        NS_UID_SLOTS, ret);
}

int ns_uid_ranges_open_slots(const char *dir, const char *instance, const char *state_dir, uint32_t first, uint32_t stride,
                             uint32_t count, struct ns_uid_ranges **ret)
{
        if (strchr(instance, ' ') || strlen(instance) >= 64)
                return -EINVAL;
        _cleanup_free_ struct ns_uid_ranges *u = calloc(1, sizeof(*u));
        if (!u)
                return -ENOMEM;
        snprintf(u->dir, sizeof(u->dir), "%s", dir);
        u->first = first;
        u->stride = stride;
        u->count = count;
        snprintf(u->instance, sizeof(u->instance), "%s", instance);
        snprintf(u->state_dir, sizeof(u->state_dir), "%s", state_dir);
        int r = mkdir_p(u->dir);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(u);
        return 0;
}

void ns_uid_ranges_free(struct ns_uid_ranges *u)
{
        free(u);
}

/* The host-wide lock, held for every read-modify-write of the directory. */
static int lock_dir(const struct ns_uid_ranges *u)
{
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/.lock", u->dir);
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        while (flock(fd, LOCK_EX) < 0)
                if (errno != EINTR) {
                        int e = -errno;
                        close(fd);
                        return e;
                }
        return fd; /* closing it unlocks */
}

struct owner {
        char instance[64];
        char sandbox[64];
        char state_dir[PATH_MAX];
};

/* 0 and *ret, -ENOENT when the range is free, -EBADMSG for a file that is not ours to read. */
static int read_owner(const struct ns_uid_ranges *u, uint32_t base, struct owner *ret)
{
        char path[PATH_MAX], buf[PATH_MAX + 160];
        snprintf(path, sizeof(path), "%s/%u", u->dir, base);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        if (n < 0)
                return -errno;
        buf[n] = '\0';
        memset(ret, 0, sizeof(*ret));
        char *nl = strchr(buf, '\n');
        if (nl)
                *nl = '\0';
        char *sp1 = strchr(buf, ' '), *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
        if (!sp2 || sp1 - buf >= 64 || sp2 - sp1 - 1 >= 64)
                return -EBADMSG;
        memcpy(ret->instance, buf, (size_t)(sp1 - buf));
        memcpy(ret->sandbox, sp1 + 1, (size_t)(sp2 - sp1 - 1));
        snprintf(ret->state_dir, sizeof(ret->state_dir), "%s", sp2 + 1);
        return 0;
}

/* A range whose owner's state directory no longer names that instance: its daemon and
 * sandboxes are gone for good (the directory was removed or reused). */
static bool owner_gone(const struct owner *o)
{
        char path[PATH_MAX + 16], id[64];
        snprintf(path, sizeof(path), "%s/instance", o->state_dir);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT || errno == ENOTDIR;
        ssize_t n = read(fd, id, sizeof(id) - 1);
        if (n < 0)
                return false;
        id[n] = '\0';
        id[strcspn(id, "\n")] = '\0';
        return strcmp(id, o->instance) != 0;
}

int ns_uid_ranges_take(struct ns_uid_ranges *u, const char *sandbox_id, uint32_t *ret_base)
{
        if (strchr(sandbox_id, ' ') || strlen(sandbox_id) >= 64)
                return -EINVAL;
        _cleanup_close_ int lock = lock_dir(u);
        if (lock < 0)
                return lock;
        for (uint32_t slot = 0; slot < u->count; slot++) {
                uint32_t base = u->first + slot * u->stride;
                char path[PATH_MAX];
                struct owner o;
                snprintf(path, sizeof(path), "%s/%u", u->dir, base);
                int r = read_owner(u, base, &o);
                if (r == 0 && !owner_gone(&o))
                        continue;
                if (r < 0 && r != -ENOENT)
                        continue; /* unreadable: leave it be */
                if (r == 0 && unlink(path) < 0)
                        continue;
                char tmp[PATH_MAX + 8], text[PATH_MAX + 160];
                snprintf(tmp, sizeof(tmp), "%s/.%u", u->dir, base);
                int len = snprintf(text, sizeof(text), "%s %s %s\n", u->instance, sandbox_id, u->state_dir);
                _cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
                if (fd < 0)
                        return -errno;
                /* Whole or not at all: the record appears by rename. */
                if (write(fd, text, (size_t)len) != len || rename(tmp, path) < 0) {
                        int e = errno ? -errno : -EIO;
                        unlink(tmp);
                        return e;
                }
                *ret_base = base;
                return 0;
        }
        return -ENOSPC;
}

uint32_t ns_uid_ranges_recorded(const char *path)
{
        char buf[32];
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return 0;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        if (n <= 0)
                return 0;
        buf[n] = '\0';
        unsigned long v = strtoul(buf, NULL, 10);
        return v <= UINT32_MAX ? (uint32_t)v : 0;
}

int ns_uid_ranges_record(const char *path, uint32_t base)
{
        char text[16];
        int len = snprintf(text, sizeof(text), "%u\n", base);
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        return write(fd, text, (size_t)len) == len ? 0 : (errno ? -errno : -EIO);
}

static int give_locked(struct ns_uid_ranges *u, uint32_t base, const char *sandbox_id)
{
        struct owner o;
        char path[PATH_MAX];
        if (read_owner(u, base, &o) < 0 || strcmp(o.instance, u->instance) != 0 || strcmp(o.sandbox, sandbox_id) != 0)
                return 0;
        snprintf(path, sizeof(path), "%s/%u", u->dir, base);
        return unlink(path) < 0 && errno != ENOENT ? -errno : 0;
}

int ns_uid_ranges_give(struct ns_uid_ranges *u, uint32_t base, const char *sandbox_id)
{
        _cleanup_close_ int lock = lock_dir(u);
        if (lock < 0)
                return lock;
        return give_locked(u, base, sandbox_id);
}

int ns_uid_ranges_sweep(struct ns_uid_ranges *u, int (*keep)(uint32_t base, const char *sandbox_id, void *arg), void *arg)
{
        _cleanup_close_ int lock = lock_dir(u);
        if (lock < 0)
                return lock;
        DIR *d = opendir(u->dir);
        if (!d)
                return -errno;
        struct dirent *de;
        int r = 0;
        while ((de = readdir(d))) {
                char *end;
                unsigned long base = strtoul(de->d_name, &end, 10);
                struct owner o;
                if (de->d_name[0] < '0' || de->d_name[0] > '9' || *end || base > UINT32_MAX ||
                    read_owner(u, (uint32_t)base, &o) < 0 || strcmp(o.instance, u->instance) != 0)
                        continue;
                if (!keep((uint32_t)base, o.sandbox, arg) && give_locked(u, (uint32_t)base, o.sandbox) < 0)
                        r = -errno;
        }
        closedir(d);
        return r;
}
