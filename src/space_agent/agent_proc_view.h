/* agent_proc_view: serves the sandbox's own /proc/meminfo, stat, loadavg and uptime.
 * The namespace launcher mounts one FUSE file system over each of those files (a file as
 * its root) and hands the agent the four /dev/fuse descriptors; a process forked from the
 * agent ("space-proc-view", reaped by the agent like any orphan) answers their requests.
 * Each open takes a snapshot of the figures
 * (agent_proc_figures), so a reader sees one consistent text however it reads. Only
 * reading is served; everything else is refused. */
#pragma once

#include <stdint.h>

#include "space_agent/agent_proc_figures.h"

/* fds[f] is the /dev/fuse descriptor mounted over /proc/<agent_proc_file_name(f)>, or -1.
 * Takes every fd in fds (closed in the agent in every case). Call it before the agent
 * opens anything else: the server keeps only fds 0-2 and its four. */
int agent_proc_view_start(const int fds[_AGENT_PROC_MAX], uint64_t memory_bytes, unsigned cpus);
