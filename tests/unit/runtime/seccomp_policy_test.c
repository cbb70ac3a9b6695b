/* Unit tests of seccomp_policy: the real program is loaded in a forked child, which then
 * makes each call of a table (with arguments the kernel would reject, so that an allowed
 * call does nothing) and reports what came back. */
#include <errno.h>
#include <linux/btrfs.h>
#include <linux/fs.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "runtime/namespaces/seccomp_allowlist.h"
#include "runtime/namespaces/seccomp_policy.h"

#define OK 0 /* the call succeeded (returned >= 0) */

/* Linux 6.8; older uapi headers lack them. */
#ifndef FS_IOC_GETFSUUID
#define FS_IOC_GETFSUUID               \
        _IOR(                          \
                0x15, 0, struct {      \
                        __u8 len;      \
                        __u8 uuid[16]; \
                })
#endif
#ifndef FS_IOC_GETFSSYSFSPATH
#define FS_IOC_GETFSSYSFSPATH           \
        _IOR(                           \
                0x15, 1, struct {       \
                        __u8 len;       \
                        __u8 name[128]; \
                })
#endif
/* Bits above the 32 the kernel keeps of an ioctl request. */
#define HIGH 0x5a5a000100000000L

struct probe {
        const char *what;
        long nr;
        long a[4];
        int want; /* OK, or the errno the filter must give */
};

