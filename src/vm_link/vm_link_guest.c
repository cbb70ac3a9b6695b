/* The guest end of the link: PID 1 of a microvm (after the initramfs's stage 1 switched
 * root to the sandbox's disk). It mounts the kernel filesystems, starts space-agent on a
 * unix socket in /dev/.space, and carries each stream the host opens on the virtio-serial
 * port as one connection to that socket. When the agent exits the guest powers off: the
 * host side sees its VMM end and reports the sandbox failed. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vm_link/vm_link.h"
#include "vm_link/vm_link_frame.h"
#include "vm_link/vm_link_streams.h"

#define AGENT "/dev/.space/space-agent"
#define AGENT_SOCKET "/dev/.space/agent.sock"
#define OUT_HIGH (4u << 20) /* stop reading the agent while this much waits for the host */

struct guest {
        int port, epfd, sigfd;
        pid_t agent;
        struct vm_link_buffer in, out;
        struct vm_link_streams streams;
};

static void mount_kernel_filesystems(void)
{
        static const struct {
                const char *type, *dir, *opts;
                unsigned long flags;
        } m[] = {
                { "proc", "/proc", NULL, MS_NOSUID | MS_NODEV | MS_NOEXEC },
                { "sysfs", "/sys", NULL, MS_NOSUID | MS_NODEV | MS_NOEXEC },
                { "tmpfs", "/tmp", "mode=1777", MS_NOSUID | MS_NODEV },
                { "devpts", "/dev/pts", "newinstance,ptmxmode=0666,mode=0620", MS_NOSUID | MS_NOEXEC },
                { "tmpfs", "/dev/shm", "mode=1777", MS_NOSUID | MS_NODEV },
        };
        for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
                mkdir(m[i].dir, 0755);
                mount(m[i].type, m[i].dir, m[i].type, m[i].flags, m[i].opts);
        }
        sethostname("sandbox", 7);
}

static pid_t start_agent(void)
{
        pid_t pid = fork();
        if (pid == 0) {
                char *argv[] = { "space-agent", "--listen", AGENT_SOCKET, NULL };
                char *envp[] = { "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", NULL };
                sigset_t none;
                sigemptyset(&none);
                sigprocmask(SIG_SETMASK, &none, NULL);
                execve(AGENT, argv, envp);
                _exit(127);
        }
        return pid;
}

/* A connection to the agent; it may still be starting (its socket not bound yet). */
static int connect_agent(void)
{
        struct sockaddr_un a = { .sun_family = AF_UNIX };
        snprintf(a.sun_path, sizeof(a.sun_path), "%s", AGENT_SOCKET);
        for (int tries = 0; tries < 300; tries++) {
                int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (fd < 0)
                        return -errno;
                if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
                        return fd;
                int e = errno;
                close(fd);
                if (e != ENOENT && e != ECONNREFUSED)
                        return -e;
                usleep(10000);
        }
        return -ETIMEDOUT;
}

static void queue(struct guest *g, uint32_t stream, enum vm_link_type type, const void *p, size_t n)
{
        if (vm_link_buffer_frame(&g->out, stream, type, p, n) < 0)
                vm_link_buffer_release(&g->out); /* out of memory: the host sees lost streams */
}

static void handle_frame(struct guest *g, const struct vm_link_header *h, const uint8_t *payload)
{
        int slot = vm_link_streams_find(&g->streams, h->stream);
        switch (h->type) {
        case VM_LINK_HELLO:
                vm_link_streams_drop_all(&g->streams);
                queue(g, 0, VM_LINK_HELLO, NULL, 0);
                return;
        case VM_LINK_PING:
                queue(g, h->stream, VM_LINK_PONG, payload, h->length);
                return;
        case VM_LINK_OPEN: {
                vm_link_streams_drop(&g->streams, slot);
                int fd = connect_agent();
                if (fd >= 0 && (slot = vm_link_streams_add(&g->streams, h->stream, fd)) < 0)
                        close(fd);
                if (fd < 0 || slot < 0 ||
                    epoll_ctl(g->epfd, EPOLL_CTL_ADD, fd, &(struct epoll_event){ .events = EPOLLIN, .data.fd = fd }) < 0) {
                        vm_link_streams_drop(&g->streams, slot);
                        queue(g, h->stream, VM_LINK_CLOSE, NULL, 0);
                }
                return;
        }
        case VM_LINK_DATA:
                if (slot >= 0 && vm_link_write_all(g->streams.fd[slot], payload, h->length) < 0) {
                        vm_link_streams_drop(&g->streams, slot);
                        queue(g, h->stream, VM_LINK_CLOSE, NULL, 0);
                }
                return;
        case VM_LINK_CLOSE:
                vm_link_streams_drop(&g->streams, slot);
                return;
        default:
                return;
        }
}

