/* powercut: a FUSE passthrough filesystem over a backing directory that can simulate a
 * power cut, for crash-consistency tests on a kernel without device-mapper (no dm-flakey,
 * no dm-log-writes), nbd or ublk.
 *
 *   powercut [--status FILE] [--torn SEED] BACKING MOUNTPOINT [FUSE options]
 *
 * Runs in the foreground, multithreaded. Every operation goes straight through to the
 * backing directory (reads see every write at once); undo_log.c remembers, per file, what
 * it held at its last fsync()/fdatasync(). Only those count as durable: close() and FUSE's
 * flush do not (a real disk does not persist data at close either). Metadata (create,
 * unlink, rename, mkdir, link, chmod, chown, utimens) is durable at once; a size change or
 * a punched hole is undone like data.
 *
 * SIGUSR1 cuts the power: it waits for the operations in flight, makes every later one
 * fail with EIO, puts every file in the backing directory back to its state at its last
 * sync, then writes "cut files=F blocks=B bytes_beyond=N error=E" and one line per file it
 * undid ("file PATH size=S synced=Y blocks=K") to FILE (atomically). The backing directory
 * is then the disk after the crash: unmount MOUNTPOINT (umount -l) and use it. SIGUSR2
 * writes what a cut would undo now, the same way ("pending ...").
 *
 * With --torn SEED the cut is a disk whose volatile cache wrote out part of what it held:
 * each unsynced block is kept or undone by a seeded coin flip (see undo_log.h).
 *
 * The backing files are never fsync'ed themselves: the backing filesystem is not the one
 * that loses power, and skipping it keeps the tests fast. */
#define FUSE_USE_VERSION 31
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "undo_log.h"

static int backing_fd = -1;
static const char *status_path;
static struct undo_log *undo;
static pthread_rwlock_t gate; /* readers: operations; writer: the cut */
static bool power_cut;

/* Every operation runs inside the gate; after the cut none gets in. */
#define ENTER()                                       \
        do {                                          \
                pthread_rwlock_rdlock(&gate);         \
                if (power_cut) {                      \
                        pthread_rwlock_unlock(&gate); \
                        return -EIO;                  \
                }                                     \
        } while (0)
#define LEAVE(r)                              \
        do {                                  \
                int r_ = (r);                 \
                pthread_rwlock_unlock(&gate); \
                return r_;                    \
        } while (0)

static const char *rel(const char *path)
{
        if (!path)
                return ".";
        while (*path == '/')
                path++;
        return *path ? path : ".";
}

static int neg(int r) { return r < 0 ? -errno : r; }

static void *pc_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
        cfg->use_ino = 1;
        cfg->nullpath_ok = 1;
        cfg->hard_remove = 1;   /* operations on open files use their descriptors */
        cfg->direct_io = 0;     /* mmap (SQLite's -shm) needs the page cache */
        cfg->kernel_cache = 0;
        if (conn->max_write < (1u << 20))
                conn->max_write = 1u << 20;
        conn->want &= ~FUSE_CAP_WRITEBACK_CACHE; /* every write reaches us at once */
        return NULL;
}

static int pc_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
        ENTER();
        int r = fi ? fstat((int)fi->fh, st) : fstatat(backing_fd, rel(path), st, AT_SYMLINK_NOFOLLOW);
        LEAVE(neg(r));
}

static int pc_access(const char *path, int mask)
{
        ENTER();
        LEAVE(neg(faccessat(backing_fd, rel(path), mask, AT_EACCESS)));
}

static int pc_readlink(const char *path, char *buf, size_t size)
{
        ENTER();
        ssize_t n = readlinkat(backing_fd, rel(path), buf, size - 1);
        if (n < 0)
                LEAVE(-errno);
        buf[n] = '\0';
        LEAVE(0);
}

static int pc_mknod(const char *path, mode_t mode, dev_t dev)
{
        ENTER();
        LEAVE(neg(mknodat(backing_fd, rel(path), mode, dev)));
}

static int pc_mkdir(const char *path, mode_t mode)
{
        ENTER();
        LEAVE(neg(mkdirat(backing_fd, rel(path), mode)));
}

static int pc_unlink(const char *path)
{
        ENTER();
        LEAVE(neg(unlinkat(backing_fd, rel(path), 0)));
}

static int pc_rmdir(const char *path)
{
        ENTER();
        LEAVE(neg(unlinkat(backing_fd, rel(path), AT_REMOVEDIR)));
}

