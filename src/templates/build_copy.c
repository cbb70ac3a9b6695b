#include "templates/build_copy.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "templates/rootfs_path.h"

struct copy_opts {
        uid_t uid;
        gid_t gid;
        bool has_chmod;
        mode_t chmod;
};

static int source_parent(int ctxfd, const char *src, int *ret_parent, char *leaf, struct space_error *err)
{
        char clean[PATH_MAX], parent[PATH_MAX];
        if (rootfs_path_clean(src, true, clean, sizeof(clean)) < 0)
                return space_error_set(err, SPACE_E_BUILD_FAILED, "COPY source %.200s is outside the build context", src);
        if (strcmp(clean, ".") == 0) {
                *ret_parent = -1; /* the context itself */
                return 0;
        }
        rootfs_path_split(clean, parent, leaf);
        int fd = rootfs_path_open(ctxfd, parent, O_DIRECTORY | O_RDONLY, 0);
        struct stat st;
        if (fd < 0 || fstatat(fd, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                if (fd >= 0)
                        close(fd);
                return space_error_set(err, SPACE_E_BUILD_FAILED, "COPY source %.200s is not in the build context", src);
        }
        *ret_parent = fd;
        return 0;
}

static int filter_dots(const struct dirent *de)
{
        return strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
}

static int hash_entry(EVP_MD_CTX *md, int dirfd, const char *name, const char *rel)
{
        struct stat st;
        if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        char line[PATH_MAX + 64];
        int n = snprintf(line, sizeof(line), "%s%c%o %lld%c", rel, 0, st.st_mode,
                         S_ISREG(st.st_mode) ? (long long)st.st_size : 0LL, 0);
        EVP_DigestUpdate(md, line, (size_t)n);
        if (S_ISLNK(st.st_mode)) {
                char target[PATH_MAX];
                ssize_t tl = readlinkat(dirfd, name, target, sizeof(target));
                if (tl > 0)
                        EVP_DigestUpdate(md, target, (size_t)tl);
        } else if (S_ISREG(st.st_mode)) {
                _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0)
                        return -errno;
                char buf[65536];
                ssize_t got;
                while ((got = read(fd, buf, sizeof(buf))) > 0)
                        EVP_DigestUpdate(md, buf, (size_t)got);
                if (got < 0)
                        return -errno;
        } else if (S_ISDIR(st.st_mode)) {
                _cleanup_close_ int sub = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sub < 0)
                        return -errno;
                struct dirent **list;
                int cnt = scandirat(sub, ".", &list, filter_dots, alphasort);
                if (cnt < 0)
                        return -errno;
                int r = 0;
                for (int i = 0; i < cnt; i++) {
                        char child[PATH_MAX];
                        snprintf(child, sizeof(child), "%s/%s", rel, list[i]->d_name);
                        if (r == 0)
                                r = hash_entry(md, sub, list[i]->d_name, child);
                        free(list[i]);
                }
                free(list);
                return r;
        }
        return 0;
}

int build_copy_digest(int ctxfd, const struct spacefile_step *st, char *hex, size_t size, struct space_error *err)
{
        EVP_MD_CTX *md = EVP_MD_CTX_new();
        if (!md || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
                EVP_MD_CTX_free(md);
                return space_error_set(err, SPACE_E_INTERNAL, "sha256 unavailable");
        }
        int r = 0;
        for (size_t i = 0; r == 0 && i + 1 < st->argc; i++) {
                char leaf[PATH_MAX] = ".";
                int parent = -1;
                if (source_parent(ctxfd, st->argv[i], &parent, leaf, err) < 0) {
                        r = -1;
                        break;
                }
                EVP_DigestUpdate(md, st->argv[i], strlen(st->argv[i]) + 1);
                int q = hash_entry(md, parent >= 0 ? parent : ctxfd, leaf, "");
                if (parent >= 0)
                        close(parent);
                if (q < 0)
                        r = space_error_errno(err, q, "read COPY source %.200s", st->argv[i]);
        }
        unsigned char out[EVP_MAX_MD_SIZE];
        unsigned len = 0;
        if (r == 0 && EVP_DigestFinal_ex(md, out, &len) != 1)
                r = space_error_set(err, SPACE_E_INTERNAL, "sha256 failed");
        EVP_MD_CTX_free(md);
        for (unsigned i = 0; r == 0 && i < len && 2 * i + 2 < size; i++)
                snprintf(hex + 2 * i, 3, "%02x", out[i]);
        return r;
}

