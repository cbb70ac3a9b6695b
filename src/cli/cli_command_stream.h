/* cli_command_stream: the output of one streamed command (GET …/commands/{cid}/events),
 * written here byte for byte — stdout and pty to stdout, stderr to stderr — and followed to
 * its exit across dropped connections and restarts of spaced: each reconnection sends the
 * last event id seen (Last-Event-ID), so nothing is printed twice or lost. */
#pragma once

#include <stdbool.h>

#include "cli/cli.h"
#include "cli/cli_sse.h"

struct cli_command_stream {
        struct cli *data; /* a client holding the sandbox's attach token (cli_session) */
        const char *sandbox_id;
        const char *command_id;
        bool until_idle; /* stop once what was written so far is out (space logs without -f) */
        /* filled in */
        char last_id[32]; /* the last event seen: the resume point */
        bool ended;
        int exit_status; /* the command's, once ended (255: lost, gone) */
        int write_error;
        struct cli_sse sse;
};

/* Returns 0 once the command ended (exit_status) or, with until_idle, once the stream went
 * idle; -errno otherwise, having said why on stderr and, when the stream was lost, how to
 * reattach. */
int cli_command_stream_follow(struct cli_command_stream *s);
/* The note a lost stream ends with: the command goes on, and how to get back to it. */
void cli_command_stream_reattach_hint(const char *sandbox_id, const char *command_id);
