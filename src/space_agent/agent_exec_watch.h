/* agent_exec_watch: every execve/execveat of a job's process tree checked by spaced
 * (docs/governance.md, "What a command rule sees"; docs/agent-protocol.md, "Exec watch").
 *
 * A job started with WATCH_EXEC installs, in its child just before the exec, a seccomp
 * filter that turns execve and execveat into user notifications, and hands the listener to
 * the agent. For each notification the agent reads the path and argv from the process's
 * memory, resolves the path inside the sandbox, and queues a JOB_EXEC_CHECK for the
 * subscriber (spaced's output channel; sent again to a new subscriber until answered).
 * spaced's JOB_EXEC_VERDICT lets the exec continue or makes it fail with EACCES. Without a
 * verdict the process waits (fail closed); the job's timeout and signals still end it.
 * At most AGENT_EXEC_WATCH_PENDING_MAX checks of a job wait at once: past that the agent
 * stops taking notifications and the processes wait in the kernel. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "space_agent/agent_server.h"

#define AGENT_EXEC_WATCH_PENDING_MAX 64u
#define AGENT_EXEC_WATCH_ARGV_BYTES (256u << 10) /* argv read for a check; longer is denied */
#define AGENT_EXEC_WATCH_ARGS_MAX 8192u

struct agent_job;
struct agent_job_event;

/* One exec waiting for spaced's verdict. */
struct agent_exec_check {
        struct agent_exec_check *next;
        struct agent_job *job;
        uint64_t id;       /* EXEC_CHECK_ID: the agent's, unique while it runs */
        uint64_t notif_id; /* the kernel's */
        bool sent;         /* to the current subscriber */
        struct agent_job_event *ev;
};

/* Child side, after the last setup step and before the exec: installs the filter and sends
 * its listener over sock (SCM_RIGHTS). 0 or -errno. */
int agent_exec_watch_install(int sock);
/* Parent side: the listener the child sent over sock (blocking until it did or exited);
 * -ECONNRESET when it exited first (its report says why). */
int agent_exec_watch_receive(int sock);

/* Watches listener (taken) for job. 0 or -errno. */
int agent_exec_watch_start(struct agent_job *job, int listener);
/* Closes the listener (a waiting exec then fails with ENOSYS) and drops the job's checks. */
void agent_exec_watch_stop(struct agent_job *job);
/* The next check not yet sent to the subscriber (marked sent), or NULL. */
struct agent_job_event *agent_exec_watch_take_unsent(struct agent_server *s);
/* A new subscriber: every unanswered check goes again. */
void agent_exec_watch_rewind(struct agent_server *s);
/* JOB_EXEC_VERDICT: answers the kernel; a denial's message goes to the job's stderr. */
void agent_exec_watch_verdict(struct agent_server *s, uint64_t id, bool allow, const uint8_t *msg, size_t msg_len);
