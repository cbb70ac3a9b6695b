#include "runtime/egress_gateway.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "spaced/log.h"

extern char **environ;

struct map_entry {
        char addr[16];
        char sandbox[32];
        char *line; /* the control line that sets it, "\n" included */
};

struct egress_gateway {
        char program[4096], resolver[64], refuse[32], ca_cert[4096], ca_key[4096], upstream_ca[4096];
        bool log_json;
        int listen_fd, dns_fd;
        uint16_t tcp_port, dns_port;
        int stop_fd;
        pthread_t supervisor;
        bool running;
        pthread_mutex_t lock; /* map, control_fd, pid */
        struct map_entry *map;
        size_t n, cap;
        int control_fd; /* spaced's end; -1 while no gateway runs */
        pid_t pid;
        void (*on_record)(void *arg, const json_t *record);
        void *record_arg;
        char records[64 << 10]; /* what the gateway sent back, up to its last full line (supervisor only) */
        size_t records_len;
};

/* The gateway's records, as far as they came; on the supervisor's thread, which alone reads
 * control_fd (and closes it). */
static void read_records(struct egress_gateway *g, int fd)
{
        for (;;) {
                ssize_t n = recv(fd, g->records + g->records_len, sizeof(g->records) - 1 - g->records_len, MSG_DONTWAIT);
                if (n <= 0)
                        return;
                g->records_len += (size_t)n;
                g->records[g->records_len] = '\0';
                char *line = g->records, *nl;
                while ((nl = strchr(line, '\n'))) {
                        *nl = '\0';
                        json_t *rec = json_loads(line, 0, NULL);
                        if (json_is_object(rec) && g->on_record)
                                g->on_record(g->record_arg, rec);
                        json_decref(rec);
                        line = nl + 1;
                }
                size_t rest = g->records_len - (size_t)(line - g->records);
                if (rest == sizeof(g->records) - 1)
                        rest = 0; /* a line longer than any record: dropped */
                memmove(g->records, line, rest);
                g->records_len = rest;
        }
}

static int bind_local(int type, uint16_t *ret_port)
{
        _cleanup_close_ int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof(sa);
        if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || (type == SOCK_STREAM && listen(fd, 1024) < 0) ||
            getsockname(fd, (struct sockaddr *)&sa, &len) < 0)
                return -errno;
        *ret_port = ntohs(sa.sin_port);
        return TAKE_FD(fd);
}

/* The host's first IPv4 nameserver. */
static void host_resolver(char *buf, size_t size)
{
        _cleanup_fclose_ FILE *f = fopen("/etc/resolv.conf", "re");
        char line[256], addr[64];
        struct in_addr in;
        snprintf(buf, size, "127.0.0.1");
        while (f && fgets(line, sizeof(line), f))
                if (sscanf(line, " nameserver %63s", addr) == 1 && inet_pton(AF_INET, addr, &in) == 1) {
                        snprintf(buf, size, "%s", addr);
                        return;
                }
}

static int write_all(int fd, const char *text, size_t len)
{
        while (len) {
                ssize_t n = send(fd, text, len, MSG_NOSIGNAL);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                text += n;
                len -= (size_t)n;
        }
        return 0;
}

