/* The host end of the link: the supervisor of one microvm, started by spaced in the
 * sandbox's cgroup (it outlives a restart of spaced). It waits for spaced's go on fd 3,
 * starts the VMM with one end of a socket pair as fd 3 (QEMU: -chardev socket,fd=3, the
 * virtio-serial port of the agent) and fds 4 and 5 as spaced gave them (the VM's disk),
 * listens on RUN_DIR/agent.sock and carries every connection accepted there as one stream
 * to the guest. Everything from the guest is
 * hostile: a corrupt frame, a guest that stops answering its pings, or a VMM that ends
 * stops the VM; the reason goes to RUN_DIR/failure (written beside, then renamed) for
 * spaced to report, and the supervisor exits. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vm_link/vm_link.h"
#include "vm_link/vm_link_frame.h"
#include "vm_link/vm_link_streams.h"

#define PING_INTERVAL_S 2
#define OUT_HIGH (4u << 20)     /* stop reading connections while this much waits for the guest */
#define PENDING_MAX (16u << 20) /* a connection this far behind loses its stream */

struct host {
        const char *run_dir;
        int port, listener, epfd, sigfd, timerfd;
        pid_t vmm;
        uint32_t next_stream;
        bool answered; /* the guest answered HELLO */
        int64_t last_heard_ms, last_tick_ms;
        int boot_timeout_s, answer_timeout_s;
        struct vm_link_buffer in, out;
        struct vm_link_streams streams;
};

static int64_t now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void write_failure(const struct host *h, const char *reason)
{
        char path[4096], tmp[4200];
        snprintf(path, sizeof(path), "%s/failure", h->run_dir);
        snprintf(tmp, sizeof(tmp), "%s.partial", path);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0)
                return;
        int r = vm_link_write_all(fd, reason, strlen(reason));
        fsync(fd);
        close(fd);
        if (r == 0)
                rename(tmp, path);
}

/* Ends the VM for reason (NULL: asked to stop) and exits. */
static __attribute__((noreturn)) void stop_vm(struct host *h, const char *reason)
{
        if (h->vmm > 0) {
                kill(h->vmm, SIGKILL);
                waitpid(h->vmm, NULL, 0);
        }
        if (reason) {
                write_failure(h, reason);
                fprintf(stderr, "space-vmlink: %s\n", reason);
        }
        char sock[4096];
        snprintf(sock, sizeof(sock), "%s/agent.sock", h->run_dir);
        unlink(sock);
        _exit(reason ? 1 : 0);
}

static int listen_socket(const char *run_dir)
{
        struct sockaddr_un a = { .sun_family = AF_UNIX };
        if (snprintf(a.sun_path, sizeof(a.sun_path), "%s/agent.sock", run_dir) >= (int)sizeof(a.sun_path))
                return -ENAMETOOLONG;
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        unlink(a.sun_path);
        if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || chmod(a.sun_path, 0600) < 0 || listen(fd, 64) < 0) {
                int e = errno;
                close(fd);
                return -e;
        }
        return fd;
}

static pid_t start_vmm(int guest_end, char **argv)
{
        pid_t pid = fork();
        if (pid != 0)
                return pid;
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        if (dup2(guest_end, 3) < 0)
                _exit(127);
        syscall(SYS_close_range, 6, ~0U, 0); /* 4 and 5 are spaced's for the VMM (its disk) */
        execvp(argv[0], argv);
        fprintf(stderr, "space-vmlink: cannot run %s: %m\n", argv[0]);
        _exit(127);
}

static void queue(struct host *h, uint32_t stream, enum vm_link_type type, const void *p, size_t n)
{
        if (vm_link_buffer_frame(&h->out, stream, type, p, n) < 0)
                stop_vm(h, "the host side of the channel ran out of memory");
}

static void accept_client(struct host *h)
{
        int fd = accept4(h->listener, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0)
                return;
        uint32_t id = ++h->next_stream;
        if (vm_link_streams_add(&h->streams, id, fd) < 0 ||
            epoll_ctl(h->epfd, EPOLL_CTL_ADD, fd, &(struct epoll_event){ .events = EPOLLIN, .data.fd = fd }) < 0) {
                int slot = vm_link_streams_find_fd(&h->streams, fd);
                if (slot >= 0)
                        vm_link_streams_drop(&h->streams, slot);
                else
                        close(fd);
                return;
        }
        queue(h, id, VM_LINK_OPEN, NULL, 0);
}

static void read_client(struct host *h, int fd)
{
        uint8_t buf[VM_LINK_MAX_PAYLOAD];
        int slot = vm_link_streams_find_fd(&h->streams, fd);
        if (slot < 0)
                return;
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
                return;
        if (n <= 0) {
                queue(h, h->streams.id[slot], VM_LINK_CLOSE, NULL, 0);
                vm_link_streams_drop(&h->streams, slot);
                return;
        }
        queue(h, h->streams.id[slot], VM_LINK_DATA, buf, (size_t)n);
}

