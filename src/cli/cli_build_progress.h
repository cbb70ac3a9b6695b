/* cli_build_progress: while `space template build` follows a build log on a terminal, a
 * status line on stderr says which step runs and for how long ("[2/5] RUN … 12s"), redrawn
 * every second and cleared before each piece of the log is printed. Off when stderr is not
 * a terminal. */
#pragma once

#include <stddef.h>

void cli_build_progress_start(void);
/* Call before printing a piece of the log (clears the status line) and after, with the
 * piece, so the status follows the "#N [N/M] …" lines. */
void cli_build_progress_clear(void);
void cli_build_progress_feed(const char *data, size_t len);
void cli_build_progress_stop(void);
