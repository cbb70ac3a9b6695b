#include "runtime/namespaces/seccomp_policy.h"

#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"

/* System calls that fail with EPERM inside a sandbox: mounting and switching roots, kernel
 * modules and kexec, BPF and perf, the kernel keyring, file handles (container escapes),
 * swap, reboot, clocks, accounting, quotas and raw I/O ports. */
static const char *const denied[] = {
        "mount", "umount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig", "fsmount", "fspick",
        "move_mount", "open_tree", "mount_setattr", "kexec_load", "kexec_file_load", "init_module",
        "finit_module", "delete_module", "bpf", "perf_event_open", "keyctl", "add_key", "request_key",
        "open_by_handle_at", "name_to_handle_at", "reboot", "swapon", "swapoff", "settimeofday",
        "clock_settime", "clock_settime64", "clock_adjtime", "clock_adjtime64", "adjtimex", "stime", "acct",
        "quotactl", "quotactl_fd", "lookup_dcookie", "iopl", "ioperm", "syslog", "vhangup", "uselib",
        "nfsservctl", "setns", "userfaultfd", "create_module", "get_kernel_syms", "query_module",
        "_sysctl", "sysfs", "ustat", "vm86", "vm86old",
};

int seccomp_policy_build(struct sock_fprog *ret)
{
        scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
        if (!ctx)
                return -ENOMEM;
        int r = 0;
        /* Cover the 32-bit ABIs too, or a syscall could be reached through int 0x80. */
        seccomp_arch_add(ctx, SCMP_ARCH_X86);
        seccomp_arch_add(ctx, SCMP_ARCH_X32);
        for (size_t i = 0; i < ARRAY_SIZE(denied) && r == 0; i++) {
                int nr = seccomp_syscall_resolve_name(denied[i]);
                if (nr == __NR_SCMP_ERROR)
                        continue; /* not on this architecture */
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
                if (r == -EDOM || r == -EINVAL)
                        r = 0; /* pseudo-syscall missing on some arches */
        }
        /* No new user namespaces (and no other namespaces via unshare/clone either). */
        const unsigned long ns_flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC |
                                       CLONE_NEWUTS | CLONE_NEWCGROUP | CLONE_NEWTIME;
        if (r == 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 1,
                                     SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER));
        for (unsigned long bit = 1; r == 0 && bit; bit <<= 1) {
                if (!(ns_flags & bit))
                        continue;
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, bit, bit));
                if (r == 0 && bit != CLONE_NEWUSER)
                        r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 1,
                                             SCMP_A0(SCMP_CMP_MASKED_EQ, bit, bit));
        }
        /* clone3 passes flags in memory where a filter cannot look: make libc fall back to clone. */
        if (r == 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
        if (r == 0)
                r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0); /* the child sets no_new_privs itself */

        _cleanup_close_ int memfd = -1;
        if (r == 0) {
                memfd = memfd_create("seccomp-bpf", MFD_CLOEXEC);
                if (memfd < 0)
                        r = -errno;
        }
        if (r == 0)
                r = seccomp_export_bpf(ctx, memfd);
        seccomp_release(ctx);
        if (r < 0)
                return r;

        struct stat st;
        if (fstat(memfd, &st) < 0)
                return -errno;
        if (st.st_size <= 0 || st.st_size % sizeof(struct sock_filter) != 0)
                return -EIO;
        struct sock_filter *filter = malloc((size_t)st.st_size);
        if (!filter)
                return -ENOMEM;
        if (pread(memfd, filter, (size_t)st.st_size, 0) != st.st_size) {
                free(filter);
                return -EIO;
        }
        ret->len = (unsigned short)(st.st_size / sizeof(struct sock_filter));
        ret->filter = filter;
        return 0;
}
