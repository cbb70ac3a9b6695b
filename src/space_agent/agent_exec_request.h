/* agent_exec_request: a validated EXEC request, decoded from its frame. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent_protocol/agent_frame.h"

#define AGENT_EXEC_OUTPUT_CAP_DEFAULT (1u << 20)
#define AGENT_EXEC_OUTPUT_CAP_MAX (16u << 20)
#define AGENT_EXEC_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

struct agent_exec_request {
        char **argv;     /* NULL-terminated, at least one entry */
        char **envp;     /* NULL-terminated; the default env when none was sent */
        const char *cwd; /* "/" unless sent */
        bool cwd_set;
        const uint8_t *stdin_data; /* points into the frame payload */
        size_t stdin_len;
        bool has_stdin;      /* false: the command's stdin is /dev/null */
        uint32_t timeout_ms; /* 0 = none */
        uint32_t output_cap; /* bytes kept per stream, clamped to AGENT_EXEC_OUTPUT_CAP_MAX */
        /* JOB_START only */
        const char *job_id;          /* NULL for EXEC */
        const char *user;            /* NULL: run as the agent's user (root in the sandbox) */
        bool stdin_open;             /* stdin is a pipe kept open for JOB_INPUT */
        uint32_t tty_cols, tty_rows; /* both non-zero: run on a pseudo-terminal */
        bool watch_exec;             /* every exec of the tree is checked (agent_exec_watch.h) */
        void *storage;               /* owns argv, envp and their strings */
};

/* Decodes and validates an EXEC frame. On failure returns -EINVAL (bad request, with a
 * static explanation in *ret_reason), -EPROTO (malformed fields) or -ENOMEM. The
 * request keeps pointers into f's payload, which must outlive it. */
int agent_exec_request_parse(const struct agent_frame *f, struct agent_exec_request *ret, const char **ret_reason);
void agent_exec_request_release(struct agent_exec_request *req);
/* True for a job id spaced may choose: [A-Za-z0-9_-]{1,63}. */
bool agent_job_id_valid(const uint8_t *data, size_t len);
