/* memory_image: checkpoint images of memory snapshots in the pool (memory_image.h). */
#include "storage/memory_image.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "spaced/dir_tree.h"
#include "storage/btrfs_pool.h"

/* The files of the two kinds of image: what runsc's checkpoint writes (20240729:
 * checkpoint.img; later builds add the pages files beside it), and what the microvm
 * driver writes (QEMU's saved VM and the machine it needs, mv_memory.c). The first name
 * of each is required. */
static const char *const image_kinds[][4] = {
        { "checkpoint.img", "pages_meta.img", "pages.img", NULL },
        { "memory.img", "machine", NULL },
};
static const char *const image_runtimes[] = { "gvisor", "microvm" };

#define PARTIAL ".partial"

static int memory_dir(const struct btrfs_pool *p, char *buf, size_t size)
{
        return snprintf(buf, size, "%s/memory", p->root) >= (int)size ? -ENAMETOOLONG : 0;
}

/* A rename into place is durable once the directory holding it is synced. */
static void sync_memory_dir(const struct btrfs_pool *p)
{
        char dir[PATH_MAX];
        if (memory_dir(p, dir, sizeof(dir)) < 0)
                return;
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd >= 0) {
                fsync(fd);
                close(fd);
        }
}

int memory_image_path(const struct btrfs_pool *p, const char *snapshot_id, char *buf, size_t size)
{
        if (!snapshot_id || !*snapshot_id || strchr(snapshot_id, '/') || snapshot_id[0] == '.')
                return -EINVAL;
        return snprintf(buf, size, "%s/memory/%s", p->root, snapshot_id) >= (int)size ? -ENAMETOOLONG : 0;
}

static int partial_path(const struct btrfs_pool *p, const char *snapshot_id, char *buf, size_t size)
{
        char path[PATH_MAX];
        int r = memory_image_path(p, snapshot_id, path, sizeof(path));
        if (r < 0)
                return r;
        return snprintf(buf, size, "%s" PARTIAL, path) >= (int)size ? -ENAMETOOLONG : 0;
}

int memory_image_begin(const struct btrfs_pool *p, const char *snapshot_id, char *ret_partial, size_t size)
{
        char dir[PATH_MAX], partial[PATH_MAX];
        int r = memory_dir(p, dir, sizeof(dir));
        if (r < 0 || (r = partial_path(p, snapshot_id, partial, sizeof(partial))) < 0)
                return r;
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                return -errno;
        if ((r = dir_tree_remove(partial)) < 0)
                return r;
        if (mkdir(partial, 0700) < 0)
                return -errno;
        if (snprintf(ret_partial, size, "%s", partial) >= (int)size)
                return -ENAMETOOLONG;
        return 0;
}

