#include "runtime/namespaces/ns_trust_store.h"

#include "runtime/platform_ca.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"

/* A bundle bigger than this is not read (the sandbox wrote it): left as it is. */
#define BUNDLE_MAX (16 << 20)
#define TMP_NAME ".space-ca.tmp"

static int open_in_root(int root, const char *path, int flags)
{
        struct open_how how = { .flags = (uint64_t)(flags | O_CLOEXEC), .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
        int fd = (int)syscall(SYS_openat2, root, path, &how, sizeof(how));
        return fd < 0 ? -errno : fd;
}

/* The directory path (relative to root) inside root, made (0755) where missing. */
static int open_dir(int root, const char *path)
{
        int fd = open_in_root(root, path, O_PATH | O_DIRECTORY);
        if (fd != -ENOENT)
                return fd;
        const char *slash = strrchr(path, '/');
        char parent[256];
        if (!slash || (size_t)(slash - path) >= sizeof(parent))
                return -ENOENT;
        memcpy(parent, path, (size_t)(slash - path));
        parent[slash - path] = '\0';
        _cleanup_close_ int up = open_dir(root, parent);
        if (up < 0)
                return up;
        if (mkdirat(up, slash + 1, 0755) < 0 && errno != EEXIST)
                return -errno;
        /* owned as its parent is (the sandbox's root, through its uid map), so the sandbox's
         * own tools can add to it */
        struct stat st;
        if (fstat(up, &st) == 0)
                (void)fchownat(up, slash + 1, st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW);
        return open_in_root(root, path, O_PATH | O_DIRECTORY);
}

/* The regular file path of root, whole (NUL-terminated, *ret NULL when there is none). */
static int read_file(int root, const char *path, char **ret, size_t *ret_len)
{
        *ret = NULL;
        *ret_len = 0;
        _cleanup_close_ int fd = open_in_root(root, path, O_RDONLY | O_NONBLOCK | O_NOCTTY);
        if (fd == -ENOENT)
                return 0;
        if (fd < 0)
                return fd;
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode) || st.st_size > BUNDLE_MAX)
                return -EINVAL;
        char *buf = malloc((size_t)st.st_size + 1);
        if (!buf)
                return -ENOMEM;
        size_t len = 0;
        for (;;) {
                ssize_t n = read(fd, buf + len, (size_t)st.st_size - len);
                if (n < 0) {
                        free(buf);
                        return -errno;
                }
                if (n == 0 || (len += (size_t)n) == (size_t)st.st_size)
                        break;
        }
        buf[len] = '\0';
        *ret = buf;
        *ret_len = len;
        return 0;
}

/* dir/name := head, then tail (when not NULL), written beside and renamed in. */
static int replace(int dir, const char *name, const char *head, size_t head_len, const char *tail)
{
        unlinkat(dir, TMP_NAME, 0);
        _cleanup_close_ int fd = openat(dir, TMP_NAME, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        struct stat st; /* owned as its directory is, like the file it replaces */
        if (fstat(dir, &st) == 0)
                (void)fchown(fd, st.st_uid, st.st_gid);
        size_t tail_len = tail ? strlen(tail) : 0;
        bool newline = head_len && head[head_len - 1] != '\n';
        int r = 0;
        if ((head_len && write(fd, head, head_len) != (ssize_t)head_len) || (newline && write(fd, "\n", 1) != 1) ||
            (tail_len && write(fd, tail, tail_len) != (ssize_t)tail_len) || fsync(fd) < 0)
                r = errno ? -errno : -EIO;
        if (r == 0 && renameat(dir, TMP_NAME, dir, name) < 0)
                r = -errno;
        if (r < 0)
                unlinkat(dir, TMP_NAME, 0);
        return r;
}

int ns_trust_store_add(const char *rootfs, const char *ca_pem)
{
        if (!ca_pem || !ca_pem[0])
                return 0;
        _cleanup_close_ int root = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root < 0)
                return -errno;
        _cleanup_free_ char *debian = NULL, *alpine = NULL;
        size_t debian_len = 0, alpine_len = 0;
        int r = read_file(root, PLATFORM_CA_SANDBOX_BUNDLE + 1, &debian, &debian_len);
        if (r == 0)
                r = read_file(root, "etc/ssl/cert.pem", &alpine, &alpine_len);
        if (r < 0)
                return r;
        /* Alpine's cert.pem (where it is a link to the Debian path, it becomes a file of its own) */
        if (alpine && !strstr(alpine, ca_pem)) {
                _cleanup_close_ int ssl = open_dir(root, "etc/ssl");
                if (ssl < 0 || (r = replace(ssl, "cert.pem", alpine, alpine_len, ca_pem)) < 0)
                        return ssl < 0 ? ssl : r;
        }
        /* Debian's bundle: its own text, else Alpine's, else nothing, and the CA */
        if (!debian || !strstr(debian, ca_pem)) {
                _cleanup_close_ int certs = open_dir(root, "etc/ssl/certs");
                const char *base = debian ? debian : alpine ? alpine : "";
                size_t base_len = debian ? debian_len : alpine ? alpine_len : 0;
                if (certs < 0 ||
                    (r = replace(certs, "ca-certificates.crt", base, base_len, strstr(base, ca_pem) ? NULL : ca_pem)) < 0)
                        return certs < 0 ? certs : r;
        }
        _cleanup_free_ char *alone = NULL;
        size_t alone_len = 0;
        if ((r = read_file(root, PLATFORM_CA_SANDBOX_CA + 1, &alone, &alone_len)) < 0 && r != -EINVAL)
                return r;
        if (alone && strcmp(alone, ca_pem) == 0)
                return 0;
        _cleanup_close_ int dir = open_dir(root, "etc/ssl/certs");
        if (dir < 0)
                return dir;
        return replace(dir, "space-platform-ca.pem", ca_pem, strlen(ca_pem), NULL);
}
