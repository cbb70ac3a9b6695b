/* agent_proc_figures: the sandbox's own figures for /proc/meminfo, /proc/stat,
 * /proc/loadavg and /proc/uptime, in the kernel's text formats, made from the processes of
 * the sandbox's pid namespace and the limits spaced gave the agent. Approximate by design
 * (resident anonymous memory and tmpfs for memory use, process CPU times for CPU): the
 * cgroup limits stay the enforcement; these views only stop the host's totals showing. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <time.h>

enum agent_proc_file { AGENT_PROC_MEMINFO, AGENT_PROC_STAT, AGENT_PROC_LOADAVG, AGENT_PROC_UPTIME, _AGENT_PROC_MAX };

struct agent_proc_figures {
        uint64_t memory_bytes; /* the sandbox's memory limit; 0: none (the host's total shows) */
        unsigned cpus;         /* CPUs shown: the CPU limit rounded up, at least 1 */
        uint64_t start_us;     /* agent_clock_now_us() at start: uptime counts from there */
        time_t start_wall;     /* btime */
        double load[3];        /* 1, 5 and 15 minute averages of runnable processes */
        uint64_t load_at_us;
};

/* Name of the file under /proc ("meminfo", …). */
const char *agent_proc_file_name(enum agent_proc_file f);
void agent_proc_figures_init(struct agent_proc_figures *fig, uint64_t memory_bytes, unsigned cpus);
/* Writes the file's current text into a new buffer (*ret, *ret_len). -errno on failure. */
int agent_proc_figures_text(struct agent_proc_figures *fig, enum agent_proc_file f, char **ret, size_t *ret_len);
