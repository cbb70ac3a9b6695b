/* The socket is made inside the sandbox's network namespace (this thread joins it for the
 * socket() call only and comes straight back) and connected to 127.0.0.1:port there: the
 * address is ours, not the sandbox's, and a socket keeps the namespace it was made in, so
 * the connection can reach nothing but that namespace's loopback. The namespace is joined
 * through a pidfd of the recorded init, checked to be that process (not a recycled pid)
 * after the pidfd is held. */
#include "runtime/namespaces/ns_port.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include "cleanup.h"
#include "runtime/sandbox_host.h"

/* A socket of the namespace of pidfd's process, or -errno. */
static int socket_in(int pidfd)
{
        _cleanup_close_ int home = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
        if (home < 0)
                return -errno;
        if (setns(pidfd, CLONE_NEWNET) < 0)
                return -errno;
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        int e = errno;
        /* A thread left in the sandbox's namespace would do the daemon's network work there. */
        if (setns(home, CLONE_NEWNET) < 0)
                abort();
        return fd < 0 ? -e : fd;
}

static int connect_within(int fd, uint16_t port, int timeout_ms)
{
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
                return 0;
        if (errno != EINPROGRESS)
                return -errno;
        struct pollfd p = { .fd = fd, .events = POLLOUT };
        int n = poll(&p, 1, timeout_ms);
        if (n == 0)
                return -ETIMEDOUT;
        if (n < 0)
                return -errno;
        int soerr = 0;
        socklen_t len = sizeof(soerr);
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
                return -errno;
        return soerr ? -soerr : 0;
}

int ns_port_connect(const struct runtime_driver *d, const struct sandbox *sb, uint16_t port, int timeout_ms, int io_timeout_ms)
{
        (void)d;
        struct init_handle ih;
        init_handle_read(sb->runtime_state, &ih);
        if (ih.pid <= 0)
                return -ESRCH;
        _cleanup_close_ int pidfd = (int)syscall(SYS_pidfd_open, ih.pid, 0);
        if (pidfd < 0)
                return errno == ESRCH ? -ESRCH : -errno;
        if (!init_handle_alive(&ih))
                return -ESRCH;
        _cleanup_close_ int fd = socket_in(pidfd);
        if (fd < 0)
                return fd;
        int r = connect_within(fd, port, timeout_ms);
        if (r < 0)
                return r;
        int flags = fcntl(fd, F_GETFL);
        struct timeval tv = { .tv_sec = io_timeout_ms / 1000, .tv_usec = (io_timeout_ms % 1000) * 1000 };
        int one = 1;
        if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0 ||
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
                return -errno;
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        return TAKE_FD(fd);
}
