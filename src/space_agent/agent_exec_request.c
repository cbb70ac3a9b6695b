/* agent_exec_request: decodes an EXEC frame into argv/envp arrays for execvpe. */
#include "space_agent/agent_exec_request.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "space_agent/agent_cleanup.h"

static char *default_env[] = {
        "PATH=" AGENT_EXEC_DEFAULT_PATH,
        "HOME=/root",
        NULL,
};

struct request_counts {
        size_t n_argv;
        size_t n_env;
        size_t string_bytes;
};

static int fail(const char **ret_reason, const char *reason)
{
        *ret_reason = reason;
        return -EINVAL;
}

/* First pass: validates every field we understand and sizes the string storage. */
static int request_scan(const struct agent_frame *f, struct agent_exec_request *req, struct request_counts *counts,
                        const char **ret_reason)
{
        size_t cursor = 0;
        uint16_t tag;
        const uint8_t *data;
        uint32_t len;
        int r;

        while ((r = agent_frame_next_field(f, &cursor, &tag, &data, &len)) > 0) {
                bool is_string = tag == AGENT_F_ARGV || tag == AGENT_F_ENV || tag == AGENT_F_CWD || tag == AGENT_F_JOB_ID ||
                        tag == AGENT_F_USER;

                if (is_string && memchr(data, '\0', len))
                        return fail(ret_reason, "string field contains a NUL byte");

                switch (tag) {
                case AGENT_F_ARGV:
                        counts->n_argv++;
                        counts->string_bytes += len + 1;
                        break;
                case AGENT_F_ENV: {
                        const uint8_t *eq = memchr(data, '=', len);
                        if (!eq || eq == data)
                                return fail(ret_reason, "ENV entry is not KEY=VALUE");
                        counts->n_env++;
                        counts->string_bytes += len + 1;
                        break;
                }
                case AGENT_F_CWD:
                        if (len == 0)
                                return fail(ret_reason, "CWD is empty");
                        counts->string_bytes += len + 1;
                        break;
                case AGENT_F_JOB_ID:
                        if (!agent_job_id_valid(data, len))
                                return fail(ret_reason, "JOB_ID must be 1-63 of [A-Za-z0-9_-]");
                        counts->string_bytes += len + 1;
                        break;
                case AGENT_F_USER:
                        if (len == 0 || len > 255)
                                return fail(ret_reason, "USER must be 1-255 bytes");
                        counts->string_bytes += len + 1;
                        break;
                case AGENT_F_STDIN:
                        if (!req->has_stdin) {
                                req->has_stdin = true;
                                req->stdin_data = data;
                                req->stdin_len = len;
                        }
                        break;
                }
        }
        if (r < 0)
                return r;
        if (counts->n_argv == 0)
                return fail(ret_reason, "EXEC needs at least one ARGV field");

        r = agent_frame_get_u32(f, AGENT_F_TIMEOUT_MS, &req->timeout_ms);
        if (r < 0)
                return fail(ret_reason, "TIMEOUT_MS is not a u32");

        uint8_t open = 0;
        if (agent_frame_get_u8(f, AGENT_F_STDIN_OPEN, &open) < 0)
                return fail(ret_reason, "STDIN_OPEN is not a u8");
        req->stdin_open = open != 0;
        uint8_t watch = 0;
        if (agent_frame_get_u8(f, AGENT_F_WATCH_EXEC, &watch) < 0)
                return fail(ret_reason, "WATCH_EXEC is not a u8");
        req->watch_exec = watch != 0;
        if (agent_frame_get_u32(f, AGENT_F_TTY_COLS, &req->tty_cols) < 0 ||
            agent_frame_get_u32(f, AGENT_F_TTY_ROWS, &req->tty_rows) < 0)
                return fail(ret_reason, "TTY_COLS and TTY_ROWS are u32");
        if ((req->tty_cols == 0) != (req->tty_rows == 0) || req->tty_cols > 65535 || req->tty_rows > 65535)
                return fail(ret_reason, "TTY_COLS and TTY_ROWS go together, 1-65535 each");

        req->output_cap = AGENT_EXEC_OUTPUT_CAP_DEFAULT;
        r = agent_frame_get_u32(f, AGENT_F_OUTPUT_CAP, &req->output_cap);
        if (r < 0)
                return fail(ret_reason, "OUTPUT_CAP is not a u32");
        if (req->output_cap > AGENT_EXEC_OUTPUT_CAP_MAX)
                req->output_cap = AGENT_EXEC_OUTPUT_CAP_MAX;
        return 0;
}

static char *string_copy(char **cursor, const uint8_t *data, uint32_t len)
{
        char *s = *cursor;

        memcpy(s, data, len);
        s[len] = '\0';
        *cursor = s + len + 1;
        return s;
}

int agent_exec_request_parse(const struct agent_frame *f, struct agent_exec_request *ret, const char **ret_reason)
{
        struct agent_exec_request req = {};
        struct request_counts counts = {};
        int r;

        r = request_scan(f, &req, &counts, ret_reason);
        if (r < 0)
                return r;

        /* Sizes are bounded by the frame size (64 MiB), so this cannot overflow. */
        size_t n_ptrs = counts.n_argv + 1 + (counts.n_env ? counts.n_env + 1 : 0);
        _cleanup_free_ void *storage = malloc(n_ptrs * sizeof(char *) + counts.string_bytes + 1);
        if (!storage)
                return -ENOMEM;

        char **ptrs = storage;
        char *strings = (char *)(ptrs + n_ptrs);
        size_t n_argv = 0, n_env = 0;

        req.argv = ptrs;
        req.envp = counts.n_env ? ptrs + counts.n_argv + 1 : default_env;
        req.cwd = "/";

        size_t cursor = 0;
        uint16_t tag;
        const uint8_t *data;
        uint32_t len;
        while (agent_frame_next_field(f, &cursor, &tag, &data, &len) > 0) {
                if (tag == AGENT_F_ARGV)
                        req.argv[n_argv++] = string_copy(&strings, data, len);
                else if (tag == AGENT_F_ENV)
                        req.envp[n_env++] = string_copy(&strings, data, len);
                else if (tag == AGENT_F_CWD) {
                        req.cwd = string_copy(&strings, data, len);
                        req.cwd_set = true;
                } else if (tag == AGENT_F_JOB_ID && !req.job_id)
                        req.job_id = string_copy(&strings, data, len);
                else if (tag == AGENT_F_USER && !req.user)
                        req.user = string_copy(&strings, data, len);
        }
        req.argv[n_argv] = NULL;
        if (counts.n_env)
                req.envp[n_env] = NULL;

        req.storage = TAKE_PTR(storage);
        *ret = req;
        return 0;
}

void agent_exec_request_release(struct agent_exec_request *req)
{
        if (!req)
                return;
        free(req->storage);
        *req = (struct agent_exec_request){};
}

bool agent_job_id_valid(const uint8_t *data, size_t len)
{
        if (len == 0 || len > 63)
                return false;
        for (size_t i = 0; i < len; i++) {
                uint8_t c = data[i];
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_'))
                        return false;
        }
        return true;
}
