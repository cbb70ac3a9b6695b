/* The parent prepares a flat list of mount steps (every path written out beforehand); the
 * forked child only makes system calls on that memory — no malloc, stdio or locks, as
 * spaced has threads — then execs btrfs receive. */
#include "storage/import_confine.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"

static inline void closedirp(DIR **d)
{
        if (*d)
                closedir(*d);
}

enum step_kind { S_MKDIR, S_SYMLINK, S_CREATE, S_TMPFS, S_BIND, S_REMOUNT, S_PIVOT, S_REMOUNT_ROOT };

struct step {
        enum step_kind kind;
        const char *a, *b; /* path; or source, target */
        unsigned long flags;
};

#define MAX_STEPS 128
#define STRINGS_SIZE (MAX_STEPS * 2 * PATH_MAX / 4)

struct plan {
        struct step steps[MAX_STEPS];
        size_t n;
        char strings[STRINGS_SIZE];
        size_t used;
        char exe[PATH_MAX];
        struct sock_filter filter[1024];
        unsigned short filter_len;
        bool overflow;
};

/* Calls receive never makes: refused, so that a stream that took over receive still could
 * not unmount its covers, leave its namespace, or reach the kernel's wider surfaces. */
static const char *const denied_calls[] = {
        "mount",
        "umount2",
        "pivot_root",
        "move_mount",
        "open_tree",
        "fsopen",
        "fsmount",
        "fsconfig",
        "fspick",
        "mount_setattr",
        "unshare",
        "setns",
        "ptrace",
        "process_vm_readv",
        "process_vm_writev",
        "kexec_load",
        "kexec_file_load",
        "init_module",
        "finit_module",
        "delete_module",
        "bpf",
        "perf_event_open",
        "keyctl",
        "add_key",
        "request_key",
        "open_by_handle_at",
        "name_to_handle_at",
        "reboot",
        "swapon",
        "swapoff",
        "iopl",
        "ioperm",
        "userfaultfd",
        "io_uring_setup",
        "io_uring_enter",
        "io_uring_register",
};

static void seccomp_releasep(scmp_filter_ctx *ctx)
{
        if (*ctx)
                seccomp_release(*ctx);
}

/* Built here, loaded by the child with one prctl (libseccomp allocates). */
static int filter_build(struct plan *p)
{
        _cleanup_(seccomp_releasep) scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
        if (!ctx)
                return -ENOMEM;
        int r = 0;
#if defined(__x86_64__)
        if ((r = seccomp_arch_add(ctx, SCMP_ARCH_X86)) < 0 && r != -EEXIST)
                return r;
        if ((r = seccomp_arch_add(ctx, SCMP_ARCH_X32)) < 0 && r != -EEXIST)
                return r;
#endif
        for (size_t i = 0; i < ARRAY_SIZE(denied_calls); i++) {
                int nr = seccomp_syscall_resolve_name(denied_calls[i]);
                if (nr == __NR_SCMP_ERROR)
                        continue;
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
                if (r < 0 && r != -EDOM) /* -EDOM: not on one of the ABIs */
                        return r;
        }
        _cleanup_close_ int fd = memfd_create("import-seccomp", MFD_CLOEXEC);
        if (fd < 0)
                return -errno;
        if ((r = seccomp_export_bpf(ctx, fd)) < 0)
                return r;
        ssize_t n = pread(fd, p->filter, sizeof(p->filter), 0);
        if (n <= 0 || n % (ssize_t)sizeof(struct sock_filter) != 0 || (size_t)n == sizeof(p->filter))
                return -E2BIG;
        p->filter_len = (unsigned short)(n / (ssize_t)sizeof(struct sock_filter));
        return 0;
}

/* What receive needs to run as root in its box; the bounding set loses everything else. */
static const int kept_caps[] = { CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER,          CAP_FSETID,
                                 CAP_MKNOD, CAP_SYS_ADMIN,    CAP_SYS_CHROOT,      CAP_LINUX_IMMUTABLE, CAP_SETFCAP };

#define RO_FLAGS (MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)

__attribute__((format(printf, 2, 3))) static const char *str(struct plan *p, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(p->strings + p->used, sizeof(p->strings) - p->used, fmt, ap);
        va_end(ap);
        if (n < 0 || (size_t)n >= sizeof(p->strings) - p->used || n >= PATH_MAX) {
                p->overflow = true;
                return "";
        }
        const char *s = p->strings + p->used;
        p->used += (size_t)n + 1;
        return s;
}

static void add(struct plan *p, enum step_kind kind, const char *a, const char *b, unsigned long flags)
{
        if (p->n == MAX_STEPS) {
                p->overflow = true;
                return;
        }
        p->steps[p->n++] = (struct step){ kind, a, b, flags };
}