static const struct probe probes[] = {
        /* ordinary work passes */
        { "getpid", SYS_getpid, { 0 }, OK },
        { "socket(AF_UNIX)", SYS_socket, { AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0 }, OK },
        { "socket(AF_INET)", SYS_socket, { AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0 }, OK },
        { "socket(AF_INET6)", SYS_socket, { AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0 }, OK },
        { "socket(AF_NETLINK, ROUTE)", SYS_socket, { AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE }, OK },
        { "socketpair(AF_UNIX)", SYS_socketpair, { AF_UNIX, SOCK_STREAM, 0, 0 }, EFAULT },
        { "unshare(CLONE_FILES)", SYS_unshare, { CLONE_FILES }, OK },
        { "personality(query)", SYS_personality, { 0xffffffff }, OK },
        { "personality(ADDR_NO_RANDOMIZE)", SYS_personality, { ADDR_NO_RANDOMIZE }, OK },
        { "openat2 with size 0", SYS_openat2, { -1, 0, 0, 0 }, EINVAL },
        { "ptrace(PTRACE_PEEKUSER) of nobody", SYS_ptrace, { 3, 0, 0, 0 }, ESRCH },
        /* io_uring, BPF, perf, keyrings, userfaultfd, kexec, file handles */
        { "io_uring_setup", SYS_io_uring_setup, { 1, 0 }, EPERM },
        { "io_uring_enter", SYS_io_uring_enter, { -1 }, EPERM },
        { "io_uring_register", SYS_io_uring_register, { -1 }, EPERM },
        { "bpf", SYS_bpf, { 0, 0, 0 }, EPERM },
        { "perf_event_open", SYS_perf_event_open, { 0 }, EPERM },
        { "keyctl", SYS_keyctl, { 0 }, EPERM },
        { "add_key", SYS_add_key, { 0 }, EPERM },
        { "request_key", SYS_request_key, { 0 }, EPERM },
        { "userfaultfd", SYS_userfaultfd, { 0 }, EPERM },
        { "kexec_load", SYS_kexec_load, { 0 }, EPERM },
        { "kexec_file_load", SYS_kexec_file_load, { -1, -1 }, EPERM },
        { "open_by_handle_at", SYS_open_by_handle_at, { -1 }, EPERM },
        { "name_to_handle_at", SYS_name_to_handle_at, { -1 }, EPERM },
        /* the mount family and namespaces */
        { "mount", SYS_mount, { 0 }, EPERM },
        { "umount2", SYS_umount2, { 0 }, EPERM },
        { "fsopen", SYS_fsopen, { 0 }, EPERM },
        { "fsmount", SYS_fsmount, { -1 }, EPERM },
        { "fsconfig", SYS_fsconfig, { -1 }, EPERM },
        { "fspick", SYS_fspick, { -1 }, EPERM },
        { "move_mount", SYS_move_mount, { -1 }, EPERM },
        { "open_tree", SYS_open_tree, { -1 }, EPERM },
        { "mount_setattr", SYS_mount_setattr, { -1 }, EPERM },
        { "pivot_root", SYS_pivot_root, { 0 }, EPERM },
        { "chroot", SYS_chroot, { 0 }, EPERM },
        { "setns", SYS_setns, { -1 }, EPERM },
        { "unshare(CLONE_NEWUSER)", SYS_unshare, { CLONE_NEWUSER }, EPERM },
        { "unshare(CLONE_NEWNS)", SYS_unshare, { CLONE_NEWNS }, EPERM },
        { "unshare(CLONE_NEWNET|CLONE_FILES)", SYS_unshare, { CLONE_NEWNET | CLONE_FILES }, EPERM },
        { "clone(CLONE_NEWUSER)", SYS_clone, { CLONE_NEWUSER | SIGCHLD }, EPERM },
        { "clone(CLONE_NEWPID)", SYS_clone, { CLONE_NEWPID | SIGCHLD }, EPERM },
        { "clone3", SYS_clone3, { 0 }, ENOSYS },
        /* personalities that weaken the process */
        { "personality(READ_IMPLIES_EXEC)", SYS_personality, { READ_IMPLIES_EXEC }, ENOSYS },
        { "personality(MMAP_PAGE_ZERO)", SYS_personality, { MMAP_PAGE_ZERO }, ENOSYS },
        /* socket families and protocols */
        { "socket(AF_VSOCK)", SYS_socket, { 40, SOCK_STREAM, 0 }, EAFNOSUPPORT },
        { "socket(AF_PACKET)", SYS_socket, { AF_PACKET, SOCK_RAW, 0 }, EAFNOSUPPORT },
        { "socket(AF_KEY)", SYS_socket, { AF_KEY, SOCK_RAW, 2 }, EAFNOSUPPORT },
        { "socket(AF_ALG)", SYS_socket, { 38, SOCK_SEQPACKET, 0 }, EAFNOSUPPORT },
        { "socket(AF_BLUETOOTH)", SYS_socket, { 31, SOCK_RAW, 0 }, EAFNOSUPPORT },
        { "socket(AF_UNSPEC)", SYS_socket, { AF_UNSPEC, SOCK_STREAM, 0 }, EAFNOSUPPORT },
        { "socket(AF_VSOCK with high bits)", SYS_socket, { 0x100000028L, SOCK_STREAM, 0 }, EAFNOSUPPORT },
        { "socket(AF_INET with high bits)", SYS_socket, { 0x100000002L, SOCK_STREAM, 0 }, EAFNOSUPPORT },
        { "socket(-1)", SYS_socket, { -1, SOCK_STREAM, 0 }, EAFNOSUPPORT },
        { "socket(AF_NETLINK, AUDIT)", SYS_socket, { AF_NETLINK, SOCK_RAW, NETLINK_AUDIT }, EPROTONOSUPPORT },
        { "socket(AF_NETLINK, SOCK_DIAG)", SYS_socket, { AF_NETLINK, SOCK_RAW, NETLINK_SOCK_DIAG }, EPROTONOSUPPORT },
        { "socket(AF_NETLINK, UEVENT)", SYS_socket, { AF_NETLINK, SOCK_RAW, NETLINK_KOBJECT_UEVENT }, EPROTONOSUPPORT },
        { "socketpair(AF_INET)", SYS_socketpair, { AF_INET, SOCK_STREAM, 0, 0 }, EAFNOSUPPORT },
        { "socketpair(AF_VSOCK)", SYS_socketpair, { 40, SOCK_STREAM, 0, 0 }, EAFNOSUPPORT },
        /* ioctl (on fd -1: an allowed request fails with EBADF): what names the host's pool
         * is refused, whatever the high bits; data and terminal requests pass */
        { "ioctl(BTRFS_IOC_FS_INFO)", SYS_ioctl, { -1, BTRFS_IOC_FS_INFO }, EPERM },
        { "ioctl(BTRFS_IOC_DEV_INFO)", SYS_ioctl, { -1, BTRFS_IOC_DEV_INFO }, EPERM },
        { "ioctl(BTRFS_IOC_GET_DEV_STATS)", SYS_ioctl, { -1, BTRFS_IOC_GET_DEV_STATS }, EPERM },
        { "ioctl(BTRFS_IOC_GET_SUBVOL_INFO)", SYS_ioctl, { -1, BTRFS_IOC_GET_SUBVOL_INFO }, EPERM },
        { "ioctl(BTRFS_IOC_GET_SUBVOL_ROOTREF)", SYS_ioctl, { -1, BTRFS_IOC_GET_SUBVOL_ROOTREF }, EPERM },
        { "ioctl(BTRFS_IOC_INO_LOOKUP)", SYS_ioctl, { -1, BTRFS_IOC_INO_LOOKUP }, EPERM },
        { "ioctl(BTRFS_IOC_INO_LOOKUP_USER)", SYS_ioctl, { -1, BTRFS_IOC_INO_LOOKUP_USER }, EPERM },
        { "ioctl(BTRFS_IOC_TREE_SEARCH)", SYS_ioctl, { -1, BTRFS_IOC_TREE_SEARCH }, EPERM },
        { "ioctl(BTRFS_IOC_TREE_SEARCH_V2)", SYS_ioctl, { -1, BTRFS_IOC_TREE_SEARCH_V2 }, EPERM },
        { "ioctl(BTRFS_IOC_SPACE_INFO)", SYS_ioctl, { -1, BTRFS_IOC_SPACE_INFO }, EPERM },
        { "ioctl(BTRFS_IOC_GET_FEATURES)", SYS_ioctl, { -1, BTRFS_IOC_GET_FEATURES }, EPERM },
        { "ioctl(BTRFS_IOC_GET_SUPPORTED_FEATURES)", SYS_ioctl, { -1, BTRFS_IOC_GET_SUPPORTED_FEATURES }, EPERM },
        { "ioctl(BTRFS_IOC_SUBVOL_CREATE)", SYS_ioctl, { -1, BTRFS_IOC_SUBVOL_CREATE }, EPERM },
        { "ioctl(BTRFS_IOC_SNAP_CREATE_V2)", SYS_ioctl, { -1, BTRFS_IOC_SNAP_CREATE_V2 }, EPERM },
        { "ioctl(FS_IOC_GETFSLABEL)", SYS_ioctl, { -1, FS_IOC_GETFSLABEL }, EPERM },
        { "ioctl(FS_IOC_GETFSUUID)", SYS_ioctl, { -1, FS_IOC_GETFSUUID }, EPERM },
        { "ioctl(FS_IOC_GETFSSYSFSPATH)", SYS_ioctl, { -1, FS_IOC_GETFSSYSFSPATH }, EPERM },
        { "ioctl(BTRFS_IOC_FS_INFO with high bits)", SYS_ioctl, { -1, HIGH | BTRFS_IOC_FS_INFO }, EPERM },
        { "ioctl(BTRFS_IOC_DEV_INFO with high bits)", SYS_ioctl, { -1, HIGH | BTRFS_IOC_DEV_INFO }, EPERM },
        { "ioctl(FS_IOC_GETFSUUID with high bits)", SYS_ioctl, { -1, HIGH | FS_IOC_GETFSUUID }, EPERM },
        { "ioctl(FS_IOC_GETFSUUID, all high bits)", SYS_ioctl, { -1, (long)(~0UL << 32) | FS_IOC_GETFSUUID }, EPERM },
        { "ioctl(FICLONE)", SYS_ioctl, { -1, FICLONE }, EBADF },
        { "ioctl(FICLONERANGE)", SYS_ioctl, { -1, FICLONERANGE }, EBADF },
        { "ioctl(FIDEDUPERANGE)", SYS_ioctl, { -1, FIDEDUPERANGE }, EBADF },
        { "ioctl(FICLONE with high bits)", SYS_ioctl, { -1, HIGH | FICLONE }, EBADF },
        { "ioctl(TCGETS)", SYS_ioctl, { -1, TCGETS }, EBADF },
        { "ioctl(TIOCGWINSZ)", SYS_ioctl, { -1, TIOCGWINSZ }, EBADF },
        { "ioctl(TCGETS with high bits)", SYS_ioctl, { -1, HIGH | TCGETS }, EBADF },
        { "ioctl(FIONREAD)", SYS_ioctl, { -1, FIONREAD }, EBADF },
        { "ioctl(FS_IOC_GETFLAGS)", SYS_ioctl, { -1, FS_IOC_GETFLAGS }, EBADF },
        /* calls on no list: the default */
        { "listmount (newer than the lists)", 458, { 0 }, ENOSYS },
        { "lsm_list_modules", 461, { 0 }, ENOSYS },
        { "kcmp", SYS_kcmp, { 0 }, ENOSYS },
        { "pidfd_getfd", SYS_pidfd_getfd, { -1 }, ENOSYS },
        { "modify_ldt", SYS_modify_ldt, { 0 }, ENOSYS },
        { "an unassigned number", 1000, { 0 }, ENOSYS },
};

