/* agent_command: one running EXEC: its process, its pipes, captured output, timeout.
 *
 * Done when the process has exited and stdout, stderr and the spawn-report pipe are at
 * EOF, or AGENT_COMMAND_LINGER_US after the exit if a background process keeps a pipe
 * open. Then the EXEC_RESULT goes to the connection and the command is marked dead. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent_protocol/agent_frame.h"
#include "space_agent/agent_exec_request.h"
#include "space_agent/agent_server.h"
#include "space_agent/agent_spawn.h"

#define AGENT_COMMAND_LINGER_US 100000u

struct agent_conn;

struct agent_command_stream {
        struct agent_watch watch;
        uint8_t *data;
        size_t len;
        size_t cap;
        bool truncated;
};

struct agent_command {
        struct agent_server *server;
        struct agent_command *next;
        struct agent_conn *conn; /* NULL once aborted */
        uint8_t *payload;        /* the EXEC frame payload; req points into it */
        struct agent_exec_request req;
        pid_t pid;
        struct agent_command_stream out[2]; /* stdout, stderr */
        struct agent_watch stdin_watch;
        size_t stdin_off;
        struct agent_watch report_watch;
        struct agent_spawn_report report;
        size_t report_got;
        uint64_t start_us;
        uint64_t deadline_us; /* timeout; 0 = none or already fired */
        uint64_t exit_us;
        int status;
        bool exited;
        bool timed_out;
        bool dead;
};

/* Parses the EXEC frame f and starts the command for conn. On success takes *payload
 * (f's buffer), links the command into the server and returns 0. On failure returns
 * -errno with an explanation in *ret_reason (or NULL: use strerror). */
int agent_command_start(struct agent_server *s, struct agent_conn *conn, const struct agent_frame *f, uint8_t **payload,
                        struct agent_command **ret_command, const char **ret_reason);
/* The server reaped the process. */
void agent_command_on_exit(struct agent_command *cmd, int status);
/* Fires the timeout / linger deadline if due; returns the next deadline (0 = none). */
uint64_t agent_command_tick(struct agent_command *cmd, uint64_t now_us);
/* The client went away: SIGKILL the process group and drop everything. */
void agent_command_abort(struct agent_command *cmd);
void agent_command_free(struct agent_command *cmd);