/* A read-only bind of src at dst (a bind takes its flags only on a remount). */
static void add_ro_bind(struct plan *p, const char *src, const char *dst, unsigned long flags)
{
        add(p, S_BIND, src, dst, 0);
        add(p, S_REMOUNT, NULL, dst, MS_BIND | flags);
}

static int find_exe(const char *name, char *buf, size_t size)
{
        static const char *const dirs[] = { "/usr/sbin", "/usr/bin", "/sbin", "/bin", "/usr/local/sbin", "/usr/local/bin" };
        for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
                snprintf(buf, size, "%s/%s", dirs[i], name);
                if (access(buf, X_OK) == 0)
                        return 0;
        }
        return -ENOENT;
}

static int plan_build(const struct import_confine *spec, struct plan *p)
{
        const char *root = str(p, "%s/root", spec->staging_dir);
        const char *recv = str(p, "%s/recv", spec->staging_dir);
        if (mkdir(root, 0700) < 0 || mkdir(recv, 0700) < 0)
                return -errno;
        int r = find_exe("btrfs", p->exe, sizeof(p->exe));
        if (r < 0 || (r = filter_build(p)) < 0)
                return r;

        add(p, S_TMPFS, "mode=0755,size=64k", root, MS_NOSUID | MS_NODEV | MS_NOEXEC);
        static const char *const top[] = { "bin", "sbin", "lib", "lib64", "lib32", "libx32" };
        for (size_t i = 0; i < ARRAY_SIZE(top); i++) {
                char host[32], target[PATH_MAX];
                struct stat st;
                snprintf(host, sizeof(host), "/%s", top[i]);
                if (lstat(host, &st) < 0)
                        continue;
                if (S_ISLNK(st.st_mode)) {
                        ssize_t n = readlink(host, target, sizeof(target) - 1);
                        if (n <= 0)
                                return -EIO;
                        target[n] = '\0';
                        add(p, S_SYMLINK, str(p, "%s", target), str(p, "%s%s", root, host), 0);
                } else if (S_ISDIR(st.st_mode)) {
                        const char *dst = str(p, "%s%s", root, host);
                        add(p, S_MKDIR, dst, NULL, 0);
                        add_ro_bind(p, str(p, "%s", host), dst, MS_RDONLY | MS_NOSUID | MS_NODEV);
                }
        }
        add(p, S_MKDIR, str(p, "%s/usr", root), NULL, 0);
        add_ro_bind(p, "/usr", str(p, "%s/usr", root), MS_RDONLY | MS_NOSUID | MS_NODEV);
        if (access("/etc/ld.so.cache", R_OK) == 0) {
                add(p, S_MKDIR, str(p, "%s/etc", root), NULL, 0);
                add(p, S_CREATE, str(p, "%s/etc/ld.so.cache", root), NULL, 0);
                add_ro_bind(p, "/etc/ld.so.cache", str(p, "%s/etc/ld.so.cache", root), RO_FLAGS);
        }
        add(p, S_CREATE, str(p, "%s/empty", root), NULL, 0);
        add(p, S_MKDIR, str(p, "%s/old", root), NULL, 0);

        const char *pool = str(p, "%s/pool", root);
        add(p, S_MKDIR, pool, NULL, 0);
        add_ro_bind(p, spec->pool_root, pool, RO_FLAGS);
        _cleanup_(closedirp) DIR *d = opendir(spec->pool_root);
        if (!d)
                return -errno;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 || strcmp(de->d_name, "snapshots") == 0 ||
                    strcmp(de->d_name, "staging") == 0)
                        continue;
                struct stat st;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        return -errno;
                const char *dst = str(p, "%s/%s", pool, de->d_name);
                if (S_ISDIR(st.st_mode))
                        add(p, S_TMPFS, "mode=0000,size=4k", dst, RO_FLAGS);
                else if (S_ISREG(st.st_mode))
                        add_ro_bind(p, str(p, "%s/empty", root), dst, RO_FLAGS);
                else
                        return -EPERM; /* nothing else belongs there: fail closed */
        }
        const char *snaps = str(p, "%s/snapshots", pool);
        add(p, S_TMPFS, "mode=0700,size=16k", snaps, MS_NOSUID | MS_NODEV | MS_NOEXEC);
        if (spec->parent_id) {
                const char *at = str(p, "%s/%s", snaps, spec->parent_id);
                add(p, S_MKDIR, at, NULL, 0);
                add_ro_bind(p, str(p, "%s/snapshots/%s", spec->pool_root, spec->parent_id), at, RO_FLAGS);
        }
        add(p, S_REMOUNT, NULL, snaps, RO_FLAGS);
        add(p, S_BIND, recv, str(p, "%s/staging", pool), 0);
        add(p, S_REMOUNT, NULL, str(p, "%s/staging", pool), MS_BIND | MS_NOSUID | MS_NODEV | MS_NOEXEC);
        add(p, S_PIVOT, root, NULL, 0);
        add(p, S_REMOUNT_ROOT, NULL, "/", RO_FLAGS);
        return p->overflow ? -ENAMETOOLONG : 0;
}

