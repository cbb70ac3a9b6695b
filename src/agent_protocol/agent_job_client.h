/* agent_job_client: spaced's side of the agent's job messages (docs/agent-protocol.md,
 * "Jobs"). Each request goes on a new connection to the agent that the caller opened (the
 * sandbox's driver hands it out, with AGENT_JOB_CLIENT_TIMEOUT_MS timeouts) and closes; the
 * output channel keeps one. Functions return 0 or -errno; an agent-side ERROR becomes
 * -that errno with its message copied. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent_protocol/agent_frame.h"

#define AGENT_JOB_CLIENT_TIMEOUT_MS 10000

struct agent_job_spec {
        const char *job_id;
        char **argv;      /* NULL-terminated */
        char **envp;      /* NULL-terminated, "K=V" */
        const char *cwd;  /* NULL: the user's home, or / */
        const char *user; /* NULL: root of the sandbox */
        bool stdin_open;
        uint32_t tty_cols, tty_rows; /* both 0: no terminal */
        uint32_t timeout_ms;
        bool watch_exec; /* every exec of the command's tree waits for a verdict (JOB_EXEC_CHECK) */
};

int agent_job_client_start(int fd, const struct agent_job_spec *spec, uint32_t *ret_pid, char *msg, size_t msg_size);
int agent_job_client_input(int fd, const char *job_id, const void *data, size_t len, char *msg, size_t msg_size);
int agent_job_client_close_stdin(int fd, const char *job_id, char *msg, size_t msg_size);
int agent_job_client_signal(int fd, const char *job_id, int sig, char *msg, size_t msg_size);
int agent_job_client_resize(int fd, const char *job_id, uint32_t cols, uint32_t rows, char *msg, size_t msg_size);

/* Makes fd (a new connection to the agent, whose receive timeout bounds the reply) the
 * output channel: subscribes and reads the JOB_SUBSCRIBED reply, whose frame (the ids of the
 * jobs the agent holds) goes to *ret_frame / *ret_buf (caller frees); then clears fd's
 * timeouts. 0 or -errno. */
int agent_job_client_subscribe(int fd, struct agent_frame *ret_frame, uint8_t **ret_buf);
int agent_job_client_ack(int fd, const char *job_id, uint64_t seq);
/* Answers a JOB_EXEC_CHECK on the output channel: the exec continues (allow) or fails with
 * EACCES, message (may be NULL) going to the command's stderr. */
int agent_job_client_exec_verdict(int fd, uint64_t check_id, bool allow, const char *message);
