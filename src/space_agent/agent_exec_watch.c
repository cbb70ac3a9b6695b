/* agent_exec_watch: seccomp user notifications for a job's execs, checked by spaced. */
#include "space_agent/agent_exec_watch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "space_agent/agent_cleanup.h"
#include "space_agent/agent_job.h"
#include "space_agent/agent_seccomp_abi.h"
#include "space_agent/agent_subscriber.h"

#ifndef AT_FDCWD
#define AT_FDCWD -100
#endif
#ifndef AT_EMPTY_PATH
#define AT_EMPTY_PATH 0x1000
#endif

/* clang-format off */
#define JEQ(k, jt, jf) { SECCOMP_ABI_BPF_JEQ_K, (jt), (jf), (k) }
#define LOAD(off) { SECCOMP_ABI_BPF_LD_W_ABS, 0, 0, (off) }
#define RET(k) { SECCOMP_ABI_BPF_RET_K, 0, 0, (k) }

/* execve and execveat of every ABI the sandbox's own filter admits notify; all else is
 * that filter's business (the stricter answer of the two wins). */
static struct seccomp_abi_sock_filter exec_filter[] = {
#if defined(__x86_64__)
        /* 0 */ LOAD(SECCOMP_ABI_DATA_ARCH_OFFSET),
        /* 1 */ JEQ(SECCOMP_ABI_AUDIT_ARCH_X86_64, 0, 6),
        /* 2 */ LOAD(SECCOMP_ABI_DATA_NR_OFFSET),
        /* 3 */ JEQ(59, 9, 0),                            /* execve */
        /* 4 */ JEQ(322, 8, 0),                           /* execveat */
        /* 5 */ JEQ(SECCOMP_ABI_X32_BIT | 520, 7, 0),     /* x32 execve */
        /* 6 */ JEQ(SECCOMP_ABI_X32_BIT | 545, 6, 0),     /* x32 execveat */
        /* 7 */ RET(SECCOMP_ABI_RET_ALLOW),
        /* 8 */ JEQ(SECCOMP_ABI_AUDIT_ARCH_I386, 0, 3),
        /* 9 */ LOAD(SECCOMP_ABI_DATA_NR_OFFSET),
        /* 10 */ JEQ(11, 2, 0),                           /* i386 execve */
        /* 11 */ JEQ(358, 1, 0),                          /* i386 execveat */
        /* 12 */ RET(SECCOMP_ABI_RET_ALLOW),
        /* 13 */ RET(SECCOMP_ABI_RET_USER_NOTIF),
#elif defined(__aarch64__)
        /* 0 */ LOAD(SECCOMP_ABI_DATA_ARCH_OFFSET),
        /* 1 */ JEQ(SECCOMP_ABI_AUDIT_ARCH_AARCH64, 0, 3),
        /* 2 */ LOAD(SECCOMP_ABI_DATA_NR_OFFSET),
        /* 3 */ JEQ(221, 2, 0),                           /* execve */
        /* 4 */ JEQ(281, 1, 0),                           /* execveat */
        /* 5 */ RET(SECCOMP_ABI_RET_ALLOW),
        /* 6 */ RET(SECCOMP_ABI_RET_USER_NOTIF),
#endif
};
/* clang-format on */

int agent_exec_watch_install(int sock)
{
        if (sizeof exec_filter == 0)
                return -ENOSYS;
        struct seccomp_abi_sock_fprog prog = { .len = (unsigned short)(sizeof exec_filter / sizeof exec_filter[0]),
                                               .filter = exec_filter };
        long fd = syscall(SYS_seccomp, SECCOMP_ABI_SET_MODE_FILTER, SECCOMP_ABI_FILTER_FLAG_NEW_LISTENER, &prog);
        if (fd < 0 && errno == EACCES) {
                /* Without CAP_SYS_ADMIN a filter needs no_new_privs (the namespace runtime's
                 * sandbox has it already). */
                if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                        return -errno;
                fd = syscall(SYS_seccomp, SECCOMP_ABI_SET_MODE_FILTER, SECCOMP_ABI_FILTER_FLAG_NEW_LISTENER, &prog);
        }
        if (fd < 0)
                return -errno;
        char control[CMSG_SPACE(sizeof(int))] = { 0 };
        char byte = 'w';
        struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
        struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control };
        struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        int lfd = (int)fd;
        memcpy(CMSG_DATA(cm), &lfd, sizeof lfd);
        ssize_t n;
        do
                n = sendmsg(sock, &msg, MSG_NOSIGNAL);
        while (n < 0 && errno == EINTR);
        int r = n < 0 ? -errno : 0;
        close(lfd);
        return r;
}