int memory_image_commit(const struct btrfs_pool *p, const char *snapshot_id)
{
        char path[PATH_MAX], partial[PATH_MAX];
        int r = memory_image_path(p, snapshot_id, path, sizeof(path));
        if (r < 0 || (r = partial_path(p, snapshot_id, partial, sizeof(partial))) < 0)
                return r;
        /* The image's files reach the disk before its name says it is whole. */
        DIR *d = opendir(partial);
        struct dirent *de;
        while (d && (de = readdir(d))) {
                int fd = de->d_name[0] == '.' ? -1 : openat(dirfd(d), de->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
                if (fd >= 0) {
                        fsync(fd);
                        close(fd);
                }
        }
        if (d)
                closedir(d);
        if ((r = dir_tree_remove(path)) < 0)
                return r;
        if (rename(partial, path) < 0)
                return -errno;
        sync_memory_dir(p);
        return 0;
}

int memory_image_remove(const struct btrfs_pool *p, const char *snapshot_id)
{
        char path[PATH_MAX], partial[PATH_MAX];
        int r = memory_image_path(p, snapshot_id, path, sizeof(path));
        if (r < 0 || (r = partial_path(p, snapshot_id, partial, sizeof(partial))) < 0)
                return r;
        r = dir_tree_remove(path);
        int q = dir_tree_remove(partial);
        return r < 0 ? r : q;
}

int memory_image_exists(const struct btrfs_pool *p, const char *snapshot_id)
{
        char path[PATH_MAX];
        struct stat st;
        int r = memory_image_path(p, snapshot_id, path, sizeof(path));
        if (r < 0)
                return r;
        if (lstat(path, &st) < 0)
                return errno == ENOENT ? 0 : -errno;
        return S_ISDIR(st.st_mode) ? 1 : 0;
}

const char *memory_image_runtime(const struct btrfs_pool *p, const char *snapshot_id)
{
        char path[PATH_MAX], file[PATH_MAX + 32];
        struct stat st;
        if (memory_image_path(p, snapshot_id, path, sizeof(path)) < 0)
                return NULL;
        for (size_t k = 0; k < sizeof(image_runtimes) / sizeof(image_runtimes[0]); k++) {
                snprintf(file, sizeof(file), "%s/%s", path, image_kinds[k][0]);
                if (lstat(file, &st) == 0 && S_ISREG(st.st_mode))
                        return image_runtimes[k];
        }
        return NULL;
}

int64_t memory_image_bytes(const struct btrfs_pool *p, const char *snapshot_id)
{
        char path[PATH_MAX];
        int r = memory_image_path(p, snapshot_id, path, sizeof(path));
        if (r < 0)
                return r;
        DIR *d = opendir(path);
        if (!d)
                return -errno;
        int64_t total = 0;
        struct dirent *de;
        struct stat st;
        while ((de = readdir(d)))
                if (de->d_name[0] != '.' && fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
                        total += (int64_t)st.st_blocks * 512;
        closedir(d);
        return total;
}

int memory_image_list(const struct btrfs_pool *p, char ***ret_ids, int **ret_partial, size_t *ret_n)
{
        char dir[PATH_MAX];
        int r = memory_dir(p, dir, sizeof(dir));
        if (r < 0)
                return r;
        char **ids = NULL;
        int *partial = NULL;
        size_t n = 0;
        DIR *d = opendir(dir);
        if (!d && errno != ENOENT)
                return -errno;
        struct dirent *de;
        while (d && (de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                char **more = realloc(ids, (n + 1) * sizeof(*ids));
                int *more_partial = more ? realloc(partial, (n + 1) * sizeof(*partial)) : NULL;
                if (more)
                        ids = more;
                if (more_partial)
                        partial = more_partial;
                size_t len = strlen(de->d_name), plen = strlen(PARTIAL);
                bool is_partial = len > plen && strcmp(de->d_name + len - plen, PARTIAL) == 0;
                char *id = more_partial ? strndup(de->d_name, is_partial ? len - plen : len) : NULL;
                if (!id) {
                        r = -ENOMEM;
                        break;
                }
                ids[n] = id;
                partial[n++] = is_partial;
        }
        if (d)
                closedir(d);
        if (r < 0) {
                for (size_t i = 0; i < n; i++)
                        free(ids[i]);
                free(ids);
                free(partial);
                return r;
        }
        *ret_ids = ids;
        *ret_partial = partial;
        *ret_n = n;
        return 0;
}

int memory_image_adopt(const struct btrfs_pool *p, const char *from_key, const char *to_id)
{
        char from[PATH_MAX], to[PATH_MAX];
        int r = memory_image_path(p, from_key, from, sizeof(from));
        if (r < 0 || (r = memory_image_path(p, to_id, to, sizeof(to))) < 0)
                return r;
        if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) < 0)
                return -errno;
        sync_memory_dir(p);
        return 0;
}


/* The index of the kind that has name, or -1. */
static int image_kind_of(const char *name)
{
        for (size_t k = 0; k < sizeof(image_kinds) / sizeof(image_kinds[0]); k++)
                for (size_t i = 0; image_kinds[k][i]; i++)
                        if (strcmp(name, image_kinds[k][i]) == 0)
                                return (int)k;
        return -1;
}

int memory_image_check_files(const char *dir)
{
        DIR *d = opendir(dir);
        if (!d)
                return -errno;
        struct dirent *de;
        struct stat st;
        int kind = -1, r = 0;
        size_t files = 0, required = 0;
        while (r == 0 && (de = readdir(d))) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                int k = image_kind_of(de->d_name);
                if (k < 0 || (kind >= 0 && k != kind) || fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
                    !S_ISREG(st.st_mode) || st.st_nlink != 1)
                        r = -EINVAL;
                kind = k;
                files++;
                required += strcmp(de->d_name, image_kinds[k < 0 ? 0 : k][0]) == 0;
        }
        closedir(d);
        if (r < 0 || kind < 0 || !required)
                return -EINVAL;
        /* a microvm image is both of its files */
        return kind == 1 && files != 2 ? -EINVAL : 0;
}