static int pc_symlink(const char *target, const char *path)
{
        ENTER();
        LEAVE(neg(symlinkat(target, backing_fd, rel(path))));
}

static int pc_rename(const char *from, const char *to, unsigned int flags)
{
        ENTER();
        LEAVE(neg(renameat2(backing_fd, rel(from), backing_fd, rel(to), flags)));
}

static int pc_link(const char *from, const char *to)
{
        ENTER();
        LEAVE(neg(linkat(backing_fd, rel(from), backing_fd, rel(to), 0)));
}

static int pc_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
        ENTER();
        LEAVE(neg(fi ? fchmod((int)fi->fh, mode) : fchmodat(backing_fd, rel(path), mode, 0)));
}

static int pc_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
        ENTER();
        LEAVE(neg(fi ? fchown((int)fi->fh, uid, gid) : fchownat(backing_fd, rel(path), uid, gid, AT_SYMLINK_NOFOLLOW)));
}

static int pc_utimens(const char *path, const struct timespec ts[2], struct fuse_file_info *fi)
{
        ENTER();
        LEAVE(neg(fi ? futimens((int)fi->fh, ts) : utimensat(backing_fd, rel(path), ts, AT_SYMLINK_NOFOLLOW)));
}

/* Truncates the file open at fd to size, remembering what the cut must put back. */
static int truncate_fd(int fd, const char *path, off_t size)
{
        struct undo_file *f;
        int r = undo_log_lock_file(undo, fd, path, &f);
        if (r < 0)
                return r;
        r = undo_file_save_truncate(f, (uint64_t)size);
        if (r == 0)
                r = neg(ftruncate(fd, size));
        undo_file_unlock(f);
        return r;
}

static int pc_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
        ENTER();
        if (fi) /* the kernel checked that it is open for writing */
                LEAVE(truncate_fd((int)fi->fh, path, size));
        int fd = openat(backing_fd, rel(path), O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                LEAVE(-errno);
        int r = truncate_fd(fd, path, size);
        close(fd);
        LEAVE(r);
}

/* O_APPEND would make pwrite ignore the offset the kernel chose; O_DIRECT would need
 * aligned buffers; O_TRUNC is done by us, so that it can be undone. */
static int backing_flags(int flags)
{
        return (flags & ~(O_APPEND | O_DIRECT | O_TRUNC | O_CREAT | O_EXCL)) | O_CLOEXEC;
}

static int open_common(const char *path, int fd, int flags, struct fuse_file_info *fi)
{
        if (flags & O_TRUNC) {
                int r = truncate_fd(fd, path, 0);
                if (r < 0) {
                        close(fd);
                        return r;
                }
        }
        fi->fh = (uint64_t)fd;
        return 0;
}

static int pc_open(const char *path, struct fuse_file_info *fi)
{
        ENTER();
        int fd = openat(backing_fd, rel(path), backing_flags(fi->flags));
        if (fd < 0)
                LEAVE(-errno);
        LEAVE(open_common(path, fd, fi->flags, fi));
}

static int pc_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
        ENTER();
        int fd = openat(backing_fd, rel(path), backing_flags(fi->flags) | O_CREAT | (fi->flags & O_EXCL), mode);
        if (fd < 0)
                LEAVE(-errno);
        LEAVE(open_common(path, fd, fi->flags, fi));
}

static int pc_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
        (void)path;
        ENTER();
        ssize_t n = pread((int)fi->fh, buf, size, off);
        LEAVE(n < 0 ? -errno : (int)n);
}

static int pc_write(const char *path, const char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
        ENTER();
        struct undo_file *f;
        int r = undo_log_lock_file(undo, (int)fi->fh, path, &f);
        if (r < 0)
                LEAVE(r);
        r = undo_file_save_range(f, (uint64_t)off, size);
        ssize_t n = r < 0 ? r : pwrite((int)fi->fh, buf, size, off);
        if (n < 0 && r == 0)
                r = -errno;
        undo_file_unlock(f);
        LEAVE(r < 0 ? r : (int)n);
}

