#include "spaced/state_dir.h"

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

#include "cleanup.h"

/* Files whose content is a secret or sandbox data (absent ones are skipped). */
static const char *const private_files[] = { "state.db",      "state.db-wal", "state.db-shm", "admin.key",
                                             "e2b-token.key", "instance",     "spaced.lock",  "pool.img" };
/* Directories secured with everything below them. */
static const char *const private_trees[] = { "logs", "command-logs" };
/* Directories secured themselves only (their content is the runtime's). */
static const char *const private_dirs[] = { "run" };

#define TREE_DEPTH_MAX 8

static bool owner_ok(const struct stat *st)
{
        return st->st_uid == 0 || st->st_uid == geteuid();
}

/* A directory that only its (trusted) owner can change, or sticky (entries stay their
 * owners'). */
static int check_ancestor(const char *path, char *reason, size_t size)
{
        struct stat st;
        if (stat(path, &st) < 0) {
                snprintf(reason, size, "cannot stat %s: %s", path, strerror(errno));
                return -errno;
        }
        if (!S_ISDIR(st.st_mode)) {
                snprintf(reason, size, "%s is not a directory", path);
                return -ENOTDIR;
        }
        if (!owner_ok(&st)) {
                snprintf(reason, size, "%s on the state directory's path belongs to uid %u: it could swap the path", path,
                         (unsigned)st.st_uid);
                return -EPERM;
        }
        if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX)) {
                snprintf(reason, size,
                         "%s on the state directory's path is writable by others (mode %04o): they could swap the path", path,
                         (unsigned)(st.st_mode & 07777));
                return -EPERM;
        }
        return 0;
}

/* Every directory above path (path itself excluded), from "/" down. */
static int check_ancestors(const char *path, char *reason, size_t size)
{
        char prefix[PATH_MAX];
        size_t n = strlen(path);
        if (n >= sizeof(prefix))
                return -ENAMETOOLONG;
        int r = check_ancestor("/", reason, size);
        for (size_t i = 1; r == 0 && i < n; i++)
                if (path[i] == '/') {
                        memcpy(prefix, path, i);
                        prefix[i] = '\0';
                        r = check_ancestor(prefix, reason, size);
                }
        return r;
}

/* Opens name in dirfd without following a symlink and makes it spaced's, mode. Absent: 0. */
static int secure_at(int dirfd, const char *name, bool want_dir, mode_t mode, int *ret_fd, char *reason, size_t size)
{
        int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | (want_dir ? O_DIRECTORY : 0));
        if (fd < 0) {
                if (errno == ENOENT)
                        return 0;
                snprintf(reason, size, "cannot secure %s in the state directory: %s%s", name, strerror(errno),
                         errno == ELOOP ? " (a symlink is refused)" : "");
                return -errno;
        }
        struct stat st;
        int r = 0;
        if (fstat(fd, &st) < 0)
                r = -errno;
        else if (!want_dir && !S_ISREG(st.st_mode))
                r = -EINVAL;
        else if ((st.st_uid != geteuid() || st.st_gid != getegid()) && fchown(fd, geteuid(), getegid()) < 0)
                r = -errno;
        else if ((st.st_mode & 07777) != mode && fchmod(fd, mode) < 0)
                r = -errno;
        if (r < 0) {
                snprintf(reason, size, "cannot secure %s in the state directory: %s", name, strerror(-r));
                close(fd);
                return r;
        }
        if (ret_fd)
                *ret_fd = fd;
        else
                close(fd);
        return 0;
}

/* dirfd's entries: directories 0700, regular files 0600; symlinks and others left alone
 * (only spaced can have made them, in a directory that is already private). */