static struct sock_fprog program;

static int setup(void **state)
{
        (void)state;
        return seccomp_policy_build(&program);
}

static int teardown(void **state)
{
        (void)state;
        free(program.filter);
        return 0;
}

static void load_filter(void)
{
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program) < 0)
                _exit(100);
}

/* Each probe's outcome: OK or the errno. */
static void run_probes(int results[])
{
        int fds[2];
        assert_int_equal(pipe(fds), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                close(fds[0]);
                load_filter();
                for (size_t i = 0; i < ARRAY_SIZE(probes); i++) {
                        const struct probe *p = &probes[i];
                        long r = syscall(p->nr, p->a[0], p->a[1], p->a[2], p->a[3], 0L, 0L);
                        int out = r >= 0 ? OK : errno;
                        if (r >= 0 && (p->nr == SYS_socket))
                                close((int)r);
                        if (write(fds[1], &out, sizeof(out)) != sizeof(out))
                                _exit(101);
                }
                _exit(0);
        }
        close(fds[1]);
        for (size_t i = 0; i < ARRAY_SIZE(probes); i++)
                assert_int_equal(read(fds[0], &results[i], sizeof(int)), sizeof(int));
        close(fds[0]);
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_table(void **state)
{
        (void)state;
        int results[ARRAY_SIZE(probes)];
        run_probes(results);
        int wrong = 0;
        for (size_t i = 0; i < ARRAY_SIZE(probes); i++)
                if (results[i] != probes[i].want) {
                        print_error("%s: got %s, want %s\n", probes[i].what, results[i] ? strerror(results[i]) : "success",
                                    probes[i].want ? strerror(probes[i].want) : "success");
                        wrong++;
                }
        assert_int_equal(wrong, 0);
}

/* Runs fn in a child, under the filter or not, and returns its wait status. */
static int status_of(void (*fn)(void), bool filtered)
{
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                /* cmocka's handlers would turn a fatal signal into an exit status */
                signal(SIGSEGV, SIG_DFL);
                signal(SIGSYS, SIG_DFL);
                signal(SIGILL, SIG_DFL);
                signal(SIGBUS, SIG_DFL);
                if (filtered)
                        load_filter();
                fn();
                _exit(0);
        }
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        return status;
}

