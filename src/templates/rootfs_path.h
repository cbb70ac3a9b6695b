/* rootfs_path: paths inside a root filesystem being built, resolved as if it were `/`
 * (openat2 RESOLVE_IN_ROOT): symbolic links and `..` in an image can never lead outside it.
 * Low level: 0/fd or -errno. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

/* openat2(rootfd, path, flags, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS). */
int rootfs_path_open(int rootfd, const char *path, int flags, mode_t mode);
/* Makes every missing directory of path (mode 0755, owned by uid:gid when given (>= 0));
 * returns an O_DIRECTORY fd of the last one. */
int rootfs_path_mkdirs(int rootfd, const char *path, uid_t uid, gid_t gid, bool chown_new);
/* Removes name in dirfd and, for a directory, everything below it; never follows links.
 * 0 if it does not exist. */
int rootfs_path_remove_at(int dirfd, const char *name);
/* Removes everything inside the directory dirfd (not the directory). */
int rootfs_path_empty_dir(int dirfd);
/* Splits "a/b/c" into its parent ("a/b", or "." ) and last component ("c"), in buffers of
 * size PATH_MAX. -EINVAL for an empty path or one ending in "..". */
int rootfs_path_split(const char *path, char *parent, char *leaf);
/* Normalises a relative path inside an archive or a context: drops "./" and empty parts;
 * -EINVAL for "..", an absolute path (unless allow_absolute, which drops leading '/'). */
int rootfs_path_clean(const char *in, bool allow_absolute, char *out, size_t size);
