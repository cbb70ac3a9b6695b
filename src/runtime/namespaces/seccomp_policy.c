#include "runtime/namespaces/seccomp_policy.h"

#include <errno.h>
#include <linux/netlink.h>
#include <sched.h>
#include <stdbool.h>
#include <seccomp.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "runtime/namespaces/seccomp_allowlist.h"

/* Refused with EPERM, so that tools report "Operation not permitted" rather than a missing
 * kernel feature: io_uring (its operations never pass through seccomp), mounting and
 * switching roots, kernel modules and kexec, BPF and perf, the kernel keyring, file handles
 * (the classic container escape), swap, reboot, clocks, accounting, quotas, raw I/O ports,
 * the kernel log, entering other namespaces, userfaultfd (a tool for winning kernel races),
 * fanotify, host and domain names, and the obsolete calls. Anything neither here nor in
 * seccomp_allowlist fails with ENOSYS, as an unknown call would, so libc falls back. */
static const char *const refused[] = {
        "io_uring_setup",
        "io_uring_enter",
        "io_uring_register",
        "mount",
        "umount",
        "umount2",
        "pivot_root",
        "chroot",
        "fsopen",
        "fsconfig",
        "fsmount",
        "fspick",
        "move_mount",
        "open_tree",
        "mount_setattr",
        "kexec_load",
        "kexec_file_load",
        "init_module",
        "finit_module",
        "delete_module",
        "create_module",
        "get_kernel_syms",
        "query_module",
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
        "settimeofday",
        "clock_settime",
        "clock_adjtime",
        "adjtimex",
        "acct",
        "quotactl",
        "quotactl_fd",
        "lookup_dcookie",
        "iopl",
        "ioperm",
        "syslog",
        "vhangup",
        "setns",
        "userfaultfd",
        "fanotify_init",
        "sethostname",
        "setdomainname",
        "uselib",
        "nfsservctl",
        "_sysctl",
        "sysfs",
        "ustat",
};

/* The flags that ask clone() or unshare() for a new namespace. */
static const unsigned long namespace_flags[] = { CLONE_NEWUSER, CLONE_NEWNS,  CLONE_NEWPID,    CLONE_NEWNET,
                                                 CLONE_NEWIPC,  CLONE_NEWUTS, CLONE_NEWCGROUP, CLONE_NEWTIME };

/* personality() values that change nothing unsafe: the Linux and 32-bit Linux personas, the
 * 2.6-style uname, no address randomisation (gdb asks for it; it is cleared on setuid
 * exec), their combinations, and 0xffffffff, which only asks for the current value.
 * READ_IMPLIES_EXEC, MMAP_PAGE_ZERO and the rest are not allowed. */
static const unsigned long personalities[] = { 0x0, 0x8, 0x20000, 0x20008, 0x40000, 0x40008, 0x60000, 0x60008, 0xffffffff };

/* The socket families a sandbox may open; every other family fails with EAFNOSUPPORT
 * (AF_VSOCK, which no network namespace confines, AF_PACKET, AF_KEY, AF_ALG, AF_BLUETOOTH…). */
static const unsigned long socket_families[] = { AF_UNIX, AF_INET, AF_INET6, AF_NETLINK };
/* One past the highest family any kernel has (AF_MAX is 46 in Linux 6.x); every value from
 * here on, and every value with high bits set, is refused by one range rule. */
#define SOCKET_FAMILY_LIMIT 64

static int add_allowlist(scmp_filter_ctx ctx)
{
        bool x86_64 = seccomp_arch_native() == SCMP_ARCH_X86_64;
        for (size_t i = 0; i < seccomp_allowlist_count; i++) {
                int nr = seccomp_syscall_resolve_name(seccomp_allowlist_names[i]);
                if (nr < 0)
                        continue; /* unknown, or not on this architecture */
                int r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; x86_64 && i < seccomp_allowlist_x86_64_count; i++) {
                int nr = seccomp_syscall_resolve_name(seccomp_allowlist_x86_64[i].name);
                int r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr < 0 ? seccomp_allowlist_x86_64[i].nr : nr, 0);
                if (r < 0 && r != -EEXIST)
                        return r;
        }
        return 0;
}

