/* The root filesystems of the drivers whose sandboxes run on the host (namespaces, gvisor):
 * a writable btrfs snapshot of the template per sandbox in the pool, frozen through the
 * sandbox's cgroup for a consistent snapshot, and the host-side looks into it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"
#include "runtime/cgroup/cgroup_manager.h"
#include "runtime/sandbox_host.h"
#include "spaced/wallclock.h"
#include "storage/btrfs_pool.h"
#include "storage/btrfs_quota.h"

int sandbox_host_rootfs_create(const struct runtime_driver *d, const struct sandbox *sb, const char *template_path,
                               struct space_error *err)
{
        const struct sandbox_host *h = sandbox_host_of(d);
        char path[PATH_MAX];
        int r = btrfs_pool_sandbox_path(h->config.pool, sb->id, path, sizeof(path));
        if (r < 0)
                return space_error_errno(err, r, "sandbox path");
        r = btrfs_pool_snapshot(template_path, path, false);
        if (r == -EEXIST) {
                /* A create interrupted after the snapshot: start again from the template. */
                btrfs_pool_subvolume_delete(path);
                r = btrfs_pool_snapshot(template_path, path, false);
        }
        if (r < 0)
                return space_error_errno(err, r, "snapshot %s", template_path);
        return 0;
}

int sandbox_host_rootfs_destroy(const struct runtime_driver *d, const struct sandbox *sb, struct space_error *err)
{
        const struct sandbox_host *h = sandbox_host_of(d);
        char path[PATH_MAX];
        int r = btrfs_pool_sandbox_path(h->config.pool, sb->id, path, sizeof(path));
        if (r == 0)
                r = btrfs_pool_subvolume_delete(path);
        return r < 0 ? space_error_errno(err, r, "delete rootfs of %s", sb->id) : 0;
}

int sandbox_host_rootfs_snapshot(const struct runtime_driver *d, const struct sandbox *sb, const char *dst, int64_t *ret_pause_us,
                                 struct space_error *err)
{
        const struct sandbox_host *h = sandbox_host_of(d);
        char path[PATH_MAX];
        int r = btrfs_pool_sandbox_path(h->config.pool, sb->id, path, sizeof(path));
        if (r < 0)
                return space_error_errno(err, r, "sandbox path");
        /* Freeze so no write is half done; btrfs flushes the subvolume's dirty data into the
         * snapshot as part of taking it. A paused sandbox is frozen already. */
        bool freeze = sb->state == SANDBOX_RUNNING;
        /* Write most dirty data out before freezing: the snapshot flushes what is left, and
         * that is then all the sandbox waits for. */
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd >= 0) {
                syncfs(fd);
                close(fd);
        }
        int64_t t0 = monotonic_now_us();
        if (freeze && (r = h->cgroups->ops->freeze(h->cgroups, sb->id, true)) < 0)
                return space_error_errno(err, r, "freeze %s", sb->id);
        btrfs_pool_subvolume_delete(dst); /* a partial earlier attempt */
        int snap = btrfs_pool_snapshot(path, dst, true);
        if (freeze && (r = h->cgroups->ops->freeze(h->cgroups, sb->id, false)) < 0)
                return space_error_errno(err, r, "thaw %s", sb->id);
        *ret_pause_us = freeze ? monotonic_now_us() - t0 : 0;
        return snap < 0 ? space_error_errno(err, snap, "snapshot %s", path) : 0;
}

int sandbox_host_rootfs_restore(const struct runtime_driver *d, const struct sandbox *sb, const char *src,
                                struct space_error *err)
{
        const struct sandbox_host *h = sandbox_host_of(d);
        char path[PATH_MAX], next[PATH_MAX + 16];
        int r = btrfs_pool_sandbox_path(h->config.pool, sb->id, path, sizeof(path));
        if (r < 0)
                return space_error_errno(err, r, "sandbox path");
        snprintf(next, sizeof(next), "%s.restore", path);
        /* Build the new rootfs beside the old one, then swap: at every instant one of them is
         * complete, and a redo starts the copy again from the snapshot. */
        btrfs_pool_subvolume_delete(next);
        if ((r = btrfs_pool_snapshot(src, next, false)) < 0)
                return space_error_errno(err, r, "copy %s", src);
        if ((r = btrfs_pool_subvolume_delete(path)) < 0)
                return space_error_errno(err, r, "remove old rootfs of %s", sb->id);
        if (rename(next, path) < 0)
                return space_error_errno(err, errno, "put restored rootfs of %s in place", sb->id);
        return 0;
}

