/* agent_server: epoll loop, accept, SIGCHLD reaping, deadlines and deferred frees. */
#include "space_agent/agent_server.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "space_agent/agent_cleanup.h"
#include "space_agent/agent_clock.h"
#include "space_agent/agent_command.h"
#include "space_agent/agent_conn.h"
#include "space_agent/agent_job.h"
#include "space_agent/agent_listener.h"

#define MAX_EVENTS 64
#define ACCEPT_RETRY_US 100000u

void agent_watch_init(struct agent_watch *w)
{
        *w = (struct agent_watch){ .fd = -1 };
}

int agent_server_watch_add(struct agent_server *s, struct agent_watch *w, int fd, uint32_t events, agent_watch_fn fn)
{
        struct epoll_event ev = { .events = events, .data.ptr = w };

        if (epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        *w = (struct agent_watch){ .fd = fd, .events = events, .fn = fn };
        return 0;
}

int agent_server_watch_set(struct agent_server *s, struct agent_watch *w, uint32_t events)
{
        struct epoll_event ev = { .events = events, .data.ptr = w };

        if (w->fd < 0 || w->events == events)
                return 0;
        if (w->detached) {
                w->events = events;
                return 0;
        }
        if (epoll_ctl(s->epoll_fd, EPOLL_CTL_MOD, w->fd, &ev) < 0)
                return -errno;
        w->events = events;
        return 0;
}

int agent_server_watch_detach(struct agent_server *s, struct agent_watch *w)
{
        if (w->fd < 0 || w->detached)
                return 0;
        if (epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, w->fd, NULL) < 0)
                return -errno;
        w->detached = true;
        return 0;
}

int agent_server_watch_attach(struct agent_server *s, struct agent_watch *w)
{
        struct epoll_event ev = { .events = w->events, .data.ptr = w };

        if (w->fd < 0 || !w->detached)
                return 0;
        if (epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, w->fd, &ev) < 0)
                return -errno;
        w->detached = false;
        return 0;
}

void agent_server_watch_close(struct agent_server *s, struct agent_watch *w)
{
        if (w->fd < 0)
                return;
        if (!w->detached)
                (void)epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, w->fd, NULL);
        close(w->fd);
        w->fd = -1;
        w->detached = false;
}

static void server_accept_pause(struct agent_server *s)
{
        if (agent_server_watch_set(s, &s->listen_watch, 0) == 0)
                s->accept_paused = true;
}

static void server_accept_resume(struct agent_server *s)
{
        if (s->n_conns >= AGENT_SERVER_MAX_CONNS)
                return;
        if (agent_server_watch_set(s, &s->listen_watch, EPOLLIN) == 0)
                s->accept_paused = false;
}

static void server_on_listen(struct agent_watch *w, uint32_t events)
{
        struct agent_server *s = agent_container_of(w, struct agent_server, listen_watch);

        for (int i = 0; i < 32; i++) {
                if (s->n_conns >= AGENT_SERVER_MAX_CONNS) {
                        server_accept_pause(s);
                        return;
                }
                int fd = accept4(w->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (fd < 0) {
                        if (errno == EAGAIN || errno == EWOULDBLOCK)
                                return;
                        if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO)
                                continue;
                        /* EMFILE, ENFILE, ENOBUFS, ENOMEM: back off and retry later. */
                        server_accept_pause(s);
                        return;
                }
                (void)agent_conn_new(s, fd);
        }
}

static struct agent_command *server_find_command(struct agent_server *s, pid_t pid)
{
        for (struct agent_command *c = s->commands; c; c = c->next)
                if (!c->dead && !c->exited && c->pid == pid)
                        return c;
        return NULL;
}

/* Reaps every exited child, ours or reparented orphans. */
static void server_reap(struct agent_server *s)
{
        for (;;) {
                int status;
                pid_t pid = waitpid(-1, &status, WNOHANG);
                if (pid < 0 && errno == EINTR)
                        continue;
                if (pid <= 0)
                        return;
                struct agent_command *c = server_find_command(s, pid);
                if (c) {
                        agent_command_on_exit(c, status);
                        continue;
                }
                for (struct agent_job *j = s->jobs; j; j = j->next)
                        if (!j->dead && !j->exited && j->pid == pid) {
                                agent_job_on_exit(j, status);
                                break;
                        }
        }
}

/* Park and unpark are spaced's (runsc kill), never a process's inside the sandbox. Measured
 * with runsc 20240729: a runsc-sent signal arrives as SI_USER from pid 0 (sent from outside
 * every pid namespace of the sandbox); a kill() inside arrives as SI_USER with the sender's
 * pid, and rt_sigqueueinfo() may forge pid 0 but not SI_USER (the kernel refuses code >= 0
 * towards another process), nor can F_SETOWN's SIGIO signals (their code is POLL_*). */
static bool signal_from_outside(const struct signalfd_siginfo *info)
{
        return info->ssi_code == SI_USER && info->ssi_pid == 0;
}