static void int80_getpid(void)
{
        long r = 20; /* getpid in the i386 table */
#if defined(__x86_64__)
        __asm__ volatile("int $0x80" : "+a"(r) : : "memory", "r8", "r9", "r10", "r11", "cc");
#endif
        _exit(r == getpid() ? 0 : 1);
}

static void x32_getpid(void)
{
        long r = syscall(0x40000000L | SYS_getpid);
        _exit(r == getpid() ? 0 : 1);
}

/* The 32-bit ABIs are refused wholesale: the process is killed (SIGSYS) before the call
 * runs. A kernel may lack an ABI (no CONFIG_X86_X32_ABI; some hypervisors fault on int
 * 0x80): then the call must still not return to the program with an answer. */
static void expect_killed(void (*fn)(void), const char *abi)
{
        int bare = status_of(fn, false);
        int status = status_of(fn, true);
        if (WIFEXITED(bare) && WEXITSTATUS(bare) == 0) {
                assert_true(WIFSIGNALED(status));
                assert_int_equal(WTERMSIG(status), SIGSYS);
                return;
        }
        print_message("note: the kernel itself does not offer the %s ABI (status %#x); filtered status %#x\n", abi, bare, status);
        assert_false(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        if (!WIFSIGNALED(bare))
                assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS); /* ENOSYS bare: the filter kills */
}

