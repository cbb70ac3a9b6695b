#include "spaced/dir_tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int dir_tree_create(const char *path, mode_t mode)
{
        char buf[PATH_MAX];
        if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
                return -ENAMETOOLONG;
        for (char *p = buf + 1; *p; p++) {
                if (*p != '/')
                        continue;
                *p = '\0';
                if (mkdir(buf, mode) < 0 && errno != EEXIST)
                        return -errno;
                *p = '/';
        }
        if (mkdir(buf, mode) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

/* Empties the directory open as dfd (taken), depth-first. */
static int remove_contents(int dfd, int depth)
{
        DIR *d = fdopendir(dfd);
        if (!d) {
                int r = -errno;
                close(dfd);
                return r;
        }
        int r = 0;
        for (struct dirent *e; (e = readdir(d));) {
                if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                        continue;
                if (unlinkat(dirfd(d), e->d_name, 0) == 0 || errno == ENOENT)
                        continue;
                if (errno != EISDIR && errno != EPERM) {
                        r = -errno;
                        continue;
                }
                int sub = depth < 64 ? openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
                if (sub < 0) {
                        r = depth < 64 ? -errno : -ELOOP;
                        continue;
                }
                int q = remove_contents(sub, depth + 1);
                if (q < 0)
                        r = q;
                else if (unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR) < 0 && errno != ENOENT)
                        r = -errno;
        }
        closedir(d);
        return r;
}

int dir_tree_remove(const char *path)
{
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : unlink(path) == 0 ? 0 : -errno;
        int r = remove_contents(fd, 0);
        if (r < 0)
                return r;
        return rmdir(path) < 0 && errno != ENOENT ? -errno : 0;
}