static int pc_fallocate(const char *path, int mode, off_t off, off_t len, struct fuse_file_info *fi)
{
        ENTER();
        struct undo_file *f;
        int r = undo_log_lock_file(undo, (int)fi->fh, path, &f);
        if (r < 0)
                LEAVE(r);
        if (mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE))
                r = undo_file_save_range(f, (uint64_t)off, (uint64_t)len);
        else if (mode & (FALLOC_FL_COLLAPSE_RANGE | FALLOC_FL_INSERT_RANGE))
                r = undo_file_save_range(f, (uint64_t)off, UINT64_MAX - (uint64_t)off); /* all data after off moves */
        if (r == 0)
                r = neg(fallocate((int)fi->fh, mode, off, len));
        undo_file_unlock(f);
        LEAVE(r);
}

static int pc_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
        (void)path;
        (void)datasync;
        ENTER();
        LEAVE(undo_log_synced(undo, (int)fi->fh));
}

static int pc_flush(const char *path, struct fuse_file_info *fi)
{
        (void)path;
        (void)fi;
        ENTER();
        LEAVE(0); /* close() is not a sync */
}

static int pc_release(const char *path, struct fuse_file_info *fi)
{
        (void)path;
        close((int)fi->fh); /* even after the cut: descriptors must not leak */
        return 0;
}

static off_t pc_lseek(const char *path, off_t off, int whence, struct fuse_file_info *fi)
{
        (void)path;
        ENTER();
        off_t r = lseek((int)fi->fh, off, whence);
        LEAVE(r < 0 ? -errno : r);
}

static int pc_statfs(const char *path, struct statvfs *st)
{
        (void)path;
        ENTER();
        LEAVE(neg(fstatvfs(backing_fd, st)));
}

static int pc_opendir(const char *path, struct fuse_file_info *fi)
{
        ENTER();
        int fd = openat(backing_fd, rel(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                LEAVE(-errno);
        DIR *d = fdopendir(fd);
        if (!d) {
                close(fd);
                LEAVE(-errno);
        }
        fi->fh = (uint64_t)(uintptr_t)d;
        LEAVE(0);
}

static int pc_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off, struct fuse_file_info *fi,
                      enum fuse_readdir_flags flags)
{
        (void)path;
        (void)flags;
        ENTER();
        DIR *d = (DIR *)(uintptr_t)fi->fh;
        if (off != telldir(d))
                seekdir(d, off);
        for (;;) {
                errno = 0;
                struct dirent *e = readdir(d);
                if (!e)
                        LEAVE(-errno);
                struct stat st = { .st_ino = e->d_ino, .st_mode = (mode_t)DTTOIF(e->d_type) };
                if (fill(buf, e->d_name, &st, telldir(d), 0))
                        LEAVE(0);
        }
}

static int pc_releasedir(const char *path, struct fuse_file_info *fi)
{
        (void)path;
        closedir((DIR *)(uintptr_t)fi->fh);
        return 0;
}

static int pc_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi)
{
        (void)path;
        (void)datasync;
        (void)fi;
        ENTER();
        LEAVE(0); /* metadata is durable at once in this model */
}

static const struct fuse_operations pc_ops = {
        .init = pc_init,
        .getattr = pc_getattr,
        .access = pc_access,
        .readlink = pc_readlink,
        .mknod = pc_mknod,
        .mkdir = pc_mkdir,
        .unlink = pc_unlink,
        .rmdir = pc_rmdir,
        .symlink = pc_symlink,
        .rename = pc_rename,
        .link = pc_link,
        .chmod = pc_chmod,
        .chown = pc_chown,
        .utimens = pc_utimens,
        .truncate = pc_truncate,
        .open = pc_open,
        .create = pc_create,
        .read = pc_read,
        .write = pc_write,
        .fallocate = pc_fallocate,
        .fsync = pc_fsync,
        .flush = pc_flush,
        .release = pc_release,
        .lseek = pc_lseek,
        .statfs = pc_statfs,
        .opendir = pc_opendir,
        .readdir = pc_readdir,
        .releasedir = pc_releasedir,
        .fsyncdir = pc_fsyncdir,
};

/* The status file is written whole and renamed into place: a reader never sees half. */
static FILE *status_open(char *tmp, size_t size)
{
        if (!status_path)
                return NULL;
        snprintf(tmp, size, "%s.tmp", status_path);
        return fopen(tmp, "we");
}

