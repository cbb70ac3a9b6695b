/* ns_proc_view: the child side of the sandbox's own /proc views (docs/isolation.md).
 * /proc/meminfo, stat, loadavg and uptime each get a FUSE mount whose server is the agent
 * (space_agent/agent_proc_view.c), so they show the sandbox's limits and processes instead
 * of the host's; /proc/cpuinfo becomes a copy of the host's with only as many processors
 * as the sandbox may use. Runs in the clone()d child: system calls only. A host without
 * /dev/fuse (or a kernel that refuses the mount) keeps the host's figures: never fatal. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NS_PROC_VIEWS 4 /* meminfo, stat, loadavg, uptime: the order space-agent expects */

/* Host side, at start: whether sandboxes can have the views (their root opens /dev/fuse
 * as an unprivileged host uid). When not, a reason for the operator goes to why. */
bool ns_proc_view_available(char *why, size_t size);

/* Mounts the views over proc/… (relative to the sandbox root, the cwd), before pivot_root.
 * Fills fds[i] with each mount's /dev/fuse descriptor (close-on-exec), or -1. */
void ns_proc_view_mount(int fds[NS_PROC_VIEWS]);
/* Replaces proc/cpuinfo with the host's first `cpus` processors. */
void ns_proc_view_cpuinfo(uint32_t cpus);
