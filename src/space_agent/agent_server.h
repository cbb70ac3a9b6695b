/* agent_server: space-agent's single-threaded epoll loop. It owns the listening socket,
 * the SIGCHLD signalfd (it reaps every child: as PID 1 orphans land here), the list of
 * connections and the list of running commands, and their deadlines.
 *
 * Objects are never freed while an epoll batch is being dispatched: they are marked dead
 * (their fds closed and watches set to -1) and freed by a sweep after the batch. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct agent_conn;
struct agent_command;
struct agent_job;
struct agent_job_event;
struct agent_watch;
struct agent_exec_check;

typedef void (*agent_watch_fn)(struct agent_watch *w, uint32_t events);

/* An fd in the server's epoll set. Owners embed it and find themselves again with
 * agent_container_of() in fn. fd is -1 when closed. */
struct agent_watch {
        int fd;
        uint32_t events;
        agent_watch_fn fn;
        bool detached; /* open but out of the epoll set (not even hang-ups are reported) */
};

#define agent_container_of(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

#define AGENT_SERVER_MAX_CONNS 1024

struct agent_server {
        int epoll_fd;
        struct agent_watch listen_watch;
        struct agent_watch signal_watch;
        bool accept_paused;
        unsigned n_conns;
        struct agent_conn *conns;
        struct agent_command *commands;
        struct agent_job *jobs;
        /* the output channel (JOB_SUBSCRIBE) and the event being written to it */
        struct agent_conn *subscriber;
        struct agent_job_event *sub_event;
        size_t sub_off;
        /* execs of watched jobs waiting for spaced's verdict (agent_exec_watch.h) */
        struct agent_exec_check *exec_checks;
        uint64_t next_exec_check_id;
        char boot_id[33];
        const char *listen_path; /* the socket it bound (--listen), NULL for --listen-fd */
        bool parked;             /* listener and connections closed for a checkpoint (agent_listener.h) */
};

/* Takes listen_fd (a listening unix stream socket) in every case. listen_path: where it
 * is bound when the agent bound it (then SIGUSR1/SIGUSR2 park and unpark it), or NULL. */
int agent_server_init(struct agent_server *s, int listen_fd, const char *listen_path);
/* Accepts connections on fd (taking it). */
int agent_server_listen(struct agent_server *s, int fd);
/* Serves until a fatal error; returns -errno. */
int agent_server_run(struct agent_server *s);

void agent_watch_init(struct agent_watch *w);
/* Registers fd (taking it: it is closed on failure too). */
int agent_server_watch_add(struct agent_server *s, struct agent_watch *w, int fd, uint32_t events, agent_watch_fn fn);
int agent_server_watch_set(struct agent_server *s, struct agent_watch *w, uint32_t events);
/* Takes the fd out of the epoll set without closing it, and puts it back. */
int agent_server_watch_detach(struct agent_server *s, struct agent_watch *w);
int agent_server_watch_attach(struct agent_server *s, struct agent_watch *w);
/* Unregisters and closes; no-op when already closed. */
void agent_server_watch_close(struct agent_server *s, struct agent_watch *w);
