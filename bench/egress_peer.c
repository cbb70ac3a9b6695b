/* space-egress-peer: both ends of bench/egress_traffic.py's HTTP traffic, one static binary
 * so that the same client runs on the host (the direct path) and inside a sandbox (through
 * the egress gateway).
 *
 *   serve PORT                   an HTTP/1.0 server: "GET /" answers 13 bytes, "GET /big/N"
 *                                N bytes; every answer closes its connection
 *   latency HOST PORT NAME N     N connections one after another, each a GET / with Host NAME
 *                                read to its end: one line per connection, its microseconds
 *   fetch HOST PORT NAME BYTES   one GET /big/BYTES read to its end: "BYTES MICROSECONDS"
 *   concurrent HOST PORT NAME C  C connections opened at once, each a GET /, all read to their
 *                                end: "OK MICROSECONDS" (OK: how many got the whole answer)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

static const char small_body[] = "hello, bench\n";

static long long now_us(void)
{
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (long long)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

static int write_all(int fd, const char *p, size_t n)
{
        while (n) {
                ssize_t w = write(fd, p, n);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0)
                        return -1;
                p += w;
                n -= (size_t)w;
        }
        return 0;
}

static void *serve_one(void *arg)
{
        int fd = (int)(intptr_t)arg;
        char req[4096];
        size_t got = 0;
        while (got < sizeof(req) - 1) {
                ssize_t r = read(fd, req + got, sizeof(req) - 1 - got);
                if (r <= 0)
                        break;
                got += (size_t)r;
                req[got] = '\0';
                if (strstr(req, "\r\n\r\n"))
                        break;
        }
        req[got] = '\0';
        unsigned long long size = sizeof(small_body) - 1;
        if (strncmp(req, "GET /big/", 9) == 0)
                size = strtoull(req + 9, NULL, 10);
        char head[128];
        int hl = snprintf(head, sizeof(head), "HTTP/1.0 200 OK\r\nContent-Length: %llu\r\n\r\n", size);
        if (write_all(fd, head, (size_t)hl) == 0) {
                if (size == sizeof(small_body) - 1)
                        (void)write_all(fd, small_body, size);
                else {
                        static char block[65536];
                        while (size) {
                                size_t n = size < sizeof(block) ? (size_t)size : sizeof(block);
                                if (write_all(fd, block, n) < 0)
                                        break;
                                size -= n;
                        }
                }
        }
        close(fd);
        return NULL;
}

static int serve(int port)
{
        int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr.s_addr = INADDR_ANY };
        setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(s, 4096) < 0) {
                perror("serve");
                return 1;
        }
        printf("ready\n");
        fflush(stdout);
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 64 * 1024);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        for (;;) {
                int c = accept(s, NULL, NULL);
                if (c < 0)
                        continue;
                pthread_t t;
                if (pthread_create(&t, &attr, serve_one, (void *)(intptr_t)c) != 0)
                        close(c);
        }
}

static int dial(const char *host, int port, int nonblocking)
{
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
        if (inet_pton(AF_INET, host, &a.sin_addr) != 1)
                return -1;
        int fd = socket(AF_INET, SOCK_STREAM | (nonblocking ? SOCK_NONBLOCK : 0), 0), one = 1;
        if (fd < 0)
                return -1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 && errno != EINPROGRESS) {
                close(fd);
                return -1;
        }
        return fd;
}

/* One request on a connected blocking fd, read to EOF: the bytes read, or -1. */
static long long request(int fd, const char *name, const char *path)
{
        char req[512], buf[65536];
        int n = snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n", path, name);
        if (write_all(fd, req, (size_t)n) < 0)
                return -1;
        long long total = 0;
        for (;;) {
                ssize_t r = read(fd, buf, sizeof(buf));
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0)
                        return -1;
                if (r == 0)
                        return total;
                total += r;
        }
}

