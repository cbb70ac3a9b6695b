/* cli_attach: running a command through the data plane, or coming back to one. */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "cli/cli.h"

/* Opens an attach session on sandbox_id, starts body (POST …/commands) and follows its
 * output to the end, resuming after dropped connections. interactive: stream this
 * process's stdin to the command; tty: on a pseudo-terminal of this terminal's size, with
 * this terminal in raw mode. SIGINT/SIGTERM/SIGHUP are passed to the command, SIGWINCH
 * resizes its terminal. Returns the command's exit status or CLI_EXIT_FAILURE. */
int cli_attach_exec(struct cli *cli, const char *sandbox_id, json_t *body, bool interactive, bool tty);

/* `space attach [-i] ID CMD`: the same for a command already running (or ended: its output
 * and exit code). */
int cli_attach_main(struct cli *cli, int argc, char **argv);