static void watch_client(struct host *h, int slot)
{
        int fd = h->streams.fd[slot];
        uint32_t events = (h->streams.closing[slot] ? 0 : EPOLLIN) | (h->streams.pending[slot].len ? EPOLLOUT : 0);
        epoll_ctl(h->epfd, EPOLL_CTL_MOD, fd, &(struct epoll_event){ .events = events, .data.fd = fd });
}

/* Writes what is pending for the slot's connection without blocking (one slow reader must
 * not hold up the other streams, nor the pings); a stream the guest closed goes once its
 * bytes are out. */
static void flush_client(struct host *h, int slot)
{
        struct vm_link_buffer *p = &h->streams.pending[slot];
        if (p->len && vm_link_buffer_flush(p, h->streams.fd[slot]) < 0) {
                if (!h->streams.closing[slot])
                        queue(h, h->streams.id[slot], VM_LINK_CLOSE, NULL, 0);
                vm_link_streams_drop(&h->streams, slot);
                return;
        }
        if (!p->len && h->streams.closing[slot]) {
                vm_link_streams_drop(&h->streams, slot);
                return;
        }
        watch_client(h, slot);
}

static void handle_frame(struct host *h, const struct vm_link_header *f, const uint8_t *payload)
{
        int slot = vm_link_streams_find(&h->streams, f->stream);
        /* Only answers count as hearing from the guest: a flood of data does not. */
        switch (f->type) {
        case VM_LINK_HELLO:
                /* Connections are taken (and OPENed) only once the guest has answered: a HELLO
                 * of ours still on its way (one per tick until the answer) makes the guest drop
                 * every stream, which would drop one opened before it (a restored guest is
                 * slower to answer than the first tick). They wait in the backlog meanwhile. */
                if (!h->answered)
                        epoll_ctl(h->epfd, EPOLL_CTL_ADD, h->listener,
                                  &(struct epoll_event){ .events = EPOLLIN, .data.fd = h->listener });
                h->answered = true;
                h->last_heard_ms = now_ms();
                return;
        case VM_LINK_PONG:
                if (h->answered)
                        h->last_heard_ms = now_ms();
                return;
        case VM_LINK_DATA:
                /* data of a stream the host closed meanwhile, or after its close, is dropped */
                if (slot < 0 || h->streams.closing[slot])
                        return;
                if (h->streams.pending[slot].len + f->length > PENDING_MAX ||
                    vm_link_buffer_append(&h->streams.pending[slot], payload, f->length) < 0) {
                        vm_link_streams_drop(&h->streams, slot);
                        queue(h, f->stream, VM_LINK_CLOSE, NULL, 0);
                        return;
                }
                flush_client(h, slot);
                return;
        case VM_LINK_CLOSE:
                if (slot >= 0) {
                        h->streams.closing[slot] = true;
                        flush_client(h, slot);
                }
                return;
        default: /* OPEN and PING are the host's to send */
                stop_vm(h, "the guest sent a frame only the host sends on its agent channel");
        }
}

static void read_port(struct host *h)
{
        uint8_t buf[VM_LINK_MAX_PAYLOAD];
        ssize_t n = read(h->port, buf, sizeof(buf));
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
                return;
        if (n <= 0)
                return; /* the VMM is ending: its exit says why */
        if (vm_link_buffer_append(&h->in, buf, (size_t)n) < 0)
                stop_vm(h, "the host side of the channel ran out of memory");
        struct vm_link_header f;
        const uint8_t *payload;
        int r;
        while ((r = vm_link_buffer_next(&h->in, &f, &payload)) == 1) {
                handle_frame(h, &f, payload);
                vm_link_buffer_consume(&h->in, VM_LINK_HEADER_SIZE + f.length);
        }
        if (r < 0)
                stop_vm(h, "the guest corrupted its agent channel (a frame no agent sends)");
}

static void tick(struct host *h)
{
        uint64_t expirations;
        while (read(h->timerfd, &expirations, sizeof(expirations)) > 0)
                ;
        int64_t now = now_ms();
        /* A gap far longer than the interval: this process was frozen (a paused sandbox),
         * and so was the guest; count from now. */
        if (now - h->last_tick_ms > 3 * PING_INTERVAL_S * 1000)
                h->last_heard_ms = now;
        h->last_tick_ms = now;
        int limit_s = h->answered ? h->answer_timeout_s : h->boot_timeout_s;
        if (now - h->last_heard_ms > (int64_t)limit_s * 1000) {
                char reason[160];
                snprintf(reason, sizeof(reason), "the guest stopped answering on its agent channel (nothing for %d s%s)", limit_s,
                         h->answered ? "" : " since boot");
                stop_vm(h, reason);
        }
        if (!h->answered)
                queue(h, 0, VM_LINK_HELLO, NULL, 0);
        queue(h, 0, VM_LINK_PING, NULL, 0);
}