static int latency(const char *host, int port, const char *name, int n)
{
        for (int i = 0; i < n; i++) {
                long long t0 = now_us();
                int fd = dial(host, port, 0);
                long long got = fd < 0 ? -1 : request(fd, name, "/");
                if (fd >= 0)
                        close(fd);
                if (got <= 0) {
                        fprintf(stderr, "connection %d failed\n", i);
                        return 1;
                }
                printf("%lld\n", now_us() - t0);
        }
        return 0;
}

static int fetch(const char *host, int port, const char *name, long long bytes)
{
        char path[64];
        snprintf(path, sizeof(path), "/big/%lld", bytes);
        long long t0 = now_us();
        int fd = dial(host, port, 0);
        long long got = fd < 0 ? -1 : request(fd, name, path);
        if (fd >= 0)
                close(fd);
        if (got < bytes) {
                fprintf(stderr, "fetch got %lld bytes\n", got);
                return 1;
        }
        printf("%lld %lld\n", got, now_us() - t0);
        return 0;
}

static int concurrent(const char *host, int port, const char *name, int c)
{
        struct pollfd *p = calloc((size_t)c, sizeof(*p));
        int *state = calloc((size_t)c, sizeof(int)); /* 0 connecting, 1 reading, 2 done, -1 failed */
        long long *got = calloc((size_t)c, sizeof(long long));
        if (!p || !state || !got)
                return 1;
        long long t0 = now_us();
        for (int i = 0; i < c; i++) {
                p[i].fd = dial(host, port, 1);
                p[i].events = POLLOUT;
                if (p[i].fd < 0)
                        state[i] = -1;
        }
        char req[512], buf[16384];
        int rl = snprintf(req, sizeof(req), "GET / HTTP/1.0\r\nHost: %s\r\n\r\n", name);
        for (int open = c;;) {
                open = 0;
                for (int i = 0; i < c; i++)
                        open += state[i] == 0 || state[i] == 1;
                if (!open || now_us() - t0 > 60 * 1000000LL)
                        break;
                if (poll(p, (nfds_t)c, 1000) < 0 && errno != EINTR)
                        break;
                for (int i = 0; i < c; i++) {
                        if (p[i].fd < 0 || !p[i].revents)
                                continue;
                        if (state[i] == 0) {
                                int err = 0;
                                socklen_t len = sizeof(err);
                                getsockopt(p[i].fd, SOL_SOCKET, SO_ERROR, &err, &len);
                                if (err || write(p[i].fd, req, (size_t)rl) != rl) {
                                        state[i] = -1;
                                        close(p[i].fd);
                                        p[i].fd = -1; /* poll skips it from now on */
                                        continue;
                                }
                                state[i] = 1;
                                p[i].events = POLLIN;
                        } else {
                                ssize_t r = read(p[i].fd, buf, sizeof(buf));
                                if (r > 0)
                                        got[i] += r;
                                else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
                                        state[i] = r == 0 ? 2 : -1;
                                        close(p[i].fd);
                                        p[i].fd = -1;
                                }
                        }
                }
        }
        int ok = 0;
        for (int i = 0; i < c; i++)
                ok += state[i] == 2 && got[i] > (long long)(sizeof(small_body) - 1);
        printf("%d %lld\n", ok, now_us() - t0);
        return 0;
}

int main(int argc, char **argv)
{
        if (argc == 3 && strcmp(argv[1], "serve") == 0)
                return serve(atoi(argv[2]));
        if (argc == 6 && strcmp(argv[1], "latency") == 0)
                return latency(argv[2], atoi(argv[3]), argv[4], atoi(argv[5]));
        if (argc == 6 && strcmp(argv[1], "fetch") == 0)
                return fetch(argv[2], atoi(argv[3]), argv[4], atoll(argv[5]));
        if (argc == 6 && strcmp(argv[1], "concurrent") == 0)
                return concurrent(argv[2], atoi(argv[3]), argv[4], atoi(argv[5]));
        fprintf(stderr, "usage: space-egress-peer serve PORT | latency|fetch|concurrent HOST PORT NAME N\n");
        return 2;
}