static int copy_data(int in, int out)
{
        for (;;) {
                ssize_t n = copy_file_range(in, NULL, out, NULL, 1 << 30, 0);
                if (n == 0)
                        return 0;
                if (n > 0)
                        continue;
                if (errno != EXDEV && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
                        return -errno;
                break;
        }
        char buf[65536];
        ssize_t n;
        while ((n = read(in, buf, sizeof(buf))) > 0)
                if (write(out, buf, (size_t)n) != n)
                        return -EIO;
        return n < 0 ? -errno : 0;
}

static int copy_children(int srcdir, int dstdir, const struct copy_opts *o);

/* Makes dstname in dstdir a copy of srcname in srcdir (replacing a file or link there). */
static int copy_entry(int srcdir, const char *srcname, int dstdir, const char *dstname, const struct copy_opts *o)
{
        struct stat st, cur;
        if (fstatat(srcdir, srcname, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        mode_t mode = o->has_chmod ? o->chmod : (st.st_mode & 07777);
        bool exists = fstatat(dstdir, dstname, &cur, AT_SYMLINK_NOFOLLOW) == 0;
        if (exists && !(S_ISDIR(st.st_mode) && S_ISDIR(cur.st_mode)) && rootfs_path_remove_at(dstdir, dstname) < 0)
                return -errno;
        if (S_ISREG(st.st_mode)) {
                _cleanup_close_ int in = openat(srcdir, srcname, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                _cleanup_close_ int out = openat(dstdir, dstname, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
                if (in < 0 || out < 0)
                        return -errno;
                int r = copy_data(in, out);
                if (r == 0 && (fchown(out, o->uid, o->gid) < 0 || fchmod(out, mode) < 0))
                        r = -errno;
                return r;
        }
        if (S_ISLNK(st.st_mode)) {
                char target[PATH_MAX];
                ssize_t n = readlinkat(srcdir, srcname, target, sizeof(target) - 1);
                if (n < 0)
                        return -errno;
                target[n] = '\0';
                if (symlinkat(target, dstdir, dstname) < 0 || fchownat(dstdir, dstname, o->uid, o->gid, AT_SYMLINK_NOFOLLOW) < 0)
                        return -errno;
                return 0;
        }
        if (S_ISDIR(st.st_mode)) {
                if (!(exists && S_ISDIR(cur.st_mode)) && mkdirat(dstdir, dstname, 0700) < 0)
                        return -errno;
                _cleanup_close_ int in = openat(srcdir, srcname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                _cleanup_close_ int out = openat(dstdir, dstname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (in < 0 || out < 0)
                        return -errno;
                if (fchown(out, o->uid, o->gid) < 0 || fchmod(out, mode) < 0)
                        return -errno;
                return copy_children(in, out, o);
        }
        return 0; /* devices, FIFOs, sockets are not copied */
}

static int copy_children(int srcdir, int dstdir, const struct copy_opts *o)
{
        struct dirent **list;
        int cnt = scandirat(srcdir, ".", &list, filter_dots, alphasort);
        if (cnt < 0)
                return -errno;
        int r = 0;
        for (int i = 0; i < cnt; i++) {
                if (r == 0)
                        r = copy_entry(srcdir, list[i]->d_name, dstdir, list[i]->d_name, o);
                free(list[i]);
        }
        free(list);
        return r;
}

static int lookup_id(int rootfd, const char *file, const char *name, long *ret_id, long *ret_gid)
{
        _cleanup_close_ int fd = rootfs_path_open(rootfd, file, O_RDONLY, 0);
        FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
        if (!f)
                return -ENOENT;
        fd = -1;
        char line[1024];
        int r = -ENOENT;
        while (r < 0 && fgets(line, sizeof(line), f)) {
                char *save = NULL, *user = strtok_r(line, ":", &save);
                strtok_r(NULL, ":", &save); /* password */
                char *id = strtok_r(NULL, ":", &save), *gid = strtok_r(NULL, ":", &save);
                if (user && id && strcmp(user, name) == 0) {
                        *ret_id = strtol(id, NULL, 10);
                        if (ret_gid)
                                *ret_gid = gid ? strtol(gid, NULL, 10) : *ret_id;
                        r = 0;
                }
        }
        fclose(f);
        return r;
}

static bool numeric(const char *s, long *ret)
{
        char *end;
        if (!*s)
                return false;
        long v = strtol(s, &end, 10);
        if (*end || v < 0 || v > 0x7fffffff)
                return false;
        *ret = v;
        return true;
}

int build_copy_owner(int rootfd, const char *spec, uid_t *ret_uid, gid_t *ret_gid, struct space_error *err)
{
        char user[256], *group;
        snprintf(user, sizeof(user), "%s", spec);
        group = strchr(user, ':');
        if (group)
                *group++ = '\0';
        long uid, gid = -1;
        if (!numeric(user, &uid) && lookup_id(rootfd, "etc/passwd", user, &uid, &gid) < 0)
                return space_error_set(err, SPACE_E_BUILD_FAILED, "COPY --chown: no user %.64s in the image's /etc/passwd", user);
        if (gid < 0)
                gid = uid;
        if (group && !numeric(group, &gid) && lookup_id(rootfd, "etc/group", group, &gid, NULL) < 0)
                return space_error_set(err, SPACE_E_BUILD_FAILED, "COPY --chown: no group %.64s in the image's /etc/group",
                                       group);
        *ret_uid = (uid_t)uid;
        *ret_gid = (gid_t)gid;
        return 0;
}

int build_copy_apply(int ctxfd, int rootfd, const struct spacefile_step *st, const char *workdir, struct space_error *err)
{
        struct copy_opts o = { .has_chmod = st->has_chmod, .chmod = st->chmod };
        if (st->chown && build_copy_owner(rootfd, st->chown, &o.uid, &o.gid, err) < 0)
                return -1;
        const char *dst = st->argv[st->argc - 1];
        char abs[PATH_MAX];
        if (snprintf(abs, sizeof(abs), "%s/%s", dst[0] == '/' ? "" : workdir, dst) >= (int)sizeof(abs))
                return space_error_set(err, SPACE_E_BUILD_FAILED, "COPY destination too long");
        bool into_dir = dst[strlen(dst) - 1] == '/' || st->argc > 2;
        if (!into_dir) {
                _cleanup_close_ int probe = rootfs_path_open(rootfd, abs, O_RDONLY | O_DIRECTORY, 0);
                into_dir = probe >= 0;
        }
        for (size_t i = 0; i + 1 < st->argc; i++) {
                char leaf[PATH_MAX] = ".", dparent[PATH_MAX], dleaf[PATH_MAX];
                int sparent = -1, r;
                if (source_parent(ctxfd, st->argv[i], &sparent, leaf, err) < 0)
                        return -1;
                int srcdir = sparent >= 0 ? sparent : ctxfd;
                struct stat sst;
                fstatat(srcdir, leaf, &sst, AT_SYMLINK_NOFOLLOW);
                if (S_ISDIR(sst.st_mode)) {
                        /* A directory's contents go into the destination. */
                        int d = rootfs_path_mkdirs(rootfd, abs, o.uid, o.gid, st->chown != NULL);
                        _cleanup_close_ int sub =
                                d < 0 ? -1 : openat(srcdir, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        r = d < 0 ? d : sub < 0 ? -errno : copy_children(sub, d, &o);
                        if (d >= 0)
                                close(d);
                } else {
                        const char *name = leaf;
                        int d;
                        if (into_dir) {
                                d = rootfs_path_mkdirs(rootfd, abs, o.uid, o.gid, st->chown != NULL);
                        } else if (rootfs_path_split(abs, dparent, dleaf) < 0) {
                                d = -EINVAL;
                        } else {
                                d = rootfs_path_mkdirs(rootfd, dparent, o.uid, o.gid, st->chown != NULL);
                                name = dleaf;
                        }
                        r = d < 0 ? d : copy_entry(srcdir, leaf, d, name, &o);
                        if (d >= 0)
                                close(d);
                }
                if (sparent >= 0)
                        close(sparent);
                if (r < 0)
                        return space_error_set(err, SPACE_E_BUILD_FAILED, "COPY %.200s to %.200s: %s", st->argv[i], dst,
                                               strerror(-r));
        }
        return 0;
}
