#include "runtime/namespaces/ns_child.h"
#include "runtime/namespaces/ns_proc_view.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <linux/securebits.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Reports a failed step to the parent without formatting functions. */
static _Noreturn void fail(const struct ns_child_config *c, const char *step)
{
        int e = errno;
        char buf[160];
        size_t n = 0;
        for (const char *p = step; *p && n < 100; p++)
                buf[n++] = *p;
        buf[n++] = ':';
        buf[n++] = ' ';
        char digits[12];
        int d = 0;
        do {
                digits[d++] = (char)('0' + e % 10);
                e /= 10;
        } while (e && d < 11);
        while (d)
                buf[n++] = digits[--d];
        (void)!write(c->sync_fd, buf, n);
        _exit(1);
}

static int recv_fd(int sock)
{
        char byte;
        char cbuf[CMSG_SPACE(sizeof(int))];
        struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
        struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
        ssize_t n;
        do
                n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
        while (n < 0 && errno == EINTR);
        if (n <= 0) {
                if (n == 0)
                        errno = EPIPE;
                return -1;
        }
        struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
        if (!cm || cm->cmsg_type != SCM_RIGHTS) {
                errno = EPROTO;
                return -1;
        }
        int fd;
        memcpy(&fd, CMSG_DATA(cm), sizeof(fd));
        return fd;
}

/* An empty file to bind a host device node onto (mknod is refused in a user namespace). */
static int bind_device(const char *host, const char *target)
{
        int fd = open(target, O_CREAT | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0666);
        if (fd < 0)
                return -1;
        close(fd);
        return mount(host, target, NULL, MS_BIND, NULL);
}

static void setup_dev(const struct ns_child_config *c)
{
        static const char *const devices[] = { "null", "zero", "full", "random", "urandom", "tty" };
        if (mount("tmpfs", "dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=65536") < 0)
                fail(c, "mount /dev");
        for (size_t i = 0; i < sizeof(devices) / sizeof(devices[0]); i++) {
                char host[32] = "/dev/", target[32] = "dev/";
                strcat(host, devices[i]);
                strcat(target, devices[i]);
                if (bind_device(host, target) < 0)
                        fail(c, "bind device");
        }
        if (mkdir("dev/pts", 0755) < 0 || mkdir("dev/shm", 01777) < 0)
                fail(c, "mkdir /dev/pts");
        if (mount("devpts", "dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620") < 0)
                fail(c, "mount /dev/pts");
        if (mount("tmpfs", "dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") < 0)
                fail(c, "mount /dev/shm");
        if (symlink("pts/ptmx", "dev/ptmx") < 0 || symlink("/proc/self/fd", "dev/fd") < 0 ||
            symlink("/proc/self/fd/0", "dev/stdin") < 0 || symlink("/proc/self/fd/1", "dev/stdout") < 0 ||
            symlink("/proc/self/fd/2", "dev/stderr") < 0)
                fail(c, "symlink /dev");
}

/* What /proc tells about the host and nothing in a sandbox needs (runc's masked paths and
 * more): the host's devices, disks, interrupts, file locks, memory zones, timers and kernel
 * state, and the host kernel's command line. Files are covered by /dev/null, directories by
 * an empty read-only tmpfs; a name this kernel lacks is skipped. Files only host root may
 * read (kcore, kmsg, kpage*, slabinfo, vmallocinfo, sysrq-trigger) need no mask: root inside
 * is not host root. /proc/meminfo, stat, cpuinfo, loadavg and uptime stay (tools read them;
 * sysinfo(2) tells the same; docs/isolation.md). */
static const char *const masked_proc_files[] = {
        "buddyinfo", "cmdline",    "config.gz",    "consoles",   "devices",     "diskstats",     "interrupts",
        "iomem",     "ioports",    "kallsyms",     "key-users",  "keys",        "latency_stats", "locks",
        "modules",   "mtrr",       "pagetypeinfo", "partitions", "sched_debug", "schedstat",     "softirqs",
        "swaps",     "timer_list", "timer_stats",  "zoneinfo",
};
static const char *const masked_proc_dirs[] = { "acpi", "asound", "bus", "fs", "irq", "scsi" };

