/* exec_watch_hooks: how the data plane asks about the execs of a watched command
 * (docs/governance.md, "What a command rule sees"). The service layer owns policies and
 * the audit trail, which the data plane may not include: it registers these in
 * ctx->exec_watch at start. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct spaced_context;

/* One exec a command's process tree asked for, as the agent read it (hostile: the
 * sandbox's). */
struct exec_watch_check {
        const char *sandbox_id;
        const char *command_id;
        uint32_t pid;            /* in the sandbox */
        const char *path;        /* as asked, made absolute */
        const char *real;        /* the file that runs, symlinks resolved */
        const char *const *argv; /* NULL-terminated, as passed (argv[0] as the program chose it) */
};

struct exec_watch_hooks {
        /* Whether commands of project_id are watched: its policies have command rules (or
         * cannot be read, then watched: fail closed). */
        bool (*wanted)(struct spaced_context *ctx, const char *project_id);
        /* 0: allowed; 1: denied, the sentence in msg (what the command's stderr shows). */
        int (*decide)(struct spaced_context *ctx, const struct exec_watch_check *c, char *msg, size_t msg_size);
};
