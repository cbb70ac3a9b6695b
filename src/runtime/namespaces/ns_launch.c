#include "runtime/namespaces/ns_launch.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "runtime/cgroup/cgroup_manager.h"
#include "runtime/namespaces/ns_child.h"

#define CHILD_STACK_SIZE (256 * 1024)

static int write_proc(pid_t pid, const char *file, const char *text)
{
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t len = (ssize_t)strlen(text);
        return write(fd, text, (size_t)len) == len ? 0 : -errno;
}

static int write_map(pid_t pid, const char *file, uint32_t base)
{
        char map[64];
        snprintf(map, sizeof(map), "0 %u 65536\n", base);
        return write_proc(pid, file, map);
}

static int listen_socket(const char *path)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, path);
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        unlink(path);
        if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(path, 0600) < 0 || listen(fd, 128) < 0)
                return -errno;
        return TAKE_FD(fd);
}

/* An idmapped, nosuid, nodev clone of the rootfs subvolume, mapped through the child's user
 * namespace so that host root's files appear owned by root inside. With sudo the clone is
 * suid (the pool's own mount stays nosuid): a setuid file there raises its runner to its
 * owner as the idmap shows it, a uid of the sandbox's range, never a host id outside it. */
static int idmapped_rootfs(const char *rootfs, pid_t pid, bool sudo)
{
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
        _cleanup_close_ int userns = open(path, O_RDONLY | O_CLOEXEC);
        if (userns < 0)
                return -errno;
        _cleanup_close_ int tree = open_tree(AT_FDCWD, rootfs, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
        if (tree < 0)
                return -errno;
        struct mount_attr attr = {
                .attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NODEV | (sudo ? 0 : MOUNT_ATTR_NOSUID),
                .attr_clr = sudo ? MOUNT_ATTR_NOSUID : 0,
                .userns_fd = (uint64_t)userns,
        };
        if (mount_setattr(tree, "", AT_EMPTY_PATH, &attr, sizeof(attr)) < 0)
                return -errno;
        return TAKE_FD(tree);
}

static int send_go(int sock, int fd)
{
        char byte = 'g';
        char cbuf[CMSG_SPACE(sizeof(int))];
        memset(cbuf, 0, sizeof(cbuf));
        struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
        /* First the plain "go" byte the child blocks on, then the byte that carries the fd. */
        if (write(sock, &byte, 1) != 1)
                return -errno;
        struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
        struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &fd, sizeof(int));
        return sendmsg(sock, &msg, MSG_NOSIGNAL) == 1 ? 0 : -errno;
}

pid_t ns_launch(const struct ns_launch_params *p, int *ret_pidfd, struct space_error *err)
{
        struct ns_child_config *cfg = NULL;
        void *stack = MAP_FAILED;
        int pair[2] = { -1, -1 };
        _cleanup_close_ int lfd = -1;
        _cleanup_close_ int tree = -1;
        pid_t pid = -1;
        int pidfd = -1;
        int r;

        lfd = listen_socket(p->socket_path);
        if (lfd < 0)
                return space_error_errno(err, lfd, "listen on %s", p->socket_path);
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0)
                return space_error_errno(err, errno, "socketpair");
        /* The config and stack are mmap'd so the child's copy is never shared heap state. */
        cfg = mmap(NULL, sizeof(*cfg), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        stack = mmap(NULL, CHILD_STACK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
        if (cfg == MAP_FAILED || stack == MAP_FAILED) {
                space_error_errno(err, errno, "mmap");
                goto out;
        }
        cfg->sync_fd = pair[1];
        cfg->listen_fd = lfd;
        cfg->agent_fd = p->agent_fd;
        snprintf(cfg->root_dir, sizeof(cfg->root_dir), "%s/root", p->run_dir);
        snprintf(cfg->hostname, sizeof(cfg->hostname), "%s", p->id);
        cfg->proc_views = p->proc_views;
        cfg->memory_bytes = p->memory_bytes;
        cfg->cpus = p->cpus;
        cfg->sudo = p->sudo;
        cfg->seccomp = *p->seccomp;
        if (mkdir(cfg->root_dir, 0700) < 0 && errno != EEXIST) {
                space_error_errno(err, errno, "mkdir %s", cfg->root_dir);
                goto out;
        }

        pid = clone(ns_child_main, (char *)stack + CHILD_STACK_SIZE,
                    CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_PIDFD |
                            SIGCHLD,
                    cfg, &pidfd);
        if (pid < 0) {
                space_error_errno(err, errno, "clone");
                goto out;
        }
        close(pair[1]);
        pair[1] = -1;

        if ((r = write_map(pid, "uid_map", p->uid_base)) < 0 || (r = write_map(pid, "gid_map", p->uid_base)) < 0) {
                space_error_errno(err, r, "write id map");
                goto fail;
        }
        if ((r = p->cgroups->ops->attach(p->cgroups, p->id, pid)) < 0) {
                space_error_errno(err, r, "join cgroup");
                goto fail;
        }
        /* The agent should outlive whatever exhausts the sandbox's memory: if it were
         * OOM-killed the whole sandbox would die. Commands reset this (see space-agent).
         * Best effort: a host that withholds CAP_SYS_RESOURCE from spaced refuses it. */
        write_proc(pid, "oom_score_adj", "-1000\n");
        tree = idmapped_rootfs(p->rootfs, pid, p->sudo);
        if (tree < 0) {
                space_error_errno(err, tree, "idmapped mount of %s", p->rootfs);
                goto fail;
        }
        if ((r = send_go(pair[0], tree)) < 0) {
                space_error_errno(err, r, "hand rootfs to sandbox");
                goto fail;
        }
        /* EOF means the child exec'd the agent (the socket is close-on-exec); text is an error. */
        char msg[200];
        ssize_t n;
        do
                n = read(pair[0], msg, sizeof(msg) - 1);
        while (n < 0 && errno == EINTR);
        if (n != 0) {
                msg[n > 0 ? n : 0] = '\0';
                space_error_set(err, SPACE_E_INTERNAL, "sandbox setup failed at %s", n > 0 ? msg : "unknown step");
                goto fail;
        }
        *ret_pidfd = pidfd;
        goto out;
fail:
        kill(pid, SIGKILL);
        if (pidfd >= 0) {
                siginfo_t info;
                waitid(P_PIDFD, (id_t)pidfd, &info, WEXITED);
                close(pidfd);
        }
        pid = -1;
out:
        if (pair[0] >= 0)
                close(pair[0]);
        if (pair[1] >= 0)
                close(pair[1]);
        if (stack != MAP_FAILED)
                munmap(stack, CHILD_STACK_SIZE);
        if (cfg != MAP_FAILED && cfg)
                munmap(cfg, sizeof(*cfg));
        return pid;
}
