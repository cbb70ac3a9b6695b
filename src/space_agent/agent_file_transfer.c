/* agent_file_transfer: FILE_READ + FILE_FETCH, FILE_CREATE + FILE_DATA + FILE_COMMIT. */
#include "space_agent/agent_file_transfer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "agent_protocol/agent_file_data.h"
#include "space_agent/agent_cleanup.h"
#include "space_agent/agent_conn.h"
#include "space_agent/agent_file_meta.h"
#include "space_agent/agent_file_path.h"
#include "space_agent/agent_file_user.h"

struct agent_file_upload {
        int dir;           /* where the file waits (O_PATH): the target's directory, or with
                             * parents its deepest existing ancestor (same filesystem) */
        bool parents;      /* make the missing directories at commit, then link there */
        int fd;            /* the file being filled */
        char name[256];    /* the target's name in dir */
        char tmp_name[64]; /* the hidden name when O_TMPFILE was not available, else "" */
        char path[PATH_MAX];
        mode_t mode;
        bool chown;
        uid_t chown_uid;
        gid_t chown_gid;
        bool as_user;
        uid_t fsuid;
        gid_t fsgid;
        bool memory;      /* on tmpfs/ramfs: nothing to sync */
        uint64_t written; /* the next FILE_DATA's offset */
        int error;        /* -errno of the first failed FILE_DATA: the rest is dropped */
        const char *what; /* what failed: "write", or "upload" for a bad frame */
        bool excl;        /* FILE_EXCL: never replace what is at the name */
        bool with_meta;   /* FILE_WITH_META: the commit's entry carries the metadata */
        uint8_t *meta;    /* FILE_META pairs to set at commit, or NULL */
        uint32_t meta_len;
};

struct agent_file_download {
        int fd;            /* the file FILE_READ opened */
        uint64_t at, left; /* what FILE_FETCH asked for and is not sent yet */
        char path[PATH_MAX];
};

#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif
#ifndef RAMFS_MAGIC
#define RAMFS_MAGIC 0x858458f6
#endif

void agent_file_download_free(struct agent_file_download *d)
{
        if (!d)
                return;
        if (d->fd >= 0)
                close(d->fd);
        free(d);
}

void agent_file_upload_free(struct agent_file_upload *u)
{
        if (!u)
                return;
        if (u->tmp_name[0])
                (void)unlinkat(u->dir, u->tmp_name, 0);
        if (u->fd >= 0)
                close(u->fd);
        if (u->dir >= 0)
                close(u->dir);
        free(u->meta);
        free(u);
}

static int not_regular(mode_t m)
{
        return S_ISDIR(m) ? -EISDIR : -EINVAL;
}

/* A file that stats as empty may not be (procfs, sysfs: their sizes are known only once
 * read): its bytes are read to the end, at most SPOOL_MAX of them, into an anonymous file
 * (the sandbox's memory, charged to it) that is served in its place, with *size set. An
 * empty file costs one read that returns 0. The new fd, or -errno. */
#define SPOOL_MAX (64u << 20)
static int download_spool(int fd, off_t *size)
{
        _cleanup_close_ int mem = memfd_create("space-download", MFD_CLOEXEC);
        if (mem < 0)
                return -errno;
        char buf[AGENT_FILE_CHUNK];
        off_t total = 0;
        for (;;) {
                ssize_t n = read(fd, buf, sizeof buf);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        break;
                if ((uint64_t)total + (uint64_t)n > SPOOL_MAX)
                        return -EFBIG;
                for (ssize_t put = 0; put < n;) {
                        ssize_t k = write(mem, buf + put, (size_t)(n - put));
                        if (k < 0 && errno == EINTR)
                                continue;
                        if (k < 0)
                                return -errno;
                        put += k;
                }
                total += n;
        }
        *size = total;
        return TAKE_FD(mem);
}