static void proc_path(char *buf, size_t size, const char *leaf)
{
        size_t n = 0;
        for (const char *p = "proc/"; *p && n + 1 < size; p++)
                buf[n++] = *p;
        for (const char *p = leaf; *p && n + 1 < size; p++)
                buf[n++] = *p;
        buf[n] = 0;
}

static void mask_proc(const struct ns_child_config *c)
{
        char path[64];
        for (size_t i = 0; i < sizeof(masked_proc_files) / sizeof(masked_proc_files[0]); i++) {
                proc_path(path, sizeof(path), masked_proc_files[i]);
                if (mount("dev/null", path, NULL, MS_BIND, NULL) < 0 && errno != ENOENT)
                        fail(c, "mask /proc file");
        }
        for (size_t i = 0; i < sizeof(masked_proc_dirs) / sizeof(masked_proc_dirs[0]); i++) {
                proc_path(path, sizeof(path), masked_proc_dirs[i]);
                if (mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=0,mode=0555") < 0 &&
                    errno != ENOENT)
                        fail(c, "mask /proc directory");
        }
}

/* A boot_id of the sandbox's own, new at every start: the host's would tie every sandbox
 * to one machine and to each other. A random version 4 UUID on a file of the /dev tmpfs,
 * bound over /proc/sys/kernel/random/boot_id; the file's name is removed again. */
static void own_boot_id(const struct ns_child_config *c)
{
        unsigned char b[16];
        if (syscall(SYS_getrandom, b, sizeof(b), 0) != (long)sizeof(b))
                fail(c, "random boot_id");
        b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
        b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
        static const char hex[] = "0123456789abcdef";
        char text[37];
        size_t n = 0;
        for (int i = 0; i < 16; i++) {
                if (i == 4 || i == 6 || i == 8 || i == 10)
                        text[n++] = '-';
                text[n++] = hex[b[i] >> 4];
                text[n++] = hex[b[i] & 15];
        }
        text[n++] = '\n';
        int fd = open("dev/.boot_id", O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0444);
        if (fd < 0 || write(fd, text, n) != (ssize_t)n)
                fail(c, "write boot_id");
        close(fd);
        if (mount("dev/.boot_id", "proc/sys/kernel/random/boot_id", NULL, MS_BIND, NULL) < 0 ||
            mount(NULL, "proc/sys/kernel/random/boot_id", NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL) < 0)
                fail(c, "bind boot_id");
        if (unlink("dev/.boot_id") < 0)
                fail(c, "unlink boot_id");
}

static void ensure_dir(const struct ns_child_config *c, const char *path, mode_t mode)
{
        if (mkdir(path, mode) < 0 && errno != EEXIST)
                fail(c, "mkdir");
}

/* The network namespace starts with lo down; bring it up so localhost works inside. */
static void loopback_up(const struct ns_child_config *c)
{
        int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                fail(c, "socket for lo");
        struct ifreq ifr;
        memset(&ifr, 0, sizeof(ifr));
        memcpy(ifr.ifr_name, "lo", 3);
        if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
                fail(c, "read lo flags");
        ifr.ifr_flags |= IFF_UP;
        if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
                fail(c, "bring lo up");
        close(fd);
}

/* The capabilities root keeps inside the sandbox's user namespace (they mean nothing on
 * the host): enough for package managers and for the agent to run commands and serve files
 * as other users. Docker's default set without NET_RAW, MKNOD, SETPCAP, SYS_CHROOT and
 * AUDIT_WRITE. */
static const int kept_caps[] = { CAP_CHOWN,  CAP_DAC_OVERRIDE, CAP_FOWNER,           CAP_FSETID, CAP_KILL,
                                 CAP_SETGID, CAP_SETUID,       CAP_NET_BIND_SERVICE, CAP_SETFCAP };

static bool cap_kept(int cap)
{
        for (size_t i = 0; i < sizeof(kept_caps) / sizeof(kept_caps[0]); i++)
                if (kept_caps[i] == cap)
                        return true;
        return false;
}