/* A new gateway with the whole map; under g->lock. */
static int spawn_locked(struct egress_gateway *g, int *ret_pidfd)
{
        int pair[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0)
                return -errno;
        /* Room for the whole map, and a bound on how long a write may wait for a gateway that
         * does not read: then it is taken for hung (egress_gateway_set). */
        int sndbuf = 8 << 20;
        struct timeval wait = { .tv_sec = 2 };
        setsockopt(pair[0], SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf));
        setsockopt(pair[0], SOL_SOCKET, SO_SNDTIMEO, &wait, sizeof(wait));
        /* Above the numbers the child gets, so no dup2 is a no-op that keeps O_CLOEXEC. */
        int fds[3] = { fcntl(g->listen_fd, F_DUPFD_CLOEXEC, 10), fcntl(g->dns_fd, F_DUPFD_CLOEXEC, 10),
                       fcntl(pair[1], F_DUPFD_CLOEXEC, 10) };
        close(pair[1]);
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        for (int i = 0; i < 3; i++)
                posix_spawn_file_actions_adddup2(&fa, fds[i], 3 + i);
        char *argv[] = { g->program,
                         "--listen-fd",
                         "3",
                         "--dns-fd",
                         "4",
                         "--control-fd",
                         "5",
                         "--resolver",
                         g->resolver,
                         "--refuse",
                         g->refuse,
                         "--log-format",
                         g->log_json ? "json" : "text",
                         g->ca_cert[0] ? "--ca-cert" : NULL,
                         g->ca_cert,
                         "--ca-key",
                         g->ca_key,
                         g->upstream_ca[0] ? "--upstream-ca" : NULL,
                         g->upstream_ca,
                         NULL };
        /* spaced blocks the signals it waits for: the gateway starts with none blocked. */
        posix_spawnattr_t attr;
        sigset_t none, all;
        sigemptyset(&none);
        sigfillset(&all);
        posix_spawnattr_init(&attr);
        posix_spawnattr_setsigmask(&attr, &none);
        posix_spawnattr_setsigdefault(&attr, &all);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
        pid_t pid;
        int r = fds[0] < 0 || fds[1] < 0 || fds[2] < 0 ? EMFILE : posix_spawn(&pid, g->program, &fa, &attr, argv, environ);
        posix_spawnattr_destroy(&attr);
        posix_spawn_file_actions_destroy(&fa);
        for (int i = 0; i < 3; i++)
                if (fds[i] >= 0)
                        close(fds[i]);
        if (r != 0) {
                close(pair[0]);
                return -r;
        }
        int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        if (pidfd < 0) {
                r = -errno;
                kill(pid, SIGKILL);
                waitpid(pid, NULL, 0);
                close(pair[0]);
                return r;
        }
        g->control_fd = pair[0];
        g->pid = pid;
        for (size_t i = 0; i < g->n; i++)
                if (write_all(g->control_fd, g->map[i].line, strlen(g->map[i].line)) < 0) {
                        kill(pid, SIGKILL); /* restarted with the whole map again */
                        break;
                }
        *ret_pidfd = pidfd;
        return 0;
}

static void *supervise(void *arg)
{
        struct egress_gateway *g = arg;
        for (;;) {
                int pidfd = -1;
                pthread_mutex_lock(&g->lock);
                int r = spawn_locked(g, &pidfd);
                pid_t pid = g->pid;
                pthread_mutex_unlock(&g->lock);
                struct timespec started;
                clock_gettime(CLOCK_MONOTONIC, &started);
                if (r < 0) {
                        log_error("egress.gateway_start_failed", "program=\"%s\" error=\"%s\"", g->program, strerror(-r));
                } else {
                        log_info("egress.gateway_started", "pid=%d tcp_port=%u dns_port=%u", (int)pid, g->tcp_port, g->dns_port);
                        pthread_mutex_lock(&g->lock);
                        int control = g->control_fd;
                        pthread_mutex_unlock(&g->lock);
                        g->records_len = 0;
                        struct pollfd p[3] = { { .fd = pidfd, .events = POLLIN },
                                               { .fd = g->stop_fd, .events = POLLIN },
                                               { .fd = control, .events = POLLIN } };
                        for (;;) {
                                if (poll(p, 3, -1) < 0 && errno == EINTR)
                                        continue;
                                if (p[0].revents || p[1].revents)
                                        break;
                                if (p[2].revents & POLLIN)
                                        read_records(g, control);
                                if (p[2].revents & (POLLHUP | POLLERR))
                                        p[2].fd = -1; /* the gateway's end closed: its exit follows */
                        }
                        read_records(g, control); /* what it sent before it went */
                        bool stopping = p[1].revents != 0;
                        pthread_mutex_lock(&g->lock);
                        close(g->control_fd); /* the gateway exits on EOF */
                        g->control_fd = -1;
                        g->pid = 0;
                        pthread_mutex_unlock(&g->lock);
                        if (stopping)
                                kill(pid, SIGTERM);
                        siginfo_t info = { 0 };
                        waitid(P_PIDFD, (id_t)pidfd, &info, WEXITED);
                        close(pidfd);
                        if (stopping)
                                return NULL;
                        log_warn("egress.gateway_exited",
                                 "pid=%d code=%d status=%d effect=\"restarting; sandboxes have no "
                                 "egress meanwhile\"",
                                 (int)pid, info.si_code, info.si_status);
                }
                struct timespec now;
                clock_gettime(CLOCK_MONOTONIC, &now);
                /* A gateway that dies at once is not restarted in a tight loop. */
                bool quick = r < 0 || now.tv_sec - started.tv_sec < 1;
                struct pollfd stop = { .fd = g->stop_fd, .events = POLLIN };
                if (poll(&stop, 1, quick ? 1000 : 50) > 0)
                        return NULL;
        }
}

