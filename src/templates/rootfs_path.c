#include "templates/rootfs_path.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"

int rootfs_path_open(int rootfd, const char *path, int flags, mode_t mode)
{
        struct open_how how = {
                .flags = (uint64_t)(flags | O_CLOEXEC),
                .mode = (flags & O_CREAT) ? mode : 0,
                .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
        };
        while (*path == '/')
                path++;
        long fd = syscall(SYS_openat2, rootfd, *path ? path : ".", &how, sizeof(how));
        return fd < 0 ? -errno : (int)fd;
}

int rootfs_path_clean(const char *in, bool allow_absolute, char *out, size_t size)
{
        if (!in || !*in)
                return -EINVAL;
        if (*in == '/' && !allow_absolute)
                return -EINVAL;
        size_t n = 0;
        const char *p = in;
        while (*p) {
                while (*p == '/')
                        p++;
                size_t len = strcspn(p, "/");
                if (len == 0)
                        break;
                if (len == 2 && p[0] == '.' && p[1] == '.')
                        return -EINVAL;
                if (!(len == 1 && p[0] == '.')) {
                        if (n + len + 2 > size)
                                return -ENAMETOOLONG;
                        if (n)
                                out[n++] = '/';
                        memcpy(out + n, p, len);
                        n += len;
                }
                p += len;
        }
        if (n == 0) {
                if (size < 2)
                        return -ENAMETOOLONG;
                out[n++] = '.';
        }
        out[n] = '\0';
        return 0;
}

int rootfs_path_split(const char *path, char *parent, char *leaf)
{
        char clean[PATH_MAX];
        int r = rootfs_path_clean(path, true, clean, sizeof(clean));
        if (r < 0)
                return r;
        if (strcmp(clean, ".") == 0)
                return -EINVAL;
        char *slash = strrchr(clean, '/');
        if (!slash) {
                strcpy(parent, ".");
                snprintf(leaf, PATH_MAX, "%s", clean);
        } else {
                *slash = '\0';
                snprintf(parent, PATH_MAX, "%s", clean);
                snprintf(leaf, PATH_MAX, "%s", slash + 1);
        }
        return 0;
}

int rootfs_path_mkdirs(int rootfd, const char *path, uid_t uid, gid_t gid, bool chown_new)
{
        char clean[PATH_MAX];
        int r = rootfs_path_clean(path, true, clean, sizeof(clean));
        if (r < 0)
                return r;
        int fd = rootfs_path_open(rootfd, ".", O_DIRECTORY | O_RDONLY, 0);
        if (fd < 0 || strcmp(clean, ".") == 0)
                return fd;
        for (char *p = clean; *p;) {
                char *slash = strchr(p, '/');
                if (slash)
                        *slash = '\0';
                /* Each component is resolved in the root, so a link in the image stays inside. */
                int next = rootfs_path_open(rootfd, clean, O_DIRECTORY | O_RDONLY, 0);
                if (next == -ENOENT) {
                        if (mkdirat(fd, p, 0755) < 0 && errno != EEXIST) {
                                r = -errno;
                                close(fd);
                                return r;
                        }
                        if (chown_new && fchownat(fd, p, uid, gid, AT_SYMLINK_NOFOLLOW) < 0) {
                                r = -errno;
                                close(fd);
                                return r;
                        }
                        next = rootfs_path_open(rootfd, clean, O_DIRECTORY | O_RDONLY, 0);
                }
                close(fd);
                if (next < 0)
                        return next;
                fd = next;
                if (!slash)
                        break;
                *slash = '/';
                p = slash + 1;
        }
        return fd;
}

int rootfs_path_empty_dir(int dirfd)
{
        int dup = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
        if (dup < 0)
                return -errno;
        DIR *d = fdopendir(dup);
        if (!d) {
                close(dup);
                return -errno;
        }
        int r = 0;
        struct dirent *de;
        while (r == 0 && (de = readdir(d)))
                if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
                        r = rootfs_path_remove_at(dirfd, de->d_name);
        closedir(d);
        return r;
}

int rootfs_path_remove_at(int dirfd, const char *name)
{
        struct stat st;
        if (!*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || strchr(name, '/'))
                return -EINVAL; /* one entry of this directory, nothing else */
        if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (S_ISDIR(st.st_mode)) {
                _cleanup_close_ int sub = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sub < 0)
                        return -errno;
                int r = rootfs_path_empty_dir(sub);
                if (r < 0)
                        return r;
                return unlinkat(dirfd, name, AT_REMOVEDIR) < 0 ? -errno : 0;
        }
        return unlinkat(dirfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
}
