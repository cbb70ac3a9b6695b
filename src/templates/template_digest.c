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
#include "templates/template_catalog.h"

static int hash_file(EVP_MD_CTX *md, int dirfd, const char *name)
{
        _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        char buf[65536];
        ssize_t n;
        while ((n = read(fd, buf, sizeof(buf))) > 0)
                EVP_DigestUpdate(md, buf, (size_t)n);
        return n < 0 ? -errno : 0;
}

static int filter_dots(const struct dirent *de)
{
        return strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
}

static int hash_dir(EVP_MD_CTX *md, const char *path, const char *rel)
{
        struct dirent **list;
        int n = scandir(path, &list, filter_dots, alphasort);
        if (n < 0)
                return -errno;
        _cleanup_close_ int dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int r = dirfd < 0 ? -errno : 0;
        for (int i = 0; i < n; i++) {
                const char *name = list[i]->d_name;
                char child[PATH_MAX], childrel[PATH_MAX];
                struct stat st;
                snprintf(child, sizeof(child), "%s/%s", path, name);
                snprintf(childrel, sizeof(childrel), "%s/%s", rel, name);
                if (r == 0 && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        r = -errno;
                if (r == 0) {
                        char line[PATH_MAX + 128];
                        int len = snprintf(line, sizeof(line), "%s\n%o %u %u %lld\n", childrel, st.st_mode, st.st_uid, st.st_gid,
                                           S_ISREG(st.st_mode) ? (long long)st.st_size : 0LL);
                        EVP_DigestUpdate(md, line, (size_t)len);
                        if (S_ISLNK(st.st_mode)) {
                                char target[PATH_MAX];
                                ssize_t tl = readlinkat(dirfd, name, target, sizeof(target));
                                if (tl > 0)
                                        EVP_DigestUpdate(md, target, (size_t)tl);
                        } else if (S_ISREG(st.st_mode)) {
                                r = hash_file(md, dirfd, name);
                        } else if (S_ISDIR(st.st_mode)) {
                                r = hash_dir(md, child, childrel);
                        }
                }
                free(list[i]);
        }
        free(list);
        return r;
}

int template_digest(const char *root, char *buf, size_t size)
{
        EVP_MD_CTX *md = EVP_MD_CTX_new();
        if (!md)
                return -ENOMEM;
        unsigned char out[EVP_MAX_MD_SIZE];
        unsigned len = 0;
        int r = EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1 ? 0 : -EIO;
        if (r == 0)
                r = hash_dir(md, root, "");
        if (r == 0 && EVP_DigestFinal_ex(md, out, &len) != 1)
                r = -EIO;
        EVP_MD_CTX_free(md);
        if (r < 0)
                return r;
        int off = snprintf(buf, size, "sha256:");
        for (unsigned i = 0; i < len && (size_t)off + 2 < size; i++)
                off += snprintf(buf + off, size - (size_t)off, "%02x", out[i]);
        return 0;
}