int egress_gateway_start(const struct egress_gateway_config *cfg, struct egress_gateway **ret, struct space_error *err)
{
        struct egress_gateway *g = calloc(1, sizeof(*g));
        if (!g)
                return space_error_errno(err, ENOMEM, "egress gateway");
        g->listen_fd = g->dns_fd = g->stop_fd = g->control_fd = -1;
        pthread_mutex_init(&g->lock, NULL);
        snprintf(g->program, sizeof(g->program), "%s", cfg->program ? cfg->program : "");
        snprintf(g->refuse, sizeof(g->refuse), "%s", cfg->refuse);
        snprintf(g->ca_cert, sizeof(g->ca_cert), "%s", cfg->ca_cert ? cfg->ca_cert : "");
        snprintf(g->ca_key, sizeof(g->ca_key), "%s", cfg->ca_key ? cfg->ca_key : "");
        snprintf(g->upstream_ca, sizeof(g->upstream_ca), "%s", cfg->upstream_ca ? cfg->upstream_ca : "");
        g->log_json = cfg->log_json;
        g->on_record = cfg->on_record;
        g->record_arg = cfg->record_arg;
        if (cfg->resolver && cfg->resolver[0])
                snprintf(g->resolver, sizeof(g->resolver), "%s", cfg->resolver);
        else
                host_resolver(g->resolver, sizeof(g->resolver));
        if (!g->program[0] || access(g->program, X_OK) < 0) {
                space_error_set(err, SPACE_E_INTERNAL, "space-egress not found (\"%s\"; --egress-gateway PATH)", g->program);
                goto fail;
        }
        g->listen_fd = bind_local(SOCK_STREAM, &g->tcp_port);
        g->dns_fd = bind_local(SOCK_DGRAM, &g->dns_port);
        g->stop_fd = eventfd(0, EFD_CLOEXEC);
        if (g->listen_fd < 0 || g->dns_fd < 0 || g->stop_fd < 0) {
                space_error_errno(err,
                                  g->listen_fd < 0        ? -g->listen_fd
                                          : g->dns_fd < 0 ? -g->dns_fd
                                                          : errno,
                                  "bind the egress gateway's sockets on 127.0.0.1");
                goto fail;
        }
        int r = pthread_create(&g->supervisor, NULL, supervise, g);
        if (r != 0) {
                space_error_errno(err, r, "start the egress supervisor");
                goto fail;
        }
        g->running = true;
        *ret = g;
        return 0;
fail:
        egress_gateway_free(g);
        return -1;
}

void egress_gateway_free(struct egress_gateway *g)
{
        if (!g)
                return;
        if (g->running) {
                uint64_t one = 1;
                (void)!write(g->stop_fd, &one, sizeof(one));
                pthread_join(g->supervisor, NULL);
        }
        for (size_t i = 0; i < g->n; i++)
                erase_and_free(g->map[i].line); /* policy lines carry credentials */
        free(g->map);
        if (g->listen_fd >= 0)
                close(g->listen_fd);
        if (g->dns_fd >= 0)
                close(g->dns_fd);
        if (g->stop_fd >= 0)
                close(g->stop_fd);
        pthread_mutex_destroy(&g->lock);
        free(g);
}