static void reap(struct host *h)
{
        struct signalfd_siginfo si;
        bool stop = false;
        while (read(h->sigfd, &si, sizeof(si)) > 0)
                if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
                        stop = true;
        if (stop)
                stop_vm(h, NULL);
        int status;
        if (waitpid(h->vmm, &status, WNOHANG) != h->vmm)
                return;
        h->vmm = -1;
        char reason[200];
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
                snprintf(reason, sizeof(reason), "the virtual machine ended: its init exited or its kernel stopped");
        else if (WIFEXITED(status))
                snprintf(reason, sizeof(reason), "the VMM exited with status %d (see qemu.log)", WEXITSTATUS(status));
        else
                snprintf(reason, sizeof(reason), "the VMM was killed by signal %d", WTERMSIG(status));
        stop_vm(h, reason);
}

static int positive_env(const char *name, int fallback)
{
        const char *v = getenv(name);
        int n = v ? atoi(v) : 0;
        return n > 0 ? n : fallback;
}

int vm_link_host_main(const char *run_dir, char **vmm_argv)
{
        struct host h = { .run_dir = run_dir, .vmm = -1 };
        int pair[2];
        char go = 0;
        vm_link_streams_init(&h.streams);
        h.boot_timeout_s = positive_env("SPACE_VMLINK_BOOT_TIMEOUT_S", 180);
        h.answer_timeout_s = positive_env("SPACE_VMLINK_ANSWER_TIMEOUT_S", 20);
        /* spaced's go: this process is in the sandbox's cgroup, so the VMM will be too */
        while (read(3, &go, 1) < 0 && errno == EINTR)
                ;
        close(3);
        if (go != 'g')
                return 1;
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGCHLD);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        signal(SIGPIPE, SIG_IGN);
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0)
                return 1;
        h.port = pair[0];
        h.listener = listen_socket(run_dir);
        h.sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
        h.timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
        h.epfd = epoll_create1(EPOLL_CLOEXEC);
        if (h.listener < 0 || h.sigfd < 0 || h.timerfd < 0 || h.epfd < 0) {
                fprintf(stderr, "space-vmlink: cannot set up in %s: %s\n", run_dir,
                        strerror(h.listener < 0 ? -h.listener : errno));
                return 1;
        }
        fcntl(h.port, F_SETFL, O_NONBLOCK);
        h.vmm = start_vmm(pair[1], vmm_argv);
        close(pair[1]);
        if (h.vmm < 0)
                stop_vm(&h, "cannot start the VMM");
        timerfd_settime(
                h.timerfd, 0,
                &(struct itimerspec){ .it_interval = { .tv_sec = PING_INTERVAL_S }, .it_value = { .tv_nsec = 200000000 } }, NULL);
        h.last_heard_ms = h.last_tick_ms = now_ms();
        queue(&h, 0, VM_LINK_HELLO, NULL, 0);
        int fds[] = { h.sigfd, h.timerfd };
        for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
                epoll_ctl(h.epfd, EPOLL_CTL_ADD, fds[i], &(struct epoll_event){ .events = EPOLLIN, .data.fd = fds[i] });
        epoll_ctl(h.epfd, EPOLL_CTL_ADD, h.port, &(struct epoll_event){ .events = EPOLLIN, .data.fd = h.port });
        for (;;) {
                epoll_ctl(h.epfd, EPOLL_CTL_MOD, h.port,
                          &(struct epoll_event){ .events = EPOLLIN | (h.out.len ? EPOLLOUT : 0), .data.fd = h.port });
                struct epoll_event ev[32];
                int n = epoll_wait(h.epfd, ev, 32, -1);
                for (int i = 0; i < n; i++) {
                        int fd = ev[i].data.fd;
                        if (fd == h.sigfd)
                                reap(&h);
                        else if (fd == h.timerfd)
                                tick(&h);
                        else if (fd == h.listener)
                                accept_client(&h);
                        else if (fd == h.port) {
                                if (ev[i].events & (EPOLLIN | EPOLLHUP))
                                        read_port(&h);
                        } else {
                                int slot = vm_link_streams_find_fd(&h.streams, fd);
                                if (slot >= 0 && (ev[i].events & EPOLLOUT))
                                        flush_client(&h, slot);
                                if ((ev[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && h.out.len < OUT_HIGH &&
                                    vm_link_streams_find_fd(&h.streams, fd) >= 0)
                                        read_client(&h, fd);
                        }
                }
                if (h.out.len && vm_link_buffer_flush(&h.out, h.port) < 0)
                        h.out.len = 0; /* the VMM is ending: its exit says why */
                if (h.out.len >= OUT_HIGH) {
                        struct pollfd p = { .fd = h.port, .events = POLLOUT };
                        poll(&p, 1, 100);
                }
        }
}
