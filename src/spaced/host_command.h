/* host_command: run a helper program on the host (mkfs.btrfs, mount, debootstrap) and
 * wait for it. Output goes to a log file or is captured into a bounded buffer. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Runs argv[0] (searched in PATH) with stdin from /dev/null. If out != NULL, stdout+stderr
 * are captured (up to out_size-1 bytes, NUL-terminated, the tail kept); else they go to
 * log_path (appended) when given, else to /dev/null. timeout_s 0 = no limit.
 * Returns the exit status (>= 0), 128+signal if killed, or -errno if it could not start. */
int host_command_run(char *const argv[], const char *log_path, char *out, size_t out_size, int timeout_s);
/* The same with output to log_path, and stop(cls) asked every 20 ms while it runs: when it
 * says true the command's process group is killed (a cancelled build): 128+SIGKILL. */
int host_command_run_until(char *const argv[], const char *log_path, int timeout_s, bool (*stop)(void *), void *cls);

/* Starts argv[0] with one end of a pipe: its stdout when want_stdout, else its stdin; the
 * other stream goes to err_path (appended) or /dev/null. The caller reads or writes
 * *ret_fd (close-on-exec) and collects the child with host_command_wait(). */
int host_command_spawn_piped(char *const argv[], bool want_stdout, const char *err_path, int *ret_fd, pid_t *ret_pid);
/* Waits for a spawned child: its exit status, 128+signal, or -errno. kill_first sends
 * SIGKILL to its process group before waiting (for a transfer abandoned half way). */
int host_command_wait(pid_t pid, bool kill_first);
