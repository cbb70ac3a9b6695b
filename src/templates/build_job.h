/* build_job: a RUN step's command, run as a job of the build sandbox's agent (the same
 * protocol as streamed commands) so that its output reaches the build log as it is printed,
 * and so that it can run as the Spacefile's USER. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct build_log;

struct build_job_result {
        int exit_code;
        int term_signal;
        bool timed_out;
};

struct runtime_driver;
struct sandbox;

/* Runs argv in sb (on driver d), whose agent d connects to; user NULL: root. Output goes
 * to log. Returns 0 (see *ret) or -errno with msg filled when the agent said why. */
int build_job_run(const struct runtime_driver *d, const struct sandbox *sb, char **argv, char **envp, const char *cwd,
                  const char *user, uint32_t timeout_ms, struct build_log *log, struct build_job_result *ret, char *msg,
                  size_t msg_size);