int sandbox_host_rootfs_disk_limit(const struct runtime_driver *d, const struct sandbox *sb, uint64_t limit_bytes)
{
        const struct sandbox_host *h = sandbox_host_of(d);
        char path[PATH_MAX];
        int r = btrfs_pool_sandbox_path(h->config.pool, sb->id, path, sizeof(path));
        if (r < 0)
                return r;
        if (access(path, F_OK) < 0)
                return -errno;
        return btrfs_quota_limit_subvolume(path, limit_bytes);
}

int sandbox_host_rootfs_path_exists(const struct runtime_driver *d, const struct sandbox *sb, const char *path)
{
        const struct sandbox_host *h = sandbox_host_of(d);
        char root[PATH_MAX];
        int r = btrfs_pool_sandbox_path(h->config.pool, sb->id, root, sizeof(root));
        if (r < 0)
                return r;
        _cleanup_close_ int dir = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dir < 0)
                return -errno;
        /* Resolved as inside the sandbox: its symlinks cannot lead out of its root. */
        struct open_how how = { .flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
        _cleanup_close_ int fd = (int)syscall(SYS_openat2, dir, path, &how, sizeof(how));
        if (fd >= 0)
                return 1;
        return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
}

int sandbox_host_rootfs_changed_since(const struct runtime_driver *d, const struct sandbox *sb, const char *snapshot_path)
{
        const struct sandbox_host *h = sandbox_host_of(d);
        char rootfs[PATH_MAX];
        int r = btrfs_pool_sandbox_path(h->config.pool, sb->id, rootfs, sizeof(rootfs));
        if (r < 0)
                return r;
        btrfs_pool_sync(h->config.pool); /* buffered writes must count as changes */
        return btrfs_pool_changed_since(rootfs, snapshot_path);
}

static int add_name(char ***ids, size_t *n, const char *name)
{
        for (size_t i = 0; i < *n; i++)
                if (strcmp((*ids)[i], name) == 0)
                        return 0;
        char **grown = realloc(*ids, (*n + 1) * sizeof(**ids));
        if (!grown)
                return -ENOMEM;
        *ids = grown;
        grown[*n] = strdup(name);
        if (!grown[*n])
                return -ENOMEM;
        (*n)++;
        return 0;
}

static int add_dir_entries(char ***ids, size_t *n, const char *dir)
{
        DIR *dd = opendir(dir);
        if (!dd)
                return errno == ENOENT ? 0 : -errno;
        struct dirent *de;
        int r = 0;
        while (r == 0 && (de = readdir(dd)))
                if (de->d_name[0] != '.')
                        r = add_name(ids, n, de->d_name);
        closedir(dd);
        return r;
}

int sandbox_host_rootfs_list_resources(const struct runtime_driver *d, char ***ret_ids, size_t *ret_n)
{
        const struct sandbox_host *h = sandbox_host_of(d);
        char **ids = NULL, **cg = NULL;
        size_t n = 0, ncg = 0;
        char dir[PATH_MAX];
        snprintf(dir, sizeof(dir), "%s/sandboxes", h->config.pool->root);
        int r = add_dir_entries(&ids, &n, dir);
        if (r == 0)
                r = add_dir_entries(&ids, &n, h->config.run_dir);
        if (r == 0 && (r = h->cgroups->ops->list(h->cgroups, &cg, &ncg)) == 0)
                for (size_t i = 0; i < ncg; i++) {
                        if (r == 0)
                                r = add_name(&ids, &n, cg[i]);
                        free(cg[i]);
                }
        free(cg);
        *ret_ids = ids;
        *ret_n = n;
        return r;
}
