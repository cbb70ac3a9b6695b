/* bench_proc: what /proc says about spaced and the sandboxes' agents (memory). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct bench_rss {
        size_t count; /* processes counted */
        long sum_kb, min_kb, max_kb;
};

/* The pid of the process named "spaced" that listens on TCP port `port`, else the only
 * process named "spaced". Returns 0, -ENOENT (none) or -ENOTUNIQ (several, none on the port). */
int bench_proc_find_spaced(unsigned port, pid_t *ret);

/* VmRSS and VmHWM of pid, in KiB. Returns 0 or -errno. */
int bench_proc_rss(pid_t pid, long *ret_rss_kb, long *ret_hwm_kb);

/* VmRSS of every live process named "space-agent" whose cgroup is space/[<instance>/]<id> for an id that
 * `mine` accepts (so agents of other spaced instances are left out). Returns 0 or -errno. */
int bench_proc_agents_rss(bool (*mine)(const char *id, void *userdata), void *userdata, struct bench_rss *ret);

/* Memory charged to the cgroup of each sandbox in ids (cgroup v1 memory.usage_in_bytes or v2
 * memory.current, under <hierarchy>/space/[<instance>/]<id>): page cache and kernel memory included.
 * Sandboxes without a readable figure are not counted. */
void bench_proc_cgroup_memory(char (*ids)[64], size_t n, struct bench_rss *ret);