static void drop_privileges(const struct ns_child_config *c)
{
        /* Ordinary root semantics (a non-root uid holds no capabilities), frozen: nothing
         * inside can change these bits, keep capabilities across setuid or raise ambient ones. */
        if (prctl(PR_SET_SECUREBITS,
                  SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE |
                          SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED) < 0)
                fail(c, "securebits");
        for (int cap = 0; cap <= 63; cap++)
                if (!cap_kept(cap) && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
                        fail(c, "drop bounding set");
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
                fail(c, "clear ambient caps");
        struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
        struct __user_cap_data_struct data[2];
        memset(data, 0, sizeof(data));
        for (size_t i = 0; i < sizeof(kept_caps) / sizeof(kept_caps[0]); i++) {
                data[kept_caps[i] / 32].permitted |= 1u << (kept_caps[i] % 32);
                data[kept_caps[i] / 32].effective |= 1u << (kept_caps[i] % 32);
        }
        /* With sudo there is no no_new_privs, so the filter goes in while CAP_SYS_ADMIN of the
         * sandbox's user namespace is still held (the kernel's other condition for a filter):
         * it binds every descendant all the same, and nothing can remove it. */
        if (c->sudo && syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &c->seccomp) < 0)
                fail(c, "load seccomp filter");
        if (syscall(SYS_capset, &hdr, data) < 0)
                fail(c, "capset");
        if (c->sudo)
                return;
        /* With no_new_privs an exec never gains more than the permitted set above. */
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                fail(c, "no_new_privs");
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &c->seccomp) < 0)
                fail(c, "load seccomp filter");
}

/* Closes every inherited descriptor above stderr except the three in keep. */
static void close_all_but(const struct ns_child_config *c, int keep[3])
{
        for (int i = 0; i < 3; i++)
                for (int j = i + 1; j < 3; j++)
                        if (keep[j] < keep[i]) {
                                int t = keep[i];
                                keep[i] = keep[j];
                                keep[j] = t;
                        }
        unsigned from = 3;
        for (int i = 0; i < 3; i++) {
                if ((unsigned)keep[i] > from && syscall(SYS_close_range, from, (unsigned)keep[i] - 1, 0) < 0)
                        fail(c, "close inherited descriptors");
                if ((unsigned)keep[i] + 1 > from)
                        from = (unsigned)keep[i] + 1;
        }
        if (syscall(SYS_close_range, from, ~0U, 0) < 0)
                fail(c, "close inherited descriptors");
}

void ns_child_format_uint(char *buf, size_t size, uint64_t v)
{
        char digits[24];
        size_t k = 0, n = 0;
        do {
                digits[k++] = (char)('0' + v % 10);
                v /= 10;
        } while (v && k < sizeof(digits));
        while (k > 0 && n + 1 < size)
                buf[n++] = digits[--k];
        buf[n] = 0;
}