/* ---- child side: system calls only ---- */

static void child_fail(const char *what, int e)
{
        char msg[160];
        /* strerror is not async-signal-safe; the number is enough for the log. */
        size_t n = 0;
        static const char pre[] = "ERROR: import confinement: ";
        _Static_assert(sizeof(pre) < sizeof(msg) - 40, "the prefix leaves room for the rest");
        while (pre[n])
                msg[n] = pre[n], n++;
        for (size_t i = 0; what[i] && n < sizeof(msg) - 20; i++)
                msg[n++] = what[i];
        msg[n++] = ' ', msg[n++] = 'e', msg[n++] = 'r', msg[n++] = 'r', msg[n++] = 'n', msg[n++] = 'o', msg[n++] = ' ';
        char digits[12];
        int k = 0;
        do
                digits[k++] = (char)('0' + e % 10);
        while ((e /= 10) && k < 11);
        while (k)
                msg[n++] = digits[--k];
        msg[n++] = '\n';
        if (write(2, msg, n) < 0) {
                /* nothing more to say */
        }
        _exit(127);
}

static int child_step(const struct step *s)
{
        switch (s->kind) {
        case S_MKDIR:
                return mkdir(s->a, 0755) < 0 && errno != EEXIST ? -1 : 0;
        case S_SYMLINK:
                return symlink(s->a, s->b);
        case S_CREATE: {
                int fd = open(s->a, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                return fd < 0 ? -1 : close(fd);
        }
        case S_TMPFS:
                return mount("tmpfs", s->b, "tmpfs", s->flags, s->a);
        case S_BIND:
                return mount(s->a, s->b, NULL, MS_BIND, NULL);
        case S_REMOUNT:
                return mount(NULL, s->b, NULL, MS_REMOUNT | s->flags, NULL);
        case S_PIVOT:
                if (chdir(s->a) < 0 || syscall(SYS_pivot_root, ".", "old") < 0 || chdir("/") < 0 ||
                    umount2("/old", MNT_DETACH) < 0)
                        return -1;
                return rmdir("/old");
        case S_REMOUNT_ROOT:
                return mount(NULL, "/", NULL, MS_REMOUNT | s->flags, NULL);
        }
        return -1;
}

static void child_bounding_set(void)
{
        for (int cap = 0; cap <= 63; cap++) {
                bool keep = false;
                for (size_t i = 0; i < ARRAY_SIZE(kept_caps); i++)
                        keep |= kept_caps[i] == cap;
                if (!keep && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
                        child_fail("drop capability", errno);
        }
}

static __attribute__((noreturn)) void child_run(const struct plan *p, int in_fd, int log_fd)
{
        sigset_t none;
        sigemptyset(&none);
        if (sigprocmask(SIG_SETMASK, &none, NULL) < 0 || setpgid(0, 0) < 0)
                _exit(127);
        if (dup2(in_fd, 0) < 0 || dup2(log_fd, 1) < 0 || dup2(log_fd, 2) < 0)
                _exit(127);
        if (unshare(CLONE_NEWNS) < 0)
                child_fail("unshare", errno);
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                child_fail("make mounts private", errno);
        for (size_t i = 0; i < p->n; i++)
                if (child_step(&p->steps[i]) < 0)
                        child_fail(p->steps[i].b ? p->steps[i].b : p->steps[i].a, errno);
        child_bounding_set();
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                child_fail("no_new_privs", errno);
        struct sock_fprog prog = { .len = p->filter_len, .filter = (struct sock_filter *)p->filter };
        if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0)
                child_fail("seccomp", errno);
        syscall(SYS_close_range, 3, ~0u, 0);
        char *argv[] = { "btrfs", "receive", "-e", "--chroot", "-m", "/pool", "/pool/staging", NULL };
        char *envp[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", NULL };
        execve(p->exe, argv, envp);
        child_fail("exec btrfs", errno);
        _exit(127);
}

int import_confine_spawn(const struct import_confine *spec, int *ret_fd, pid_t *ret_pid)
{
        _cleanup_free_ struct plan *p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        int r = plan_build(spec, p);
        if (r < 0)
                return r;
        int pipefd[2];
        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return -errno;
        _cleanup_close_ int rd = pipefd[0], wr = pipefd[1];
        _cleanup_close_ int log_fd = open(spec->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
        if (log_fd < 0)
                return -errno;
        pid_t pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0)
                child_run(p, rd, log_fd);
        setpgid(pid, pid); /* as the child does: a kill of the group never misses it */
        *ret_fd = TAKE_FD(wr);
        *ret_pid = pid;
        return 0;
}