int agent_exec_watch_receive(int sock)
{
        char control[CMSG_SPACE(sizeof(int))] = { 0 };
        char byte;
        struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
        struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control };
        ssize_t n;
        do
                n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
        if (n == 0 || !cm || cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS || cm->cmsg_len != CMSG_LEN(sizeof(int)))
                return -ECONNRESET;
        int fd;
        memcpy(&fd, CMSG_DATA(cm), sizeof fd);
        return fd;
}

/* ---- reading the trapped process ---- */

static int mem_read_string(pid_t pid, uint64_t addr, char *buf, size_t size)
{
        size_t got = 0;
        while (got < size) {
                size_t chunk = 4096 - (size_t)((addr + got) & 4095);
                if (chunk > size - got)
                        chunk = size - got;
                struct iovec local = { buf + got, chunk }, remote = { (void *)(uintptr_t)(addr + got), chunk };
                ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
                if (n <= 0)
                        return n < 0 ? -errno : -EFAULT;
                char *nul = memchr(buf + got, 0, (size_t)n);
                if (nul)
                        return (int)(nul - buf);
                got += (size_t)n;
        }
        return -E2BIG;
}

static int mem_read_pointer(pid_t pid, uint64_t addr, size_t width, uint64_t *ret)
{
        uint64_t v = 0;
        uint32_t v32 = 0;
        void *into = width == 4 ? (void *)&v32 : (void *)&v;
        struct iovec local = { into, width }, remote = { (void *)(uintptr_t)addr, width };
        ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
        if (n != (ssize_t)width)
                return n < 0 ? -errno : -EFAULT;
        *ret = width == 4 ? v32 : v;
        return 0;
}

/* A process's real, effective and saved ids of one kind ("Uid:" or "Gid:"). */
static int status_ids(pid_t pid, const char *key, unsigned ids[3])
{
        char path[64], line[256];
        snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
        FILE *f = fopen(path, "re");
        if (!f)
                return -errno;
        int r = -ESRCH;
        while (fgets(line, sizeof line, f))
                if (strncmp(line, key, strlen(key)) == 0) {
                        r = sscanf(line + strlen(key), "%u %u %u", &ids[0], &ids[1], &ids[2]) == 3 ? 0 : -EPROTO;
                        break;
                }
        fclose(f);
        return r;
}

/* The agent holds no CAP_SYS_PTRACE, so it reads a process of another user (its memory,
 * its cwd and fd links) as that user: it takes the user's real and file-system ids for the
 * read, keeping effective root (and its capabilities: the sandbox locks
 * SECBIT_NO_SETUID_FIXUP) to come back. Single-threaded, so nothing else runs meanwhile. */
struct reader_ids {
        bool switched;
        uid_t uid;
        gid_t gid;
};

static int reader_enter(pid_t pid, struct reader_ids *ret)
{
        unsigned uid[3], gid[3];
        *ret = (struct reader_ids){ .uid = getuid(), .gid = getgid() };
        if (status_ids(pid, "Uid:", uid) < 0 || status_ids(pid, "Gid:", gid) < 0)
                return -ESRCH;
        if (uid[0] == ret->uid && uid[1] == ret->uid && uid[2] == ret->uid && gid[0] == ret->gid && gid[1] == ret->gid &&
            gid[2] == ret->gid)
                return 0;
        if (uid[0] != uid[1] || uid[0] != uid[2] || gid[0] != gid[1] || gid[0] != gid[2])
                return -EPERM; /* a process between users: not one the agent can read */
        if (syscall(SYS_setresgid, (gid_t)gid[0], (gid_t)-1, (gid_t)-1) < 0)
                return -errno;
        (void)syscall(SYS_setfsgid, (gid_t)gid[0]);
        if (syscall(SYS_setresuid, (uid_t)uid[0], (uid_t)-1, (uid_t)-1) < 0) {
                int r = -errno;
                (void)syscall(SYS_setresgid, ret->gid, (gid_t)-1, (gid_t)-1);
                (void)syscall(SYS_setfsgid, ret->gid);
                return r;
        }
        (void)syscall(SYS_setfsuid, (uid_t)uid[0]);
        ret->switched = true;
        return 0;
}