uint16_t egress_gateway_tcp_port(const struct egress_gateway *g)
{
        return g->tcp_port;
}

uint16_t egress_gateway_dns_port(const struct egress_gateway *g)
{
        return g->dns_port;
}

pid_t egress_gateway_pid(struct egress_gateway *g)
{
        pthread_mutex_lock(&g->lock);
        pid_t pid = g->pid;
        pthread_mutex_unlock(&g->lock);
        return pid;
}

int egress_gateway_set(struct egress_gateway *g, const char *addr, const char *sandbox, const json_t *policy)
{
        json_t *msg = json_pack("{s:s, s:s, s:s, s:O}", "op", "set", "addr", addr, "sandbox", sandbox, "policy", policy);
        char *text = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
        json_decref(msg);
        size_t len = text ? strlen(text) : 0;
        char *line = text ? malloc(len + 2) : NULL; /* not realloc: the text it would leave behind holds credentials */
        if (line)
                memcpy(line, text, len);
        erase_and_free(text);
        if (!line)
                return -ENOMEM;
        line[len] = '\n';
        line[len + 1] = '\0';
        pthread_mutex_lock(&g->lock);
        struct map_entry *e = NULL;
        for (size_t i = 0; i < g->n && !e; i++)
                if (strcmp(g->map[i].addr, addr) == 0)
                        e = &g->map[i];
        if (!e && g->n == g->cap) {
                size_t cap = g->cap ? g->cap * 2 : 16;
                struct map_entry *grown = realloc(g->map, cap * sizeof(*grown));
                if (!grown) {
                        pthread_mutex_unlock(&g->lock);
                        erase_and_free(line);
                        return -ENOMEM;
                }
                g->map = grown;
                g->cap = cap;
        }
        if (!e) {
                e = &g->map[g->n++];
                snprintf(e->addr, sizeof(e->addr), "%s", addr);
        } else {
                erase_and_free(e->line);
        }
        snprintf(e->sandbox, sizeof(e->sandbox), "%s", sandbox);
        e->line = line;
        /* A gateway that is down gets the whole map when it is started again; one that does
         * does not read what it is sent within 2 s (hung) is killed and restarted
         * with it, rather than holding every create up here. */
        if (g->control_fd >= 0 && write_all(g->control_fd, line, len + 1) < 0 && g->pid > 0) {
                log_warn("egress.gateway_stuck", "pid=%d effect=\"killed; restarted with the whole map\"", (int)g->pid);
                kill(g->pid, SIGKILL);
        }
        pthread_mutex_unlock(&g->lock);
        return 0;
}

int egress_gateway_addr_of(struct egress_gateway *g, const char *sandbox, char *ret)
{
        int r = -ENOENT;
        pthread_mutex_lock(&g->lock);
        for (size_t i = 0; i < g->n && r < 0; i++)
                if (strcmp(g->map[i].sandbox, sandbox) == 0) {
                        memcpy(ret, g->map[i].addr, sizeof(g->map[i].addr));
                        r = 0;
                }
        pthread_mutex_unlock(&g->lock);
        return r;
}

void egress_gateway_forget(struct egress_gateway *g, const char *sandbox)
{
        pthread_mutex_lock(&g->lock);
        for (size_t i = 0; i < g->n;) {
                struct map_entry *e = &g->map[i];
                if (strcmp(e->sandbox, sandbox) != 0) {
                        i++;
                        continue;
                }
                char line[64];
                int len = snprintf(line, sizeof(line), "{\"op\":\"del\",\"addr\":\"%s\"}\n", e->addr);
                if (g->control_fd >= 0 && write_all(g->control_fd, line, (size_t)len) < 0 && g->pid > 0)
                        kill(g->pid, SIGKILL);
                erase_and_free(e->line);
                *e = g->map[--g->n];
        }
        pthread_mutex_unlock(&g->lock);
}