int agent_file_transfer_read(struct agent_conn *c, struct agent_file_request *req)
{
        struct agent_frame_writer w;
        struct stat st;

        /* Look before opening: opening a device or a FIFO can have effects or block. */
        _cleanup_close_ int probe = agent_file_open(req->path, O_PATH, 0, true);
        if (probe < 0)
                return probe;
        if (fstat(probe, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return not_regular(st.st_mode);
        _cleanup_close_ int fd = agent_file_open(req->path, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0, true);
        if (fd < 0)
                return fd;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return not_regular(st.st_mode); /* swapped meanwhile */
        int flags = fcntl(fd, F_GETFL);
        if (flags >= 0)
                (void)fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
        if (st.st_size == 0) {
                int mem = download_spool(fd, &st.st_size);
                if (mem < 0)
                        return mem;
                close(fd);
                fd = mem;
        }
        struct agent_file_download *d = calloc(1, sizeof *d);
        if (!d)
                return -ENOMEM;
        d->fd = TAKE_FD(fd);
        snprintf(d->path, sizeof d->path, "%s", req->path);
        agent_file_download_free(c->download);
        c->download = d;
        agent_frame_writer_begin(&w, AGENT_MSG_FILE_ENTRY);
        agent_files_put_entry(&w, &req->names, req->path, &st, -1, NULL, false);
        agent_conn_reply(c, &w);
        return 0;
}

void agent_file_transfer_fetch(struct agent_conn *c, const struct agent_frame *f)
{
        uint64_t offset = 0, length = 0;

        if (agent_frame_get_u64(f, AGENT_F_FILE_OFFSET, &offset) != 1 ||
            agent_frame_get_u64(f, AGENT_F_FILE_LENGTH, &length) != 1 || offset > INT64_MAX ||
            length > (uint64_t)INT64_MAX - offset) {
                agent_conn_reply_error(c, EINVAL, "FILE_FETCH needs FILE_OFFSET and FILE_LENGTH (u64)");
                return;
        }
        if (!c->download) {
                agent_conn_reply_error(c, EINVAL, "no file to fetch from on this connection (FILE_READ first)");
                return;
        }
        c->download->at = offset;
        c->download->left = length;
        struct agent_frame_writer w = {};
        if (agent_file_download_next(c, &w))
                agent_conn_reply(c, &w);
}

bool agent_file_download_next(struct agent_conn *c, struct agent_frame_writer *w)
{
        struct agent_file_download *d = c->download;
        char msg[PATH_MAX + 128];
        int error = 0;

        if (!d || d->left == 0)
                return false;
        uint32_t n = d->left > AGENT_FILE_CHUNK ? AGENT_FILE_CHUNK : (uint32_t)d->left;
        agent_frame_writer_restart(w, AGENT_MSG_FILE_DATA);
        agent_frame_writer_put_u64(w, AGENT_F_FILE_OFFSET, d->at);
        uint8_t *p = agent_frame_writer_put_space(w, AGENT_F_DATA, n);
        for (uint32_t got = 0; p && got < n;) {
                ssize_t k = pread(d->fd, p + got, n - got, (off_t)(d->at + got));
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0) {
                        error = k < 0 ? errno : EIO;
                        snprintf(msg, sizeof msg, "read %s: %s", d->path,
                                 k < 0 ? strerror(errno) : "the file ended before the range asked for (it shrank)");
                        break;
                }
                got += (uint32_t)k;
        }
        if (error) {
                agent_frame_writer_release(w);
                agent_conn_error_frame(w, error, msg);
                d->left = 0;
                return true;
        }
        d->at += n;
        d->left -= n;
        return true; /* a failed writer: agent_conn_reply answers ERROR */
}

/* The deepest existing directory above path's parent (which does not exist). */
static int upload_ancestor_open(const char *path)
{
        char anc[PATH_MAX];

        snprintf(anc, sizeof anc, "%s", path);
        for (;;) {
                char *slash = strrchr(anc, '/');
                if (!slash)
                        return -ENOENT;
                if (slash == anc) {
                        anc[1] = 0; /* the root */
                        return agent_file_open(anc, O_PATH | O_DIRECTORY, 0, true);
                }
                *slash = 0;
                int fd = agent_file_open(anc, O_PATH | O_DIRECTORY, 0, true);
                if (fd != -ENOENT)
                        return fd; /* found, or a real failure (ENOTDIR: a file on the way) */
        }
}

#define UPLOAD_TEMP_PREFIX ".space-upload-"
static void random_name(char *buf, size_t size)
{
        uint8_t raw[8] = { 0 };
        char hex[17];

        if (getrandom(raw, sizeof raw, GRND_NONBLOCK) != (ssize_t)sizeof raw) {
                uint64_t t = (uint64_t)getpid() ^ (uint64_t)(uintptr_t)buf;
                memcpy(raw, &t, sizeof raw);
        }
        for (size_t i = 0; i < sizeof raw; i++)
                snprintf(hex + 2 * i, 3, "%02x", raw[i]);
        snprintf(buf, size, UPLOAD_TEMP_PREFIX "%s", hex);
}

bool agent_file_upload_temp_name(const char *name)
{
        size_t n = strlen(UPLOAD_TEMP_PREFIX);
        return strncmp(name, UPLOAD_TEMP_PREFIX, n) == 0 && strlen(name + n) == 16 && strspn(name + n, "0123456789abcdef") == 16;
}

int agent_file_transfer_create(struct agent_conn *c, struct agent_file_request *req)
{
        struct agent_frame_writer w;
        struct stat st;
        const char *name;
        int r;

        if (c->upload)
                return -EBUSY;
        struct agent_file_upload *u = calloc(1, sizeof *u);
        if (!u)
                return -ENOMEM;
        u->fd = -1;
        u->dir = agent_file_open_parent(req->path, &name);
        if (u->dir == -ENOENT && req->parents) {
                /* Missing directories are made at commit, so a failed upload makes none:
                 * meanwhile the file waits in the deepest directory that exists. */
                r = upload_ancestor_open(req->path);
                if (r < 0) {
                        u->dir = -1;
                        agent_file_upload_free(u);
                        return r;
                }
                u->dir = r;
                u->parents = true;
                name = strrchr(req->path, '/') + 1;
        }
        if (u->dir < 0) {
                r = u->dir == -EINVAL ? -EISDIR : u->dir; /* "/" */
                u->dir = -1;
                agent_file_upload_free(u);
                return r;
        }
        if (strlen(name) >= sizeof u->name) {
                agent_file_upload_free(u);
                return -ENAMETOOLONG;
        }
        snprintf(u->name, sizeof u->name, "%s", name);
        snprintf(u->path, sizeof u->path, "%s", req->path);
        if (!u->parents && fstatat(u->dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
                agent_file_upload_free(u);
                return -EISDIR;
        }
        u->fd = openat(u->dir, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (u->fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
                random_name(u->tmp_name, sizeof u->tmp_name);
                u->fd = openat(u->dir, u->tmp_name, O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0600);
                if (u->fd < 0)
                        u->tmp_name[0] = 0;
        }
        if (u->fd < 0) {
                r = -errno;
                agent_file_upload_free(u);
                return r;
        }
        u->mode = req->has_mode ? (mode_t)req->mode : 0644;
        u->chown = req->chown;
        u->chown_uid = req->chown_uid;
        u->chown_gid = req->chown_gid;
        u->as_user = req->as_user;
        u->fsuid = req->fsuid;
        u->fsgid = req->fsgid;
        u->excl = req->excl;
        u->with_meta = req->with_meta;
        if (req->meta_len) {
                u->meta = malloc(req->meta_len);
                if (!u->meta) {
                        agent_file_upload_free(u);
                        return -ENOMEM;
                }
                memcpy(u->meta, req->meta, req->meta_len);
                u->meta_len = req->meta_len;
        }
        struct statfs sfs;
        u->memory = fstatfs(u->fd, &sfs) == 0 && (sfs.f_type == TMPFS_MAGIC || sfs.f_type == RAMFS_MAGIC);
        c->upload = u;
        agent_frame_writer_begin(&w, AGENT_MSG_FILE_UPLOAD);
        agent_frame_writer_put_str(&w, AGENT_F_FILE_PATH, req->path);
        if (u->memory)
                agent_frame_writer_put_u8(&w, AGENT_F_FILE_MEMORY, 1);
        agent_conn_reply(c, &w);
        return 0;
}

void agent_file_transfer_data(struct agent_conn *c, const struct agent_frame *f)
{
        struct agent_file_upload *u = c->upload;
        const uint8_t *data;
        uint32_t len;

        if (!u) {
                agent_conn_reply_error(c, EINVAL, "no upload on this connection (FILE_CREATE first)");
                return;
        }
        if (u->error)
                return; /* dropped: FILE_COMMIT answers the first failure */
        int r = agent_file_data_check(f, u->written, UINT64_MAX - u->written, &data, &len);
        if (r < 0) {
                u->error = -EPROTO;
                u->what = "upload (a malformed or out-of-order data frame) to";
                return;
        }
        for (uint32_t off = 0; off < len;) {
                ssize_t k = write(u->fd, data + off, len - off);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0) {
                        u->error = k < 0 ? -errno : -EIO;
                        u->what = "write";
                        return;
                }
                off += (uint32_t)k;
        }
        u->written += len;
}

/* Gives the unnamed file u->fd the name u->name in dir, replacing what is there. */
static int upload_link(struct agent_file_upload *u, int dir)
{
        char proc[64], tmp[64];
        struct stat st;

        if (fstatat(dir, u->name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
                return -EISDIR; /* made meanwhile */
        if (u->tmp_name[0]) {
                if (u->excl && fstatat(dir, u->name, &st, AT_SYMLINK_NOFOLLOW) == 0)
                        return -EEXIST;
                if (renameat(u->dir, u->tmp_name, dir, u->name) < 0)
                        return -errno;
                u->tmp_name[0] = 0;
                return 0;
        }
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", u->fd);
        if (linkat(AT_FDCWD, proc, dir, u->name, AT_SYMLINK_FOLLOW) == 0)
                return 0;
        if (errno != EEXIST || u->excl)
                return -errno;
        /* Something is there: link beside it, then rename over it (atomic for readers). */
        random_name(tmp, sizeof tmp);
        if (linkat(AT_FDCWD, proc, dir, tmp, AT_SYMLINK_FOLLOW) < 0)
                return -errno;
        if (renameat(dir, tmp, dir, u->name) < 0) {
                int r = -errno;
                (void)unlinkat(dir, tmp, 0);
                return r;
        }
        return 0;
}

/* The directory the file goes into: made now when the upload asked for parents. */
static int upload_target_dir(struct agent_file_upload *u)
{
        char parent[PATH_MAX];
        const char *name;

        if (!u->parents) {
                int fd = fcntl(u->dir, F_DUPFD_CLOEXEC, 3);
                return fd < 0 ? -errno : fd;
        }
        snprintf(parent, sizeof parent, "%s", u->path);
        char *slash = strrchr(parent, '/');
        if (slash && slash != parent) {
                *slash = 0;
                int r = agent_file_mkdir_parents(parent, 0755, u->chown ? u->chown_uid : (uid_t)-1,
                                                 u->chown ? u->chown_gid : (gid_t)-1);
                if (r < 0)
                        return r;
        }
        return agent_file_open_parent(u->path, &name);
}

void agent_file_transfer_commit(struct agent_conn *c, const struct agent_frame *f)
{
        struct agent_file_request req = { .saved_umask = (mode_t)-1 };
        const char *what = "chmod";
        uint8_t sync = 0;
        int r = 0;

        if (!c->upload) {
                agent_conn_reply_error(c, EINVAL, "no upload to commit on this connection");
                return;
        }
        struct agent_file_upload *u = TAKE_PTR(c->upload);
        if (u->error) {
                r = u->error;
                what = u->what;
        }
        (void)agent_frame_get_u8(f, AGENT_F_FILE_SYNC, &sync);
        if (r == 0 && sync && !u->memory && fdatasync(u->fd) < 0) {
                r = -errno;
                what = "sync";
        }
        if (r == 0 && u->as_user && (r = agent_file_user_become(u->fsuid, u->fsgid)) < 0)
                what = "become user for";
        /* Before the mode: a file the user may not write (0444) still gets them. */
        if (r == 0 && u->meta && (r = agent_file_meta_set(u->fd, u->meta, u->meta_len)) < 0)
                what = "set metadata (user.e2b.* attributes) on";
        if (r == 0 && fchmod(u->fd, u->mode) < 0)
                r = -errno;
        if (r == 0 && u->chown && fchown(u->fd, u->chown_uid, u->chown_gid) < 0) {
                r = -errno;
                what = "chown";
        }
        /* chown may have cleared set-id bits: put the asked-for mode back. */
        if (r == 0 && u->chown && fchmod(u->fd, u->mode) < 0)
                r = -errno;
        if (r == 0) {
                what = "mkdir";
                int dir = upload_target_dir(u);
                r = dir < 0 ? dir : 0;
                if (r == 0) {
                        what = "link";
                        r = upload_link(u, dir);
                        close(dir);
                }
        }
        if (r == 0) {
                snprintf(req.path, sizeof req.path, "%s", u->path);
                req.with_meta = u->with_meta;
                what = "stat";
                r = agent_files_reply_entry(c, &req, u->path);
        }
        if (u->as_user)
                agent_file_user_restore();
        if (r < 0)
                agent_files_reply_errno(c, -r, what, u->path);
        agent_file_names_release(&req.names);
        agent_file_upload_free(u);
}