static void reader_leave(const struct reader_ids *ids)
{
        if (!ids->switched)
                return;
        (void)syscall(SYS_setresuid, ids->uid, (uid_t)-1, (uid_t)-1);
        (void)syscall(SYS_setfsuid, ids->uid);
        (void)syscall(SYS_setresgid, ids->gid, (gid_t)-1, (gid_t)-1);
        (void)syscall(SYS_setfsgid, ids->gid);
}

/* One exec as the process asked for it. */
struct exec_call {
        int dirfd;
        uint64_t path_addr, argv_addr;
        uint64_t flags;
        size_t pointer_width;
};

static struct exec_call exec_call_of(const struct seccomp_abi_data *d)
{
        uint32_t nr = (uint32_t)d->nr & ~SECCOMP_ABI_X32_BIT;
        bool narrow = d->arch == SECCOMP_ABI_AUDIT_ARCH_I386 || ((uint32_t)d->nr & SECCOMP_ABI_X32_BIT);
        bool at = nr == 322 || nr == 545 || nr == 358 || (d->arch == SECCOMP_ABI_AUDIT_ARCH_AARCH64 && nr == 281);
        struct exec_call c = { .dirfd = AT_FDCWD, .pointer_width = narrow ? 4 : 8 };
        if (at) {
                c.dirfd = (int)d->args[0];
                c.path_addr = d->args[1];
                c.argv_addr = d->args[2];
                c.flags = d->args[4];
        } else {
                c.path_addr = d->args[0];
                c.argv_addr = d->args[1];
        }
        return c;
}

/* The directory a relative path starts from, as the agent sees it: /proc/PID/cwd or the fd. */
static void base_of(pid_t pid, int dirfd, char *buf, size_t size)
{
        if (dirfd == AT_FDCWD)
                snprintf(buf, size, "/proc/%d/cwd", (int)pid);
        else
                snprintf(buf, size, "/proc/%d/fd/%d", (int)pid, dirfd);
}

/* given: the path made absolute without following links; real: the file that runs, links
 * followed (given again when it cannot be resolved: the exec will fail on it too). */
static int paths_resolve(pid_t pid, const struct exec_call *c, const char *path, char *given, char *real)
{
        char proc[PATH_MAX + 64], base[64];
        if (path[0] == '/') {
                snprintf(given, PATH_MAX, "%s", path);
                /* /proc/self is the process's own (busybox runs its applets through /proc/self/exe). */
                size_t self = strncmp(path, "/proc/self/", 11) == 0 ? 11 : strncmp(path, "/proc/thread-self/", 18) == 0 ? 18 : 0;
                if (self)
                        snprintf(proc, sizeof proc, "/proc/%d/%s", (int)pid, path + self);
                else
                        snprintf(proc, sizeof proc, "/proc/%d/root%s", (int)pid, path);
        } else {
                base_of(pid, c->dirfd, base, sizeof base);
                char dir[PATH_MAX];
                ssize_t n = readlink(base, dir, sizeof dir - 1);
                if (n < 0)
                        return -errno;
                dir[n] = '\0';
                int w = path[0] ? snprintf(given, PATH_MAX, "%s%s%s", dir, strcmp(dir, "/") ? "/" : "", path)
                                : snprintf(given, PATH_MAX, "%s", dir);
                if (w < 0 || w >= PATH_MAX)
                        return -ENAMETOOLONG;
                snprintf(proc, sizeof proc, "%s%s%s", base, path[0] ? "/" : "", path);
        }
        if (!realpath(proc, real)) {
                if (errno == ENOENT || errno == ENOTDIR)
                        return -errno; /* nothing there to run: the exec fails the same way */
                snprintf(real, PATH_MAX, "%s", given);
        }
        return 0;
}

static char argv_buf[AGENT_EXEC_WATCH_ARGV_BYTES];

/* Reads argv into argv_buf as consecutive NUL-terminated strings; returns their count. */
static int argv_read(pid_t pid, const struct exec_call *c, size_t *ret_bytes)
{
        size_t used = 0;
        int n = 0;
        if (c->argv_addr == 0) {
                *ret_bytes = 0;
                return 0;
        }
        for (;; n++) {
                if ((unsigned)n >= AGENT_EXEC_WATCH_ARGS_MAX)
                        return -E2BIG;
                uint64_t p = 0;
                int r = mem_read_pointer(pid, c->argv_addr + (uint64_t)n * c->pointer_width, c->pointer_width, &p);
                if (r < 0)
                        return r;
                if (p == 0)
                        break;
                r = mem_read_string(pid, p, argv_buf + used, sizeof argv_buf - used);
                if (r < 0)
                        return r;
                used += (size_t)r + 1;
        }
        *ret_bytes = used;
        return n;
}

