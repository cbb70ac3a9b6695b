/* seccomp_probe: a static program test_security_seccomp.py copies into a sandbox. It makes
 * each call named on its command line (or every call with "all") with arguments a kernel
 * would reject or that do nothing, and prints one line per call: "<name> ok" when the call
 * succeeded, "<name> errno <N>" when it failed, "<name> signal <N>" when it killed the
 * process. Built by the test with musl-gcc -static (or gcc -static). */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

struct call {
        const char *name;
        long nr;
        long a[5];
};

/* Raw numbers (x86-64) so that the probe does not depend on the headers it is built with. */
static const struct call calls[] = {
        { "io_uring_setup", 425, { 1, 0 } },
        { "io_uring_enter", 426, { -1 } },
        { "io_uring_register", 427, { -1 } },
        { "bpf", 321, { -1, 0, 0 } },
        { "userfaultfd", 323, { 0 } },
        { "keyctl", 250, { -1 } },
        { "add_key", 248, { 0 } },
        { "request_key", 249, { 0 } },
        { "perf_event_open", 298, { 0, 0, -1, -1, 0 } },
        { "kexec_load", 246, { 0, 1, 0, 0 } },
        { "kexec_file_load", 320, { -1, -1, 0, 0, 0 } },
        { "open_by_handle_at", 304, { -1, 0, 0 } },
        { "name_to_handle_at", 303, { -1, 0, 0, 0, 0 } },
        { "mount", 165, { 0, 0, 0, 0, 0 } },
        { "umount2", 166, { 0, 0 } },
        { "fsopen", 430, { 0, 0 } },
        { "fsmount", 432, { -1, 0, 0 } },
        { "fsconfig", 431, { -1, 0, 0, 0, 0 } },
        { "fspick", 433, { -1, 0, 0 } },
        { "move_mount", 429, { -1, 0, -1, 0, 0 } },
        { "open_tree", 428, { -1, 0, 0 } },
        { "mount_setattr", 442, { -1, 0, 0, 0, 0 } },
        { "pivot_root", 155, { 0, 0 } },
        { "setns", 308, { -1, 0 } },
        { "unshare_newuser", 272, { CLONE_NEWUSER } },
        { "unshare_newns", 272, { CLONE_NEWNS } },
        { "unshare_newnet", 272, { CLONE_NEWNET } },
        { "clone_newuser", 56, { CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0 } },
        { "clone_newpid", 56, { CLONE_NEWPID | SIGCHLD, 0, 0, 0, 0 } },
        { "clone3", 435, { 0, 0 } },
        { "personality_read_implies_exec", 135, { 0x0400000 } },
        { "personality_mmap_page_zero", 135, { 0x0100000 } },
        { "socket_vsock", 41, { 40, 1, 0 } },
        { "socket_packet", 41, { 17, 3, 0 } },
        { "socket_alg", 41, { 38, 5, 0 } },
        { "socket_key", 41, { 15, 3, 2 } },
        { "socket_bluetooth", 41, { 31, 3, 0 } },
        { "socket_netlink_audit", 41, { 16, 3, 9 } },
        { "socket_netlink_uevent", 41, { 16, 3, 15 } },
        { "socket_vsock_high_bits", 41, { 0x100000028L, 1, 0 } },
        { "socketpair_vsock", 53, { 40, 1, 0, 0 } },
        { "socketpair_inet", 53, { 2, 1, 0, 0 } },
        /* newer than the libseccomp spaced is built with knows */
        { "listmount", 458, { 0, 0, 0, 0 } },
        { "lsm_list_modules", 461, { 0, 0, 0 } },
        /* what must keep working */
        { "socket_unix", 41, { 1, 1, 0 } },
        { "socket_inet", 41, { 2, 2, 0 } },
        { "socket_inet6", 41, { 10, 1, 0 } },
        { "socket_netlink_route", 41, { 16, 3, 0 } },
        { "socketpair_unix", 53, { 1, 1, 0, 0 } }, /* EFAULT: no array */
        { "unshare_files", 272, { CLONE_FILES } },
        { "personality_query", 135, { 0xffffffff } },
};

/* Each call runs in a child, so that a call that succeeds (a clone, an unshare) or kills
 * leaves the probe as it was. */
static void run(const struct call *c)
{
        int fds[2];
        if (pipe(fds) < 0)
                exit(2);
        pid_t pid = fork();
        if (pid < 0)
                exit(2);
        if (pid == 0) {
                close(fds[0]);
                long r = syscall(c->nr, c->a[0], c->a[1], c->a[2], c->a[3], c->a[4], 0L);
                if (r == 0 && c->nr == 56)
                        _exit(0); /* the new child of a clone that went through */
                int out = r >= 0 ? 0 : errno;
                (void)!write(fds[1], &out, sizeof(out));
                _exit(0);
        }
        close(fds[1]);
        int out = -1;
        ssize_t n = read(fds[0], &out, sizeof(out));
        close(fds[0]);
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        if (n != sizeof(out) && WIFSIGNALED(status))
                printf("%s signal %d\n", c->name, WTERMSIG(status));
        else if (n != sizeof(out))
                printf("%s lost\n", c->name);
        else if (out == 0)
                printf("%s ok\n", c->name);
        else
                printf("%s errno %d\n", c->name, out);
}

/* The 32-bit ABIs: getpid through int 0x80 (i386) and with the x32 bit. */
static void abi(const char *name, int x32)
{
        pid_t pid = fork();
        if (pid < 0)
                exit(2);
        if (pid == 0) {
                long r;
                if (x32) {
                        r = syscall(0x40000000L | 39);
                } else {
                        r = 20;
                        __asm__ volatile("int $0x80" : "+a"(r) : : "memory", "r8", "r9", "r10", "r11", "cc");
                }
                _exit(r == getpid() ? 0 : 1);
        }
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        if (WIFSIGNALED(status))
                printf("%s signal %d\n", name, WTERMSIG(status));
        else
                printf("%s %s\n", name, WEXITSTATUS(status) == 0 ? "ok" : "failed");
}

int main(int argc, char **argv)
{
        for (int i = 1; i < argc; i++) {
                int all = strcmp(argv[i], "all") == 0;
                for (size_t j = 0; j < sizeof(calls) / sizeof(calls[0]); j++)
                        if (all || strcmp(argv[i], calls[j].name) == 0)
                                run(&calls[j]);
                if (all || strcmp(argv[i], "abi_i386") == 0)
                        abi("abi_i386", 0);
                if (all || strcmp(argv[i], "abi_x32") == 0)
                        abi("abi_x32", 1);
                fflush(stdout);
        }
        return 0;
}