static int secure_tree(int dirfd, int depth, char *reason, size_t size)
{
        int copy = dup(dirfd);
        DIR *d = copy >= 0 ? fdopendir(copy) : NULL;
        if (!d) {
                if (copy >= 0)
                        close(copy);
                return -errno;
        }
        int r = 0;
        for (struct dirent *e; r == 0 && (e = readdir(d));) {
                if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                        continue;
                struct stat st;
                if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                if (S_ISREG(st.st_mode)) {
                        r = secure_at(dirfd, e->d_name, false, 0600, NULL, reason, size);
                } else if (S_ISDIR(st.st_mode) && depth < TREE_DEPTH_MAX) {
                        int sub = -1;
                        r = secure_at(dirfd, e->d_name, true, 0700, &sub, reason, size);
                        if (r == 0 && sub >= 0) {
                                r = secure_tree(sub, depth + 1, reason, size);
                                close(sub);
                        }
                }
        }
        closedir(d);
        return r;
}

int state_dir_secure(const char *path, char *reason, size_t reason_size)
{
        char real[PATH_MAX], abs[PATH_MAX], cwd[PATH_MAX];
        int r;
        if (path[0] != '/') {
                if (!getcwd(cwd, sizeof(cwd)) || snprintf(abs, sizeof(abs), "%s/%s", cwd, path) >= (int)sizeof(abs)) {
                        snprintf(reason, reason_size, "cannot make the state directory %s absolute", path);
                        return -ENAMETOOLONG;
                }
                path = abs;
        }
        if (mkdir(path, 0700) < 0 && errno != EEXIST) {
                snprintf(reason, reason_size, "cannot create state directory %s: %s", path, strerror(errno));
                return -errno;
        }
        if (!realpath(path, real)) {
                snprintf(reason, reason_size, "cannot resolve state directory %s: %s", path, strerror(errno));
                return -errno;
        }
        /* As given (a symlink on the way lives in a checked directory) and as resolved. */
        if ((r = check_ancestors(path, reason, reason_size)) < 0 || (r = check_ancestors(real, reason, reason_size)) < 0)
                return r;
        _cleanup_close_ int dfd = open(real, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (dfd < 0 || fstat(dfd, &st) < 0) {
                snprintf(reason, reason_size, "cannot open state directory %s: %s", real, strerror(errno));
                return -errno;
        }
        if (st.st_uid != geteuid()) {
                snprintf(reason, reason_size, "state directory %s belongs to uid %u, not to spaced's uid %u: chown it", real,
                         (unsigned)st.st_uid, (unsigned)geteuid());
                return -EPERM;
        }
        if (st.st_mode & (S_IWGRP | S_IWOTH)) {
                snprintf(reason, reason_size,
                         "state directory %s is writable by others (mode %04o): check what is in it, then chmod 0700 it", real,
                         (unsigned)(st.st_mode & 07777));
                return -EPERM;
        }
        if ((st.st_mode & 07777) != 0700 && fchmod(dfd, 0700) < 0) {
                snprintf(reason, reason_size, "cannot chmod state directory %s: %s", real, strerror(errno));
                return -errno;
        }
        for (size_t i = 0; i < ARRAY_SIZE(private_trees) + ARRAY_SIZE(private_dirs); i++) {
                bool tree = i < ARRAY_SIZE(private_trees);
                const char *name = tree ? private_trees[i] : private_dirs[i - ARRAY_SIZE(private_trees)];
                if (mkdirat(dfd, name, 0700) < 0 && errno != EEXIST) {
                        snprintf(reason, reason_size, "cannot create %s/%s: %s", real, name, strerror(errno));
                        return -errno;
                }
                int sub = -1;
                if ((r = secure_at(dfd, name, true, 0700, &sub, reason, reason_size)) < 0)
                        return r;
                if (sub >= 0) {
                        r = tree ? secure_tree(sub, 1, reason, reason_size) : 0;
                        close(sub);
                        if (r < 0)
                                return r;
                }
        }
        /* SQLite gives the -wal and -shm files the database's mode: make it 0600 first. */
        int db = openat(dfd, "state.db", O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
        if (db < 0) {
                snprintf(reason, reason_size, "cannot create %s/state.db: %s%s", real, strerror(errno),
                         errno == ELOOP ? " (a symlink is refused)" : "");
                return -errno;
        }
        close(db);
        for (size_t i = 0; i < ARRAY_SIZE(private_files); i++)
                if ((r = secure_at(dfd, private_files[i], false, 0600, NULL, reason, reason_size)) < 0)
                        return r;
        return 0;
}