/* ---- checks ---- */

static void notif_answer(int listener, uint64_t notif_id, int error)
{
        struct seccomp_abi_notif_resp resp = { .id = notif_id };
        if (error)
                resp.error = -error;
        else
                resp.flags = SECCOMP_ABI_USER_NOTIF_FLAG_CONTINUE;
        /* ENOENT: the process is gone (killed while it waited): nothing to answer. */
        (void)ioctl(listener, SECCOMP_ABI_IOCTL_NOTIF_SEND, &resp);
}

static unsigned pending_of(const struct agent_server *s, const struct agent_job *job)
{
        unsigned n = 0;
        for (const struct agent_exec_check *c = s->exec_checks; c; c = c->next)
                n += c->job == job;
        return n;
}

static void check_free(struct agent_server *s, struct agent_exec_check *c)
{
        if (c->ev && s->sub_event == c->ev)
                c->ev->orphan = true; /* half written: the subscriber frees it once done */
        else
                free(c->ev);
        free(c);
}

static int check_queue(struct agent_job *job, uint64_t notif_id, pid_t pid, const char *given, const char *real, int argc,
                       size_t argv_bytes)
{
        struct agent_server *s = job->server;
        struct agent_frame_writer w;
        agent_frame_writer_begin(&w, AGENT_MSG_JOB_EXEC_CHECK);
        agent_frame_writer_put_str(&w, AGENT_F_JOB_ID, job->req.job_id);
        uint64_t id = ++s->next_exec_check_id;
        agent_frame_writer_put_u64(&w, AGENT_F_EXEC_CHECK_ID, id);
        agent_frame_writer_put_u32(&w, AGENT_F_JOB_PID, (uint32_t)pid);
        agent_frame_writer_put_str(&w, AGENT_F_FILE_PATH, given);
        agent_frame_writer_put_str(&w, AGENT_F_EXEC_REAL, real);
        const char *a = argv_buf;
        for (int i = 0; i < argc && (size_t)(a - argv_buf) < argv_bytes; i++) {
                agent_frame_writer_put_str(&w, AGENT_F_ARGV, a);
                a += strlen(a) + 1;
        }
        int r = agent_frame_writer_finish(&w);
        if (r < 0) {
                agent_frame_writer_release(&w);
                return r;
        }
        struct agent_exec_check *c = calloc(1, sizeof *c);
        struct agent_job_event *ev = malloc(sizeof *ev + w.len);
        if (!c || !ev) {
                free(c);
                free(ev);
                agent_frame_writer_release(&w);
                return -ENOMEM;
        }
        *ev = (struct agent_job_event){ .len = w.len };
        memcpy(ev->frame, w.data, w.len);
        agent_frame_writer_release(&w);
        *c = (struct agent_exec_check){ .job = job, .id = id, .notif_id = notif_id, .ev = ev };
        struct agent_exec_check **tail = &s->exec_checks;
        while (*tail)
                tail = &(*tail)->next;
        *tail = c;
        return 0;
}

/* Denied here without asking: what cannot be read cannot be checked. */
static void deny_unreadable(struct agent_job *job, int listener, uint64_t notif_id, int error, const char *why)
{
        if (error == -EFAULT) { /* a bad pointer: the kernel would say the same */
                notif_answer(listener, notif_id, EFAULT);
                return;
        }
        notif_answer(listener, notif_id, EACCES);
        char line[256];
        snprintf(line, sizeof line, "space: exec denied: %s (%s)\n", why, strerror(-error));
        agent_job_note(job, line);
}

