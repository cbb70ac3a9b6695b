#include "space_agent/agent_port.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#define CONNECT_TIMEOUT_S 5
#define RELAY_BLOCK (64u << 10)


/* Every descriptor but a and b closed (the child holds nothing else of the agent's). */
static void keep_only(int a, int b)
{
        int lo = a < b ? a : b, hi = a < b ? b : a;
        if (lo > 3)
                (void)syscall(SYS_close_range, 3u, (unsigned)lo - 1, 0);
        if (hi > lo + 1)
                (void)syscall(SYS_close_range, (unsigned)lo + 1, (unsigned)hi - 1, 0);
        (void)syscall(SYS_close_range, (unsigned)hi + 1, ~0U, 0);
}

/* The child: bytes both ways until either side closes. */
static void relay(int conn, int tcp)
{
        char *buf = malloc(RELAY_BLOCK);
        int flags = fcntl(conn, F_GETFL);
        if (!buf || flags < 0 || fcntl(conn, F_SETFL, flags & ~O_NONBLOCK) < 0)
                return;
        for (;;) {
                struct pollfd fds[2] = { { .fd = conn, .events = POLLIN }, { .fd = tcp, .events = POLLIN } };
                if (poll(fds, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        return;
                }
                for (int i = 0; i < 2; i++) {
                        if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                                continue;
                        ssize_t n = read(fds[i].fd, buf, RELAY_BLOCK);
                        if (n < 0 && (errno == EINTR || errno == EAGAIN))
                                continue;
                        if (n <= 0 || agent_frame_write_all(fds[1 - i].fd, buf, (size_t)n) < 0)
                                return;
                }
        }
}

void agent_port_connect(struct agent_conn *c, const struct agent_frame *f)
{
        uint32_t port = 0;
        if (agent_frame_get_u32(f, AGENT_F_PORT, &port) != 1 || port == 0 || port > 65535) {
                agent_conn_reply_error(c, EINVAL, "PORT_CONNECT needs a PORT of 1-65535");
                return;
        }
        int tcp = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (tcp < 0) {
                agent_conn_reply_error(c, errno, NULL);
                return;
        }
        struct timeval tv = { .tv_sec = CONNECT_TIMEOUT_S };
        struct sockaddr_in sa = { .sin_family = AF_INET,
                                  .sin_port = htons((uint16_t)port),
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        (void)setsockopt(tcp, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        if (connect(tcp, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                int e = errno == EINPROGRESS ? ETIMEDOUT : errno;
                close(tcp);
                agent_conn_reply_error(c, e, NULL);
                return;
        }
        /* The OK is the connection's first reply: it fits its empty socket buffer at once. */
        struct agent_frame_writer w;
        agent_frame_writer_begin(&w, AGENT_MSG_OK);
        int conn = c->watch.fd;
        bool sent =
                agent_frame_writer_finish(&w) == 0 && send(conn, w.data, w.len, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)w.len;
        agent_frame_writer_release(&w);
        pid_t pid = sent ? fork() : -1;
        if (pid == 0) {
                keep_only(conn, tcp);
                relay(conn, tcp);
                _exit(0);
        }
        close(tcp);
        agent_conn_close(c); /* the child holds the stream (or it failed: spaced sees it closed) */
}
