#include "templates/rootfs_archive.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "templates/rootfs_path.h"

static struct archive *open_reader(const char *path, struct space_error *err)
{
        struct archive *a = archive_read_new();
        if (!a) {
                space_error_set(err, SPACE_E_INTERNAL, "out of memory");
                return NULL;
        }
        archive_read_support_filter_all(a);
        archive_read_support_format_tar(a);
        archive_read_support_format_gnutar(a);
        if (archive_read_open_filename(a, path, 1 << 16) != ARCHIVE_OK) {
                space_error_set(err, SPACE_E_INVALID_REQUEST, "not a readable tar archive: %s", archive_error_string(a));
                archive_read_free(a);
                return NULL;
        }
        return a;
}

/* Pass 1 of a layer: the deletions its whiteouts ask for, on what lower layers left. */
static int apply_whiteout(int rootfd, const char *clean, struct space_error *err)
{
        char parent[PATH_MAX], leaf[PATH_MAX];
        if (rootfs_path_split(clean, parent, leaf) < 0)
                return 0;
        _cleanup_close_ int dir = rootfs_path_open(rootfd, parent, O_DIRECTORY | O_RDONLY, 0);
        if (dir < 0)
                return 0; /* nothing below to hide */
        const char *hidden = leaf + 4;
        bool opaque = strcmp(leaf, ".wh..wh..opq") == 0;
        if (!opaque && (!*hidden || strcmp(hidden, ".") == 0 || strcmp(hidden, "..") == 0 || strchr(hidden, '/')))
                return 0; /* ".wh." or ".wh..": names nothing below this directory */
        int r = opaque ? rootfs_path_empty_dir(dir) : rootfs_path_remove_at(dir, hidden);
        return r < 0 ? space_error_errno(err, r, "apply whiteout %s", clean) : 0;
}

static bool is_whiteout(const char *clean)
{
        const char *base = strrchr(clean, '/');
        base = base ? base + 1 : clean;
        return strncmp(base, ".wh.", 4) == 0;
}

static int whiteout_pass(const char *archive_path, int rootfd, struct rootfs_archive_stats *stats, struct space_error *err)
{
        struct archive *a = open_reader(archive_path, err);
        if (!a)
                return -1;
        struct archive_entry *e;
        int r = 0, rc;
        char clean[PATH_MAX];
        while (r == 0 && (rc = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
                const char *name = archive_entry_pathname(e);
                if (name && rootfs_path_clean(name, false, clean, sizeof(clean)) == 0 && is_whiteout(clean)) {
                        stats->whiteouts++;
                        r = apply_whiteout(rootfd, clean, err);
                }
        }
        if (r == 0 && rc != ARCHIVE_EOF)
                r = space_error_set(err, SPACE_E_INVALID_REQUEST, "corrupt archive: %s", archive_error_string(a));
        archive_read_free(a);
        return r;
}

static int check_entry(struct archive_entry *e, const char *root, const struct rootfs_archive_options *o, char *target,
                       size_t size, struct space_error *err)
{
        const char *name = archive_entry_pathname(e);
        char clean[PATH_MAX];
        if (!name || rootfs_path_clean(name, false, clean, sizeof(clean)) < 0)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "archive entry \"%.200s\" is absolute or climbs out with ..",
                                       name ? name : "");
        if (snprintf(target, size, "%s/%s", root, clean) >= (int)size)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "archive entry path too long");
        archive_entry_set_pathname(e, target);
        const char *link = archive_entry_hardlink(e);
        if (link) {
                char lclean[PATH_MAX], ltarget[PATH_MAX + 256];
                if (rootfs_path_clean(link, false, lclean, sizeof(lclean)) < 0)
                        return space_error_set(err, SPACE_E_INVALID_REQUEST, "hard link \"%.200s\" points outside the archive",
                                               link);
                snprintf(ltarget, sizeof(ltarget), "%s/%s", root, lclean);
                archive_entry_set_hardlink(e, ltarget);
        }
        if (!o->keep_owner) {
                archive_entry_set_uid(e, 0);
                archive_entry_set_gid(e, 0);
        }
        archive_entry_set_uname(e, NULL);
        archive_entry_set_gname(e, NULL);
        return 0;
}

