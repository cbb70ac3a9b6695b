#include "runtime/namespaces/seccomp_allowlist.h"

/* Modelled on what the Docker/moby default profile lets an unprivileged container do, minus
 * what a sandbox has no use for and what has a record of kernel bugs reachable from an
 * unprivileged user namespace: io_uring (its operations never pass through seccomp), the
 * mount API, keyrings, BPF, perf, fanotify, kcmp/pidfd_getfd, NUMA policy, modify_ldt,
 * memfd_secret and every call that needs a capability root inside does not hold. ptrace
 * stays (debuggers and strace work; the pid namespace bounds what can be traced). */
/* One line per group of syscalls, not one per name: */
/* clang-format off */
const char *const seccomp_allowlist_names[] = {
        /* descriptors and file I/O */
        "read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "preadv2", "pwritev", "pwritev2",
        "open", "openat", "openat2", "creat", "close", "close_range", "lseek", "dup", "dup2", "dup3", "fcntl",
        "flock", "fsync", "fdatasync", "sync", "syncfs", "sync_file_range", "fallocate", "ftruncate", "truncate",
        "fadvise64", "readahead", "copy_file_range", "sendfile", "splice", "tee", "vmsplice", "pipe", "pipe2",
        /* ioctl: see seccomp_policy (an unconditional allow here would swallow its rules) */
        /* the file tree */
        "stat", "fstat", "lstat", "newfstatat", "statx", "statfs", "fstatfs", "access", "faccessat", "faccessat2",
        "readlink", "readlinkat", "getdents", "getdents64", "getcwd", "chdir", "fchdir", "mkdir", "mkdirat",
        "rmdir", "unlink", "unlinkat", "rename", "renameat", "renameat2", "link", "linkat", "symlink",
        "symlinkat", "chmod", "fchmod", "fchmodat", "chown", "fchown", "lchown", "fchownat", "umask", "utime",
        "utimes", "utimensat", "futimesat", "mknod", "mknodat", "setxattr", "lsetxattr", "fsetxattr",
        "getxattr", "lgetxattr", "fgetxattr", "listxattr", "llistxattr", "flistxattr", "removexattr",
        "lremovexattr", "fremovexattr", "inotify_init", "inotify_init1", "inotify_add_watch",
        "inotify_rm_watch",
        /* Linux AIO (databases use it; unlike io_uring every submission is an ordinary call) */
        "io_setup", "io_destroy", "io_submit", "io_cancel", "io_getevents", "io_pgetevents",
        /* memory */
        "brk", "mmap", "munmap", "mremap", "mprotect", "madvise", "mincore", "msync", "mlock", "mlock2",
        "munlock", "mlockall", "munlockall", "membarrier", "memfd_create", "remap_file_pages", "pkey_alloc",
        "pkey_free", "pkey_mprotect",
        /* processes (clone and unshare: see seccomp_policy) */
        "fork", "vfork", "execve", "execveat", "exit", "exit_group", "wait4", "waitid", "kill", "tkill",
        "tgkill", "getpid", "getppid", "gettid", "getpgid", "setpgid", "getpgrp", "getsid", "setsid",
        "getpriority", "setpriority", "sched_yield", "sched_getaffinity", "sched_setaffinity", "sched_getattr",
        "sched_setattr", "sched_getparam", "sched_setparam", "sched_getscheduler", "sched_setscheduler",
        "sched_get_priority_max", "sched_get_priority_min", "sched_rr_get_interval", "prlimit64", "getrlimit",
        "setrlimit", "getrusage", "times", "set_tid_address", "set_robust_list", "get_robust_list", "rseq",
        "arch_prctl", "prctl", "capget", "capset", "seccomp", "pidfd_open", "pidfd_send_signal",
        "process_mrelease", "ptrace", "process_vm_readv", "process_vm_writev", "ioprio_get", "ioprio_set",
        "uname", "sysinfo", "getrandom", "restart_syscall", "getcpu", "landlock_create_ruleset",
        "landlock_add_rule", "landlock_restrict_self",
        /* credentials (within the sandbox's own user namespace) */
        "getuid", "geteuid", "getgid", "getegid", "getresuid", "getresgid", "getgroups", "setuid", "setgid",
        "setreuid", "setregid", "setresuid", "setresgid", "setfsuid", "setfsgid", "setgroups",
        /* signals */
        "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending", "rt_sigsuspend", "rt_sigtimedwait",
        "rt_sigqueueinfo", "rt_tgsigqueueinfo", "sigaltstack", "signalfd", "signalfd4", "pause", "alarm",
        /* time (reading it; setting clocks is refused) */
        "clock_gettime", "clock_getres", "clock_nanosleep", "nanosleep", "gettimeofday", "time", "getitimer",
        "setitimer", "timer_create", "timer_delete", "timer_gettime", "timer_settime", "timer_getoverrun",
        "timerfd_create", "timerfd_gettime", "timerfd_settime",
        /* waiting */
        "futex", "futex_waitv", "epoll_create", "epoll_create1", "epoll_ctl", "epoll_wait", "epoll_pwait",
        "epoll_pwait2", "poll", "ppoll", "select", "pselect6", "eventfd", "eventfd2",
        /* System V and POSIX IPC (the sandbox has its own ipc namespace) */
        "shmget", "shmat", "shmdt", "shmctl", "semget", "semop", "semtimedop", "semctl", "msgget", "msgsnd",
        "msgrcv", "msgctl", "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify",
        "mq_getsetattr",
        /* sockets once made (which sockets may be made: see seccomp_policy) */
        "bind", "listen", "accept", "accept4", "connect", "getsockname", "getpeername", "getsockopt",
        "setsockopt", "sendto", "recvfrom", "sendmsg", "recvmsg", "sendmmsg", "recvmmsg", "shutdown",
};
/* clang-format on */
const size_t seccomp_allowlist_count = sizeof(seccomp_allowlist_names) / sizeof(seccomp_allowlist_names[0]);

/* Calls newer than some libseccomp releases know by name, with their x86-64 numbers:
 * fchmodat2 (glibc 2.39 tries it first for fchmodat(AT_SYMLINK_NOFOLLOW)), the futex2 calls,
 * map_shadow_stack (CET shadow stacks) and mseal, all acting on the caller's own objects. */
const struct seccomp_allowlist_number seccomp_allowlist_x86_64[] = {
        { "fchmodat2", 452 },  { "map_shadow_stack", 453 }, { "futex_wake", 454 },
        { "futex_wait", 455 }, { "futex_requeue", 456 },    { "mseal", 462 },
};
const size_t seccomp_allowlist_x86_64_count = sizeof(seccomp_allowlist_x86_64) / sizeof(seccomp_allowlist_x86_64[0]);