int ns_child_main(void *arg)
{
        const struct ns_child_config *c = arg;
        char go;

        /* 0. Drop everything inherited from spaced (its lock file, sockets, the parent's end of
         *    our socketpair): if spaced dies before saying go, the read below sees EOF. */
        int keep[3] = { c->sync_fd, c->listen_fd, c->agent_fd };
        close_all_but(c, keep);

        /* 1. Wait until the parent has written the id maps and placed us in our cgroups. */
        if (read(c->sync_fd, &go, 1) != 1)
                fail(c, "wait for parent");
        /* Now in the sandbox cgroup: make it the root of our cgroup namespace. */
        if (unshare(CLONE_NEWCGROUP) < 0)
                fail(c, "unshare cgroup namespace");
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                fail(c, "make mounts private");

        /* 2. The idmapped rootfs, prepared by the parent, arrives as a detached mount. It is
         *    attached while we still hold host uid 0, which owns the (0700) run directory. */
        int rootfd = recv_fd(c->sync_fd);
        if (rootfd < 0)
                fail(c, "receive rootfs");
        if (move_mount(rootfd, "", AT_FDCWD, c->root_dir, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                fail(c, "attach rootfs");
        close(rootfd);
        if (chdir(c->root_dir) < 0)
                fail(c, "chdir rootfs");
        /* Raw system calls: glibc's set*id wrappers signal every thread of the process they
         * believe exists (spaced's, copied into this single-threaded child) and can wait forever. */
        if (syscall(SYS_setresgid, 0, 0, 0) < 0 || syscall(SYS_setgroups, 0, NULL) < 0 || syscall(SYS_setresuid, 0, 0, 0) < 0)
                fail(c, "become root in the user namespace");

        /* 3. The kernel file systems and a minimal /dev. */
        ensure_dir(c, "proc", 0555);
        ensure_dir(c, "dev", 0755);
        ensure_dir(c, "tmp", 01777);
        if (mount("proc", "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
                fail(c, "mount /proc");
        setup_dev(c);
        mask_proc(c);
        own_boot_id(c);
        int views[NS_PROC_VIEWS] = { -1, -1, -1, -1 };
        if (c->proc_views) {
                ns_proc_view_mount(views);
                ns_proc_view_cpuinfo(c->cpus);
        }
        if (mount("tmpfs", "tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") < 0)
                fail(c, "mount /tmp");

        /* 4. Switch root and forget the host's tree. */
        if (syscall(SYS_pivot_root, ".", ".") < 0)
                fail(c, "pivot_root");
        if (umount2(".", MNT_DETACH) < 0)
                fail(c, "detach old root");
        if (chdir("/") < 0)
                fail(c, "chdir /");
        if (sethostname(c->hostname, strlen(c->hostname)) < 0)
                fail(c, "sethostname");
        loopback_up(c);

        /* 5. File descriptors: 0-2 /dev/null, 3 the listening socket, 4 the agent binary,
         *    5 the sync socket (close-on-exec: its EOF tells the parent exec succeeded),
         *    6-9 the /proc views' FUSE descriptors (closed where a view is missing). */
        int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
        int lfd = fcntl(c->listen_fd, F_DUPFD_CLOEXEC, 100);
        int afd = fcntl(c->agent_fd, F_DUPFD_CLOEXEC, 100);
        int sfd = fcntl(c->sync_fd, F_DUPFD_CLOEXEC, 100);
        if (devnull < 0 || lfd < 0 || afd < 0 || sfd < 0)
                fail(c, "dup descriptors");
        bool any_view = false;
        for (int i = 0; i < NS_PROC_VIEWS; i++)
                if (views[i] >= 0 && (views[i] = fcntl(views[i], F_DUPFD_CLOEXEC, 100)) < 0)
                        fail(c, "dup view descriptors");
        if (dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0 || dup2(devnull, 2) < 0 || dup2(lfd, 3) < 0 ||
            dup3(afd, 4, O_CLOEXEC) < 0 || dup3(sfd, 5, O_CLOEXEC) < 0)
                fail(c, "place descriptors");
        struct ns_child_config moved = *c;
        moved.sync_fd = 5;
        c = &moved;
        for (int i = 0; i < NS_PROC_VIEWS; i++) {
                if (views[i] < 0) {
                        (void)close(6 + i);
                } else {
                        if (dup3(views[i], 6 + i, 0) < 0)
                                fail(c, "place view descriptors");
                        any_view = true;
                }
        }
        if (syscall(SYS_close_range, 6 + NS_PROC_VIEWS, ~0U, 0) < 0)
                fail(c, "close descriptors");

        /* 6. No way back: no capabilities, no new privileges (but with sudo), a seccomp filter. */
        drop_privileges(c);

        char memory[24], cpus[12];
        ns_child_format_uint(memory, sizeof(memory), c->memory_bytes);
        ns_child_format_uint(cpus, sizeof(cpus), c->cpus ? c->cpus : 1);
        char *const argv[] = { "space-agent", "--listen-fd", "3",  "--memory-bytes",
                               memory,        "--cpus",      cpus, any_view ? "--proc-view" : NULL,
                               "6",           NULL };
        char *const envp[] = { "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", NULL };
        syscall(SYS_execveat, 4, "", argv, envp, AT_EMPTY_PATH);
        fail(c, "exec space-agent");
}