static void server_on_signal(struct agent_watch *w, uint32_t events)
{
        struct agent_server *s = agent_container_of(w, struct agent_server, signal_watch);
        struct signalfd_siginfo info[8];
        ssize_t n;

        while ((n = read(w->fd, info, sizeof info)) > 0)
                for (size_t i = 0; i < (size_t)n / sizeof info[0]; i++) {
                        if (!signal_from_outside(&info[i]))
                                continue;
                        if (info[i].ssi_signo == SIGUSR1)
                                agent_listener_park(s);
                        else if (info[i].ssi_signo == SIGUSR2)
                                (void)agent_listener_unpark(s);
                }
        server_reap(s);
}

/* Runs deadlines; returns the epoll timeout in ms (-1 = none). */
static int server_tick(struct agent_server *s)
{
        uint64_t now = agent_clock_now_us(), next = 0;

        for (struct agent_command *c = s->commands; c; c = c->next) {
                uint64_t d = agent_command_tick(c, now);
                if (d && (!next || d < next))
                        next = d;
        }
        for (struct agent_job *j = s->jobs; j; j = j->next) {
                uint64_t d = agent_job_tick(j, now);
                if (d && (!next || d < next))
                        next = d;
        }
        if (s->accept_paused) {
                server_accept_resume(s);
                if (s->accept_paused && s->n_conns < AGENT_SERVER_MAX_CONNS && (!next || now + ACCEPT_RETRY_US < next))
                        next = now + ACCEPT_RETRY_US;
        }
        if (!next)
                return -1;
        if (next <= now)
                return 0;
        uint64_t ms = (next - now + 999) / 1000;
        return ms > 60000 ? 60000 : (int)ms;
}

static void server_sweep(struct agent_server *s)
{
        bool freed = false;

        for (struct agent_command **p = &s->commands; *p;) {
                struct agent_command *c = *p;
                if (!c->dead) {
                        p = &c->next;
                        continue;
                }
                *p = c->next;
                agent_command_free(c);
        }
        for (struct agent_job **p = &s->jobs; *p;) {
                struct agent_job *j = *p;
                if (!j->dead) {
                        p = &j->next;
                        continue;
                }
                *p = j->next;
                agent_job_free(j);
        }
        for (struct agent_conn **p = &s->conns; *p;) {
                struct agent_conn *c = *p;
                if (!c->dead) {
                        p = &c->next;
                        continue;
                }
                *p = c->next;
                agent_conn_free(c);
                freed = true;
        }
        if (freed && s->accept_paused)
                server_accept_resume(s);
}

static void server_boot_id_make(struct agent_server *s)
{
        uint8_t raw[16];
        ssize_t n = getrandom(raw, sizeof raw, GRND_NONBLOCK);

        if (n != (ssize_t)sizeof raw) {
                /* No entropy yet: still unique enough to tell restarts apart. */
                uint64_t t = agent_clock_now_us() ^ ((uint64_t)getpid() << 32);
                for (size_t i = 0; i < sizeof raw; i++)
                        raw[i] = (uint8_t)(t >> (8 * (i % 8))) ^ (uint8_t)(i * 37);
        }
        for (size_t i = 0; i < sizeof raw; i++)
                snprintf(s->boot_id + 2 * i, 3, "%02x", raw[i]);
}

int agent_server_listen(struct agent_server *s, int fd)
{
        return agent_server_watch_add(s, &s->listen_watch, fd, EPOLLIN, server_on_listen);
}

int agent_server_init(struct agent_server *s, int listen_fd, const char *listen_path)
{
        _cleanup_close_ int lfd = listen_fd;
        sigset_t mask;
        int r;

        *s = (struct agent_server){ .epoll_fd = -1, .listen_path = listen_path };
        agent_watch_init(&s->listen_watch);
        agent_watch_init(&s->signal_watch);
        server_boot_id_make(s);

        int flags = fcntl(lfd, F_GETFL);
        if (flags < 0 || fcntl(lfd, F_SETFL, flags | O_NONBLOCK) < 0 || fcntl(lfd, F_SETFD, FD_CLOEXEC) < 0)
                return -errno;

        s->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
        if (s->epoll_fd < 0)
                return -errno;

        sigemptyset(&mask);
        sigaddset(&mask, SIGCHLD);
        if (listen_path) {
                sigaddset(&mask, SIGUSR1);
                sigaddset(&mask, SIGUSR2);
        }
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return -errno;
        int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        if (sfd < 0)
                return -errno;

        r = agent_server_watch_add(s, &s->signal_watch, sfd, EPOLLIN, server_on_signal);
        if (r < 0)
                return r;
        r = agent_server_listen(s, TAKE_FD(lfd));
        if (r < 0)
                return r;

        /* Children that exited before the signalfd existed. */
        server_reap(s);
        return 0;
}

int agent_server_run(struct agent_server *s)
{
        struct epoll_event events[MAX_EVENTS];

        for (;;) {
                int timeout = server_tick(s);
                server_sweep(s);

                int n = epoll_wait(s->epoll_fd, events, MAX_EVENTS, timeout);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                for (int i = 0; i < n; i++) {
                        struct agent_watch *w = events[i].data.ptr;
                        if (w->fd >= 0)
                                w->fn(w, events[i].events);
                }
                server_sweep(s);
        }
}