static int add_refused(scmp_filter_ctx ctx)
{
        for (size_t i = 0; i < ARRAY_SIZE(refused); i++) {
                int nr = seccomp_syscall_resolve_name(refused[i]);
                if (nr < 0)
                        continue;
                int r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* clone() and unshare() without namespace flags are allowed; any namespace flag is EPERM.
 * clone3 passes its flags in memory where a filter cannot look: it is on no list, so it gets
 * the default ENOSYS (libseccomp refuses a rule that repeats the default action), and libc
 * falls back to clone, whose flags the filter sees. */
static int add_namespace_rules(scmp_filter_ctx ctx)
{
        unsigned long all = 0;
        for (size_t i = 0; i < ARRAY_SIZE(namespace_flags); i++)
                all |= namespace_flags[i];
        int r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, all, 0));
        if (r == 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(unshare), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, all, 0));
        for (size_t i = 0; r == 0 && i < ARRAY_SIZE(namespace_flags); i++) {
                unsigned long bit = namespace_flags[i];
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, bit, bit));
                if (r == 0)
                        r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 1,
                                             SCMP_A0(SCMP_CMP_MASKED_EQ, bit, bit));
        }
        return r;
}

static bool socket_family_allowed(unsigned long family)
{
        for (size_t i = 0; i < ARRAY_SIZE(socket_families); i++)
                if (socket_families[i] == family)
                        return true;
        return false;
}

/* libseccomp takes one comparison per argument and refuses overlapping rules with different
 * actions, so "every other family" is spelled out: each family number below the limit gets
 * its own rule and one range rule takes the rest. Netlink is for routing information only
 * (ip, getifaddrs): NETLINK_AUDIT, uevents, sock_diag and the rest fail with EPROTONOSUPPORT,
 * which libaudit and ss read as "not available" (ss falls back to /proc/net). socketpair only
 * makes sense for AF_UNIX. */
static int add_socket_rules(scmp_filter_ctx ctx)
{
        int r = 0;
        for (unsigned long family = 0; r == 0 && family < SOCKET_FAMILY_LIMIT; family++) {
                if (family == AF_NETLINK) {
                        r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 2, SCMP_A0(SCMP_CMP_EQ, family),
                                             SCMP_A2(SCMP_CMP_EQ, NETLINK_ROUTE));
                        if (r == 0)
                                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPROTONOSUPPORT), SCMP_SYS(socket), 2,
                                                     SCMP_A0(SCMP_CMP_EQ, family), SCMP_A2(SCMP_CMP_NE, NETLINK_ROUTE));
                } else {
                        r = seccomp_rule_add(ctx, socket_family_allowed(family) ? SCMP_ACT_ALLOW : SCMP_ACT_ERRNO(EAFNOSUPPORT),
                                             SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_EQ, family));
                }
        }
        if (r == 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1,
                                     SCMP_A0(SCMP_CMP_GE, SOCKET_FAMILY_LIMIT));
        if (r == 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socketpair), 1, SCMP_A0(SCMP_CMP_EQ, AF_UNIX));
        if (r == 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socketpair), 1, SCMP_A0(SCMP_CMP_NE, AF_UNIX));
        return r;
}

/* ioctl requests, by the two bytes that name the driver ("type") and the request number
 * within it (see ioctl-number.rst); the kernel truncates the request to 32 bits and, for
 * these, matches the whole 32-bit value, so refusing by type and number whatever the size,
 * direction and high bits is refusing every spelling of the request. Refused with EPERM:
 * - every btrfs request (type 0x94) but the three data ones that ordinary programs make:
 *   FICLONE (9), FICLONERANGE (13), FIDEDUPERANGE (54); cp --reflink is coreutils 9's
 *   default. The rest tell the sandbox the pool's fsid, label, devices (the host's loop
 *   device), subvolume UUIDs, tree contents and space (FS_INFO DEV_INFO GET_DEV_STATS
 *   GET_SUBVOL_INFO GET_SUBVOL_ROOTREF INO_LOOKUP(_USER) TREE_SEARCH(_V2) SPACE_INFO
 *   GET_FEATURES GET_SUPPORTED_FEATURES FS_IOC_GETFSLABEL…), or would let it make
 *   subvolumes inside its own, whose data the sandbox's quota (its subvolume's qgroup)
 *   does not count and its snapshots leave out; a request btrfs adds later is refused
 *   until reviewed. Numbers 9, 13 and 54 name no other btrfs request, so the
 *   other spellings of them reach the kernel only to get ENOTTY.
 * - type 0x15, the generic file-system identity requests of Linux 6.8: FS_IOC_GETFSUUID (0)
 *   and FS_IOC_GETFSSYSFSPATH (1, "btrfs/<fsid>").
 * Everything else passes (terminals, FIONREAD, FS_IOC_GETFLAGS…). */
#define IOCTL_TYPE_BTRFS 0x94
#define IOCTL_TYPE_FS_IDENTITY 0x15
static const unsigned btrfs_data_requests[] = { 9, 13, 54 };
#define IOCTL_BITS 16 /* the type and number: all the filter looks at */

