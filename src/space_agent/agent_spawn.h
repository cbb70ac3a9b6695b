/* agent_spawn: starting one command in a fresh session with piped stdio.
 *
 * The child reports a failure before exec (stage + errno) through a CLOEXEC pipe; a
 * successful exec closes that pipe with nothing written. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "space_agent/agent_exec_request.h"

enum agent_spawn_stage {
        AGENT_SPAWN_STAGE_SETUP = 1, /* dup2, /dev/null, signals */
        AGENT_SPAWN_STAGE_CHDIR = 2,
        AGENT_SPAWN_STAGE_EXEC = 3,
        AGENT_SPAWN_STAGE_USER = 4,
        AGENT_SPAWN_STAGE_WATCH = 5, /* the exec watch's filter (agent_exec_watch.h) */
};

/* What the child writes to the report pipe when it cannot exec (native endianness). */
struct agent_spawn_report {
        int32_t stage;
        int32_t error;
};

/* Parent ends of the pipes: non-blocking and CLOEXEC. stdin_fd is -1 without stdin. On a
 * pseudo-terminal, pty_fd is the master (stdin and output both) and the others are -1. */
struct agent_spawn_fds {
        int stdin_fd;
        int stdout_fd;
        int stderr_fd;
        int report_fd;
        int pty_fd;
        /* the terminal side, held open by the agent until the command has exec'd: a master
         * whose terminal was never opened reports hang-up */
        int pty_slave_fd;
        /* WATCH_EXEC: the seccomp listener of the command's execs (its first included), or -1 */
        int exec_listener_fd;
};

#define AGENT_SPAWN_MAX_GROUPS 64

/* Whom a command runs as, resolved from the sandbox's /etc/passwd and /etc/group. */
struct agent_spawn_user {
        uid_t uid;
        gid_t gid;
        gid_t groups[AGENT_SPAWN_MAX_GROUPS];
        int n_groups;
        char name[256];
        char home[512];
        /* The request sent no ENV: HOME, USER and LOGNAME replace the agent's defaults
         * (HOME=/root is root's, not this user's). */
        bool env_default;
};

/* Looks up a user name (or a decimal uid). Returns 0, -ENOENT when unknown, -ENAMETOOLONG. */
int agent_spawn_user_resolve(const char *user, struct agent_spawn_user *ret);

/* Forks the command, as user when not NULL (HOME, USER and LOGNAME are set from it unless
 * the request's own ENV has them; its home is the default cwd). Returns 0 with
 * *ret_fds and *ret_pid filled, or -errno. */
int agent_spawn_start(const struct agent_exec_request *req, const struct agent_spawn_user *user, struct agent_spawn_fds *ret_fds,
                      pid_t *ret_pid);
/* Sets a pseudo-terminal's size. */
int agent_spawn_pty_resize(int pty_fd, uint32_t cols, uint32_t rows);

/* "exec \"ls\": No such file or directory" style text for a report. */
void agent_spawn_report_format(const struct agent_spawn_report *report, const struct agent_exec_request *req, char *buf,
                               size_t size);