int rootfs_archive_extract(const char *archive_path, const char *root_in, const struct rootfs_archive_options *o,
                           struct rootfs_archive_stats *stats, struct space_error *err)
{
        char root[PATH_MAX], target[PATH_MAX];
        struct rootfs_archive_stats local = { 0 };
        if (!stats)
                stats = &local;
        if (!realpath(root_in, root))
                return space_error_errno(err, -errno, "resolve %s", root_in);
        _cleanup_close_ int rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (rootfd < 0)
                return space_error_errno(err, -errno, "open %s", root);
        if (o->whiteouts && whiteout_pass(archive_path, rootfd, stats, err) < 0)
                return -1;
        struct archive *a = open_reader(archive_path, err);
        if (!a)
                return -1;
        struct archive *w = archive_write_disk_new();
        archive_write_disk_set_options(w,
                                       ARCHIVE_EXTRACT_OWNER | ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_TIME |
                                               ARCHIVE_EXTRACT_XATTR | ARCHIVE_EXTRACT_UNLINK | ARCHIVE_EXTRACT_SECURE_SYMLINKS |
                                               ARCHIVE_EXTRACT_SECURE_NODOTDOT);
        /* No name lookup: owners are the archive's numbers, never the host's idea of a name. */
        struct archive_entry *e;
        int r = 0, rc;
        while (r == 0 && (rc = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
                const char *name = archive_entry_pathname(e);
                char clean[PATH_MAX];
                if (o->whiteouts && name && rootfs_path_clean(name, false, clean, sizeof(clean)) == 0 && is_whiteout(clean))
                        continue;
                mode_t type = archive_entry_filetype(e);
                bool hardlink = archive_entry_hardlink(e) != NULL;
                if (!hardlink && type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK) {
                        stats->skipped++; /* devices, FIFOs, sockets: the sandbox's /dev is made at start */
                        continue;
                }
                if (check_entry(e, root, o, target, sizeof(target), err) < 0) {
                        r = -1;
                        break;
                }
                if (type == AE_IFREG) {
                        stats->bytes += (uint64_t)archive_entry_size(e);
                        if (o->max_bytes && stats->bytes > o->max_bytes) {
                                r = space_error_set(err, SPACE_E_PAYLOAD_TOO_LARGE, "the archive unpacks to more than %llu bytes",
                                                    (unsigned long long)o->max_bytes);
                                break;
                        }
                }
                stats->entries++;
                rc = archive_write_header(w, e);
                if (rc == ARCHIVE_OK && archive_entry_size(e) > 0) {
                        const void *buf;
                        size_t len;
                        la_int64_t off;
                        uint64_t seen = 0;
                        while ((rc = archive_read_data_block(a, &buf, &len, &off)) == ARCHIVE_OK) {
                                seen += len;
                                if (archive_write_data_block(w, buf, len, off) != ARCHIVE_OK) {
                                        rc = ARCHIVE_FATAL;
                                        break;
                                }
                        }
                        if (rc == ARCHIVE_EOF)
                                rc = ARCHIVE_OK;
                        (void)seen;
                }
                if (rc == ARCHIVE_OK)
                        rc = archive_write_finish_entry(w);
                if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) {
                        r = space_error_set(err, SPACE_E_INVALID_REQUEST, "cannot unpack \"%.200s\": %s",
                                            target + strlen(root) + 1,
                                            archive_error_string(w) ? archive_error_string(w) : archive_error_string(a));
                        break;
                }
        }
        if (r == 0 && rc != ARCHIVE_EOF)
                r = space_error_set(err, SPACE_E_INVALID_REQUEST, "corrupt archive: %s", archive_error_string(a));
        archive_write_free(w);
        archive_read_free(a);
        return r;
}
