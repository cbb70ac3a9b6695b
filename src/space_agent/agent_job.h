/* agent_job: a command that outlives the connection that started it (JOB_START).
 *
 * Its output becomes a sequence of events (JOB_OUTPUT frames numbered from 1, then one
 * JOB_EXIT) queued in the agent until the subscriber — spaced's output channel —
 * acknowledges them (JOB_ACK) once stored. A new subscriber is sent every event not yet
 * acknowledged, in order, so nothing is lost or reordered when spaced restarts. While more
 * than AGENT_JOB_UNACKED_MAX bytes wait for acknowledgement the job's output is not read:
 * the command blocks on its pipe instead of the agent growing. A job is forgotten once its
 * JOB_EXIT is acknowledged. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent_protocol/agent_frame.h"
#include "space_agent/agent_exec_request.h"
#include "space_agent/agent_server.h"
#include "space_agent/agent_spawn.h"

#define AGENT_JOB_UNACKED_MAX (4u << 20)
#define AGENT_JOB_READ_CHUNK (256u << 10)
#define AGENT_JOB_STDIN_MAX (4u << 20)
#define AGENT_JOB_MAX 4096u

/* One encoded frame waiting to be sent and acknowledged. */
struct agent_job_event {
        struct agent_job_event *next;
        uint64_t seq;
        bool orphan; /* an exec check answered while half written: freed once written */
        size_t len;
        uint8_t frame[];
};

struct agent_job {
        struct agent_server *server;
        struct agent_job *next;
        uint8_t *payload; /* the JOB_START frame payload; req points into it */
        struct agent_exec_request req;
        struct agent_spawn_user user;
        bool has_user;
        pid_t pid;
        bool on_pty;
        int pty_slave_fd;               /* closed once the command has exec'd */
        bool pty_eof;                   /* the terminal side is closed; the master waits for the exit */
        struct agent_watch out[2];      /* stdout, stderr; on a pty out[0] is the master */
        struct agent_watch stdin_watch; /* the stdin pipe, or a duplicate of the pty master */
        uint8_t *stdin_buf;
        size_t stdin_len, stdin_off;
        bool stdin_close_pending;
        struct agent_watch report_watch;
        struct agent_watch exec_watch; /* the seccomp listener of a WATCH_EXEC job (agent_exec_watch.h) */
        struct agent_spawn_report report;
        size_t report_got;
        /* events: head is the oldest unacknowledged, unsent the next to send */
        struct agent_job_event *head, *tail, *unsent;
        uint64_t next_seq;
        size_t unacked_bytes;
        bool reading_paused;
        uint64_t start_us, deadline_us, exit_us;
        int status;
        bool exited;
        bool timed_out;
        bool finished; /* JOB_EXIT queued */
        bool dead;     /* JOB_EXIT acknowledged: freed by the sweep */
};

/* Parses a JOB_START frame and starts the job. Takes *payload on success. Returns 0 or
 * -errno with a reason (or NULL: strerror) in *ret_reason. */
int agent_job_start(struct agent_server *s, const struct agent_frame *f, uint8_t **payload, struct agent_job **ret_job,
                    const char **ret_reason);
struct agent_job *agent_job_find(struct agent_server *s, const uint8_t *id, size_t len);
void agent_job_on_exit(struct agent_job *job, int status);
/* Fires the timeout / linger deadline if due; returns the next deadline (0 = none). */
uint64_t agent_job_tick(struct agent_job *job, uint64_t now_us);
/* Drops events up to seq (they are stored); marks the job dead after its exit. */
void agent_job_ack(struct agent_job *job, uint64_t seq);
/* Queues a line of the agent's own (an exec denial) on the job's stderr (its terminal). */
void agent_job_note(struct agent_job *job, const char *text);
/* Queues stdin bytes: -EAGAIN when the queue is full, -EPIPE when stdin is closed. */
int agent_job_input(struct agent_job *job, const uint8_t *data, size_t len);
int agent_job_close_stdin(struct agent_job *job);
int agent_job_signal(struct agent_job *job, int sig);
int agent_job_resize(struct agent_job *job, uint32_t cols, uint32_t rows);
/* A new subscriber: every unacknowledged event is to be sent again. */
void agent_job_rewind(struct agent_job *job);
/* Reading resumes when acknowledgements brought the backlog under the limit. */
void agent_job_update_reading(struct agent_job *job);
void agent_job_free(struct agent_job *job);
