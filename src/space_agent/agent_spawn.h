/* agent_spawn: starting one command in a fresh session with piped stdio.
 *
 * The child reports a failure before exec (stage + errno) through a CLOEXEC pipe; a
 * successful exec closes that pipe with nothing written. */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "space_agent/agent_exec_request.h"

enum agent_spawn_stage {
        AGENT_SPAWN_STAGE_SETUP = 1, /* dup2, /dev/null, signals */
        AGENT_SPAWN_STAGE_CHDIR = 2,
        AGENT_SPAWN_STAGE_EXEC = 3,
};

/* What the child writes to the report pipe when it cannot exec (native endianness). */
struct agent_spawn_report {
        int32_t stage;
        int32_t error;
};

/* Parent ends of the pipes: non-blocking and CLOEXEC. stdin_fd is -1 without stdin. */
struct agent_spawn_fds {
        int stdin_fd;
        int stdout_fd;
        int stderr_fd;
        int report_fd;
};

/* Forks the command. Returns 0 with *ret_fds and *ret_pid filled, or -errno. */
int agent_spawn_start(const struct agent_exec_request *req, struct agent_spawn_fds *ret_fds, pid_t *ret_pid);

/* "exec \"ls\": No such file or directory" style text for a report. */
void agent_spawn_report_format(const struct agent_spawn_report *report, const struct agent_exec_request *req,
                               char *buf, size_t size);