/* Reads what the host sent; -1 when the host is not connected (nothing to do for now). */
static int read_port(struct guest *g)
{
        uint8_t buf[VM_LINK_MAX_PAYLOAD];
        ssize_t n = read(g->port, buf, sizeof(buf));
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
                return -1;
        if (n > 0 && vm_link_buffer_append(&g->in, buf, (size_t)n) < 0)
                return -1;
        struct vm_link_header h;
        const uint8_t *payload;
        int r;
        while ((r = vm_link_buffer_next(&g->in, &h, &payload)) == 1) {
                handle_frame(g, &h, payload);
                vm_link_buffer_consume(&g->in, VM_LINK_HEADER_SIZE + h.length);
        }
        if (r < 0) /* the host never sends this: start over */
                g->in.len = 0;
        return 0;
}

static void read_stream(struct guest *g, int fd)
{
        uint8_t buf[VM_LINK_MAX_PAYLOAD];
        int slot = vm_link_streams_find_fd(&g->streams, fd);
        if (slot < 0)
                return;
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
                return;
        if (n <= 0) {
                queue(g, g->streams.id[slot], VM_LINK_CLOSE, NULL, 0);
                vm_link_streams_drop(&g->streams, slot);
                return;
        }
        queue(g, g->streams.id[slot], VM_LINK_DATA, buf, (size_t)n);
}

static void reap(struct guest *g)
{
        struct signalfd_siginfo si;
        while (read(g->sigfd, &si, sizeof(si)) > 0)
                ;
        pid_t pid;
        int status;
        while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
                if (pid == g->agent) {
                        fprintf(stderr, "space-vmlink: the agent ended (status %d): powering off\n", status);
                        sync();
                        reboot(RB_POWER_OFF);
                        _exit(1);
                }
}

int vm_link_guest_main(const char *port_path)
{
        struct guest g = { .port = -1 };
        vm_link_streams_init(&g.streams);
        mount_kernel_filesystems();
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGCHLD);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        signal(SIGPIPE, SIG_IGN);
        g.sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
        g.port = open(port_path, O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        g.epfd = epoll_create1(EPOLL_CLOEXEC);
        if (g.sigfd < 0 || g.port < 0 || g.epfd < 0) {
                fprintf(stderr, "space-vmlink: cannot open %s: %m\n", port_path);
                return 1;
        }
        g.agent = start_agent();
        epoll_ctl(g.epfd, EPOLL_CTL_ADD, g.sigfd, &(struct epoll_event){ .events = EPOLLIN, .data.fd = g.sigfd });
        epoll_ctl(g.epfd, EPOLL_CTL_ADD, g.port, &(struct epoll_event){ .events = EPOLLIN, .data.fd = g.port });
        bool host_gone = false, watched = true;
        for (;;) {
                /* A port whose host end is closed reports HUP until it is open again, which
                 * epoll cannot mask: it is looked at every 100 ms meanwhile instead. */
                if (host_gone && watched)
                        watched = epoll_ctl(g.epfd, EPOLL_CTL_DEL, g.port, NULL) < 0;
                else if (!host_gone && !watched)
                        watched = epoll_ctl(g.epfd, EPOLL_CTL_ADD, g.port,
                                            &(struct epoll_event){ .events = EPOLLIN, .data.fd = g.port }) == 0;
                if (watched)
                        epoll_ctl(g.epfd, EPOLL_CTL_MOD, g.port,
                                  &(struct epoll_event){ .events = EPOLLIN | (g.out.len ? EPOLLOUT : 0), .data.fd = g.port });
                struct epoll_event ev[32];
                int n = epoll_wait(g.epfd, ev, 32, host_gone ? 100 : -1);
                if (host_gone) {
                        struct pollfd p = { .fd = g.port, .events = POLLIN };
                        host_gone = poll(&p, 1, 0) == 1 && (p.revents & POLLHUP);
                        if (!host_gone)
                                vm_link_streams_drop_all(&g.streams);
                }
                for (int i = 0; i < n; i++) {
                        int fd = ev[i].data.fd;
                        if (fd == g.sigfd)
                                reap(&g);
                        else if (fd == g.port) {
                                if ((ev[i].events & EPOLLIN) && read_port(&g) < 0)
                                        host_gone = true;
                                else if (ev[i].events & (EPOLLHUP | EPOLLERR))
                                        host_gone = true;
                        } else if (g.out.len < OUT_HIGH)
                                read_stream(&g, fd);
                }
                if (host_gone) {
                        g.out.len = 0;
                        g.in.len = 0;
                } else if (g.out.len && vm_link_buffer_flush(&g.out, g.port) < 0)
                        host_gone = true;
                if (g.out.len >= OUT_HIGH) { /* let the host catch up before reading the agent again */
                        struct pollfd p = { .fd = g.port, .events = POLLOUT };
                        poll(&p, 1, 100);
                }
        }
}
