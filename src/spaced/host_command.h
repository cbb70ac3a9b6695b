/* host_command: run a helper program on the host (mkfs.btrfs, mount, debootstrap) and
 * wait for it. Output goes to a log file or is captured into a bounded buffer. */
#pragma once

#include <stddef.h>

/* Runs argv[0] (searched in PATH) with stdin from /dev/null. If out != NULL, stdout+stderr
 * are captured (up to out_size-1 bytes, NUL-terminated, the tail kept); else they go to
 * log_path (appended) when given, else to /dev/null. timeout_s 0 = no limit.
 * Returns the exit status (>= 0), 128+signal if killed, or -errno if it could not start. */
int host_command_run(char *const argv[], const char *log_path, char *out, size_t out_size, int timeout_s);
