/* agent_job_client: spaced's side of the agent's job messages (docs/agent-protocol.md,
 * "Jobs"). Requests open a connection each; the output channel keeps one. Functions return
 * 0 or -errno; an agent-side ERROR becomes -that errno with its message copied. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent_protocol/agent_frame.h"

struct agent_job_spec {
        const char *job_id;
        char **argv; /* NULL-terminated */
        char **envp; /* NULL-terminated, "K=V" */
        const char *cwd;  /* NULL: the user's home, or / */
        const char *user; /* NULL: root of the sandbox */
        bool stdin_open;
        uint32_t tty_cols, tty_rows; /* both 0: no terminal */
        uint32_t timeout_ms;
};

int agent_job_client_start(const char *socket_path, const struct agent_job_spec *spec, uint32_t *ret_pid,
                           char *msg, size_t msg_size);
int agent_job_client_input(const char *socket_path, const char *job_id, const void *data, size_t len, char *msg,
                           size_t msg_size);
int agent_job_client_close_stdin(const char *socket_path, const char *job_id, char *msg, size_t msg_size);
int agent_job_client_signal(const char *socket_path, const char *job_id, int sig, char *msg, size_t msg_size);
int agent_job_client_resize(const char *socket_path, const char *job_id, uint32_t cols, uint32_t rows, char *msg,
                            size_t msg_size);

/* Opens the output channel: connects, subscribes and reads the JOB_SUBSCRIBED reply, whose
 * frame (the ids of the jobs the agent holds) goes to *ret_frame / *ret_buf (caller frees).
 * Returns the connected fd. */
int agent_job_client_subscribe(const char *socket_path, int reply_timeout_ms, struct agent_frame *ret_frame,
                               uint8_t **ret_buf);
int agent_job_client_ack(int fd, const char *job_id, uint64_t seq);