static bool ioctl_refused(unsigned v)
{
        unsigned type = v >> 8, nr = v & 0xff;
        if (type == IOCTL_TYPE_FS_IDENTITY)
                return true;
        if (type != IOCTL_TYPE_BTRFS)
                return false;
        for (size_t i = 0; i < ARRAY_SIZE(btrfs_data_requests); i++)
                if (nr == btrfs_data_requests[i])
                        return false;
        return true;
}

/* "Allow all but these" cannot be said with rules that do not overlap: a rule without
 * conditions silently swallows the conditional ones (libseccomp 2.5.4 accepts them and
 * emits only the allow), and which of two overlapping conditional rules wins is libseccomp's
 * choice. So the 2^16 values of type and number are split into aligned blocks, each as
 * large as it can be while all its values get the same answer, one masked rule per block:
 * the rules partition the space (31 of them), so no order matters and every request
 * matches exactly one. The masks have no high 32 bits, so the bits the kernel ignores are
 * ignored here too. */
static int add_ioctl_block(scmp_filter_ctx ctx, unsigned prefix, unsigned bits)
{
        unsigned size = 1u << (IOCTL_BITS - bits);
        bool refuse = ioctl_refused(prefix);
        bool uniform = true;
        for (unsigned v = prefix + 1; uniform && v < prefix + size; v++)
                uniform = ioctl_refused(v) == refuse;
        if (uniform) {
                scmp_datum_t mask = (0xffffu << (IOCTL_BITS - bits)) & 0xffffu;
                return seccomp_rule_add(ctx, refuse ? SCMP_ACT_ERRNO(EPERM) : SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
                                        SCMP_A1(SCMP_CMP_MASKED_EQ, mask, prefix));
        }
        int r = add_ioctl_block(ctx, prefix, bits + 1);
        if (r == 0)
                r = add_ioctl_block(ctx, prefix | size >> 1, bits + 1);
        return r;
}

/* Unlisted personalities fall to the default action (ENOSYS): libseccomp cannot refuse
 * "any unsafe bit, except in the query value" with EPERM in rules that do not overlap. */
static int add_personality_rules(scmp_filter_ctx ctx)
{
        int r = 0;
        for (size_t i = 0; r == 0 && i < ARRAY_SIZE(personalities); i++)
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(personality), 1, SCMP_A0(SCMP_CMP_EQ, personalities[i]));
        return r;
}

static int export_program(scmp_filter_ctx ctx, struct sock_fprog *ret)
{
        _cleanup_close_ int memfd = memfd_create("seccomp-bpf", MFD_CLOEXEC);
        if (memfd < 0)
                return -errno;
        int r = seccomp_export_bpf(ctx, memfd);
        if (r < 0)
                return r;
        struct stat st;
        if (fstat(memfd, &st) < 0)
                return -errno;
        if (st.st_size <= 0 || st.st_size % sizeof(struct sock_filter) != 0 ||
            st.st_size / sizeof(struct sock_filter) > BPF_MAXINSNS)
                return -EIO;
        _cleanup_free_ struct sock_filter *filter = malloc((size_t)st.st_size);
        if (!filter)
                return -ENOMEM;
        if (pread(memfd, filter, (size_t)st.st_size, 0) != st.st_size)
                return -EIO;
        ret->len = (unsigned short)(st.st_size / sizeof(struct sock_filter));
        ret->filter = TAKE_PTR(filter);
        return 0;
}

int seccomp_policy_build(struct sock_fprog *ret)
{
        /* Only the native ABI: a process that enters the kernel through another one (int 0x80,
         * x32 numbers on x86-64) is killed, so the 32-bit compat paths are out of reach. */
        scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(ENOSYS));
        if (!ctx)
                return -ENOMEM;
        int r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
        if (r == 0)
                r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0); /* the child sets no_new_privs itself */
        /* A binary search over the call numbers rather than a linear scan (libseccomp >= 2.5;
         * an older one builds the same filter, only slower). */
        if (r == 0)
                (void)seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
        if (r == 0)
                r = add_allowlist(ctx);
        if (r == 0)
                r = add_refused(ctx);
        if (r == 0)
                r = add_namespace_rules(ctx);
        if (r == 0)
                r = add_socket_rules(ctx);
        if (r == 0)
                r = add_personality_rules(ctx);
        if (r == 0)
                r = add_ioctl_block(ctx, 0, 0);
        if (r == 0)
                r = export_program(ctx, ret);
        seccomp_release(ctx);
        return r;
}