static void status_close(FILE *out, const char *tmp, const char *kind, const struct undo_log_stats *s, int error)
{
        if (!out)
                return;
        /* The head line goes last in the file's order of writing but first in the file: the
         * per-file lines were written after a placeholder of fixed width. */
        fflush(out);
        char head[160];
        int n = snprintf(head, sizeof(head), "%s files=%llu blocks=%llu bytes_beyond=%llu error=%d", kind,
                         (unsigned long long)s->files, (unsigned long long)s->blocks,
                         (unsigned long long)s->bytes_beyond, error);
        memset(head + n, ' ', sizeof(head) - 1 - (size_t)n);
        head[sizeof(head) - 1] = '\n';
        bool ok = fseek(out, 0, SEEK_SET) == 0 && fwrite(head, 1, sizeof(head), out) == sizeof(head);
        if (fclose(out) == 0 && ok)
                rename(tmp, status_path);
}

static FILE *status_begin(char *tmp, size_t size)
{
        FILE *out = status_open(tmp, size);
        if (out) {
                char blank[160];
                memset(blank, ' ', sizeof(blank));
                fwrite(blank, 1, sizeof(blank), out); /* room for the head line */
        }
        return out;
}

static void *signal_thread(void *arg)
{
        sigset_t *set = arg;
        for (;;) {
                int sig;
                if (sigwait(set, &sig) != 0)
                        continue;
                struct undo_log_stats s = { 0 };
                char tmp[PATH_MAX];
                pthread_rwlock_wrlock(&gate);
                FILE *out = status_begin(tmp, sizeof(tmp));
                if (sig == SIGUSR2) {
                        undo_log_stats(undo, &s, out);
                        pthread_rwlock_unlock(&gate);
                        status_close(out, tmp, "pending", &s, 0);
                        continue;
                }
                int r = 0;
                if (!power_cut) {
                        power_cut = true;
                        r = undo_log_apply(undo, &s, out);
                }
                pthread_rwlock_unlock(&gate);
                fprintf(stderr, "powercut: power cut: files=%llu blocks=%llu bytes_beyond=%llu error=%d\n",
                        (unsigned long long)s.files, (unsigned long long)s.blocks, (unsigned long long)s.bytes_beyond,
                        r);
                status_close(out, tmp, "cut", &s, r);
        }
        return NULL;
}

int main(int argc, char **argv)
{
        int i = 1;
        uint64_t torn_seed = 0;
        for (; i + 1 < argc; i += 2) {
                if (strcmp(argv[i], "--status") == 0)
                        status_path = argv[i + 1];
                else if (strcmp(argv[i], "--torn") == 0)
                        torn_seed = strtoull(argv[i + 1], NULL, 10);
                else
                        break;
        }
        if (argc - i < 2) {
                fprintf(stderr, "usage: %s [--status FILE] [--torn SEED] BACKING MOUNTPOINT [FUSE options]\n", argv[0]);
                return 2;
        }
        backing_fd = open(argv[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (backing_fd < 0) {
                fprintf(stderr, "powercut: %s: %m\n", argv[i]);
                return 1;
        }
        undo = undo_log_new();
        if (!undo)
                return 1;
        undo_log_set_torn(undo, torn_seed);
        pthread_rwlockattr_t attr;
        pthread_rwlockattr_init(&attr);
        /* A cut must not wait behind an endless stream of operations. */
        pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
        pthread_rwlock_init(&gate, &attr);

        /* Each file with unsynced changes keeps a descriptor until the cut. */
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
                rl.rlim_cur = rl.rlim_max;
                setrlimit(RLIMIT_NOFILE, &rl);
        }

        /* SIGUSR1/2 go to one thread; every FUSE thread inherits the blocked mask. */
        static sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGUSR1);
        sigaddset(&set, SIGUSR2);
        pthread_sigmask(SIG_BLOCK, &set, NULL);
        pthread_t tid;
        if (pthread_create(&tid, NULL, signal_thread, &set) != 0) {
                fprintf(stderr, "powercut: cannot start the signal thread\n");
                return 1;
        }

        char *fargv[64];
        int fargc = 0;
        fargv[fargc++] = argv[0];
        fargv[fargc++] = argv[i + 1];
        fargv[fargc++] = "-f";
        fargv[fargc++] = "-o";
        fargv[fargc++] = "allow_other,default_permissions,fsname=powercut,subtype=powercut";
        for (int j = i + 2; j < argc && fargc < 63; j++)
                fargv[fargc++] = argv[j];
        fargv[fargc] = NULL;
        int r = fuse_main(fargc, fargv, &pc_ops, NULL);
        return r;
}