static void test_32bit_abis_killed(void **state)
{
        (void)state;
        expect_killed(int80_getpid, "i386 (int 0x80)");
        expect_killed(x32_getpid, "x32");
}

static void fork_and_wait(void)
{
        pid_t pid = fork();
        if (pid < 0)
                _exit(2);
        if (pid == 0)
                _exit(7);
        int status;
        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 7)
                _exit(3);
}

static void test_fork_works(void **state)
{
        (void)state;
        int status = status_of(fork_and_wait, true);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
}

/* What the policy means for an ioctl request: by its type and number alone. */
static int ioctl_want(unsigned long request)
{
        unsigned type = (request >> 8) & 0xff, nr = request & 0xff;
        if (type == 0x15)
                return EPERM;
        if (type == 0x94 && nr != 9 && nr != 13 && nr != 54)
                return EPERM;
        return EBADF;
}

/* Every type and number, each under several sizes, directions and high bits: the filter's
 * blocks must add up to exactly the policy, with no value falling to the default. */
static void exhaustive_ioctls(void)
{
        static const unsigned long upper[] = { 0,
                                               0x40040000UL,
                                               0x80110000UL,
                                               0xc0ff0000UL,
                                               0x3fff0000UL,
                                               0x5a5a000100000000UL,
                                               0xffffffff00000000UL,
                                               0x8000000000000000UL };
        for (size_t u = 0; u < ARRAY_SIZE(upper); u++)
                for (unsigned long v = 0; v < 0x10000; v++) {
                        unsigned long request = upper[u] | v;
                        long r = syscall(SYS_ioctl, -1, request, 0L);
                        if (r >= 0 || errno != ioctl_want(request))
                                _exit(10 + (int)u); /* the status says which pattern */
                }
}

static void test_ioctl_every_request(void **state)
{
        (void)state;
        int status = status_of(exhaustive_ioctls, true);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
}

/* A misspelt name would silently allow nothing: every name must resolve here. */
static void test_allowlist_names_resolve(void **state)
{
        (void)state;
        for (size_t i = 0; i < seccomp_allowlist_count; i++)
                if (seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86_64, seccomp_allowlist_names[i]) < 0)
                        fail_msg("%s is not an x86-64 system call", seccomp_allowlist_names[i]);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_table),
                cmocka_unit_test(test_32bit_abis_killed),
                cmocka_unit_test(test_fork_works),
                cmocka_unit_test(test_ioctl_every_request),
                cmocka_unit_test(test_allowlist_names_resolve),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