static void on_notification(struct agent_job *job)
{
        int listener = job->exec_watch.fd;
        struct seccomp_abi_notif n;
        memset(&n, 0, sizeof n);
        if (ioctl(listener, SECCOMP_ABI_IOCTL_NOTIF_RECV, &n) < 0)
                return; /* ENOENT: the process died before it was read; EINTR: again later */
        pid_t pid = (pid_t)n.pid;
        struct exec_call call = exec_call_of(&n.data);
        char path[PATH_MAX], given[PATH_MAX], real[PATH_MAX];
        struct reader_ids ids;
        int r = reader_enter(pid, &ids);
        if (r < 0) {
                deny_unreadable(job, listener, n.id, r, "cannot read a process of this user");
                return;
        }
        r = mem_read_string(pid, call.path_addr, path, sizeof path);
        if (r < 0) {
                reader_leave(&ids);
                deny_unreadable(job, listener, n.id, r, "cannot read the path of an exec");
                return;
        }
        if (path[0] == '\0' && !(call.flags & AT_EMPTY_PATH)) {
                reader_leave(&ids);
                notif_answer(listener, n.id, ENOENT);
                return;
        }
        size_t argv_bytes = 0;
        int argc = argv_read(pid, &call, &argv_bytes);
        if (argc < 0) {
                reader_leave(&ids);
                deny_unreadable(job, listener, n.id, argc,
                                argc == -E2BIG ? "its command line is too long to be checked"
                                               : "cannot read the argv of an exec");
                return;
        }
        r = paths_resolve(pid, &call, path, given, real);
        reader_leave(&ids);
        if (r == -ENOENT || r == -ENOTDIR) {
                /* A PATH search's misses cost no round trip. */
                notif_answer(listener, n.id, -r);
                return;
        }
        if (r < 0) {
                deny_unreadable(job, listener, n.id, r, "cannot resolve the path of an exec");
                return;
        }
        /* What was read belongs to the process that asked (not to one that reused its pid). */
        if (ioctl(listener, SECCOMP_ABI_IOCTL_NOTIF_ID_VALID, &n.id) < 0)
                return;
        if (check_queue(job, n.id, pid, given, real, argc, argv_bytes) < 0) {
                notif_answer(listener, n.id, EAGAIN);
                return;
        }
        agent_subscriber_flush(job->server);
}

static void on_listener(struct agent_watch *w, uint32_t events)
{
        struct agent_job *job = agent_container_of(w, struct agent_job, exec_watch);
        if (events & EPOLLIN)
                on_notification(job);
        else if (events & (EPOLLHUP | EPOLLERR)) {
                /* Every process of the tree is gone. */
                agent_server_watch_close(job->server, w);
                return;
        }
        if (w->fd >= 0 && pending_of(job->server, job) >= AGENT_EXEC_WATCH_PENDING_MAX)
                (void)agent_server_watch_detach(job->server, w); /* the rest wait in the kernel */
}

int agent_exec_watch_start(struct agent_job *job, int listener)
{
        return agent_server_watch_add(job->server, &job->exec_watch, listener, EPOLLIN, on_listener);
}

void agent_exec_watch_stop(struct agent_job *job)
{
        struct agent_server *s = job->server;
        agent_server_watch_close(s, &job->exec_watch);
        for (struct agent_exec_check **p = &s->exec_checks; *p;) {
                struct agent_exec_check *c = *p;
                if (c->job != job) {
                        p = &c->next;
                        continue;
                }
                *p = c->next;
                check_free(s, c);
        }
}

struct agent_job_event *agent_exec_watch_take_unsent(struct agent_server *s)
{
        for (struct agent_exec_check *c = s->exec_checks; c; c = c->next)
                if (!c->sent) {
                        c->sent = true;
                        return c->ev;
                }
        return NULL;
}

void agent_exec_watch_rewind(struct agent_server *s)
{
        for (struct agent_exec_check *c = s->exec_checks; c; c = c->next)
                c->sent = false;
}

void agent_exec_watch_verdict(struct agent_server *s, uint64_t id, bool allow, const uint8_t *msg, size_t msg_len)
{
        struct agent_exec_check **p = &s->exec_checks;
        while (*p && (*p)->id != id)
                p = &(*p)->next;
        struct agent_exec_check *c = *p;
        if (!c)
                return; /* answered already, or its job is gone */
        *p = c->next;
        struct agent_job *job = c->job;
        if (job->exec_watch.fd >= 0) {
                notif_answer(job->exec_watch.fd, c->notif_id, allow ? 0 : EACCES);
                if (job->exec_watch.detached)
                        (void)agent_server_watch_attach(s, &job->exec_watch);
        }
        check_free(s, c);
        if (!allow) {
                char line[600];
                if (msg_len == 0)
                        msg = (const uint8_t *)"exec denied by policy", msg_len = strlen((const char *)msg);
                snprintf(line, sizeof line, "space: %.*s\n", (int)(msg_len > 500 ? 500 : msg_len), (const char *)msg);
                agent_job_note(job, line);
        }
        agent_subscriber_flush(s);
}
