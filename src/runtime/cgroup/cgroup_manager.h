/* cgroup_manager: resource limits, freezing and killing of one sandbox's processes.
 * Two backends behind one table: cgroup v2 (production hosts) and cgroup v1 (hosts whose
 * controllers live in v1 hierarchies, like these development machines). Every sandbox gets
 * <hierarchy>/space/<instance>/<id>, where <instance> names one spaced state directory, so
 * two daemons on one host never mistake each other's sandboxes for orphans. Cgroups outside
 * space/<instance>/ are never touched. Returns 0 or -errno. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

struct sandbox_resources;

struct cgroup_events {
        uint64_t oom_kills;          /* processes killed by the OOM killer */
        uint64_t pids_max_hits;      /* fork/clone refused by pids.max */
        uint64_t cpu_usage_us;       /* total CPU time */
        uint64_t memory_bytes;       /* current usage */
        uint64_t memory_cache_bytes; /* of which page cache (v2 memory.stat file, v1 cache) */
        uint64_t memory_limit_bytes; /* the limit; 0 when there is none */
};

struct cgroup_manager;

struct cgroup_manager_ops {
        const char *name; /* "v1" | "v2" */
        int (*create)(const struct cgroup_manager *cg, const char *id, const struct sandbox_resources *res);
        int (*attach)(const struct cgroup_manager *cg, const char *id, pid_t pid);
        /* Freezes or thaws and waits until the kernel reports it done. */
        int (*freeze)(const struct cgroup_manager *cg, const char *id, bool frozen);
        /* SIGKILLs every process inside and waits until none is left (bounded). */
        int (*kill_all)(const struct cgroup_manager *cg, const char *id);
        /* Removes the (empty) cgroup; 0 if it does not exist. */
        int (*destroy)(const struct cgroup_manager *cg, const char *id);
        /* *ret is zeroed first; -errno (and zeroes) when the sandbox's counters cannot be read,
         * so a caller never compares a figure it did not get. */
        int (*read_events)(const struct cgroup_manager *cg, const char *id, struct cgroup_events *ret);
        /* The same for only the two limit counters (oom_kills, pids_max_hits), the rest left
         * zero: what an exec compares before and after, at two small reads. */
        int (*read_limit_hits)(const struct cgroup_manager *cg, const char *id, struct cgroup_events *ret);
        /* Number of processes inside; -ENOENT if the cgroup does not exist. */
        int (*count_procs)(const struct cgroup_manager *cg, const char *id);
        /* Ids of every sandbox cgroup present (for the orphan sweep). Caller frees each and the array. */
        int (*list)(const struct cgroup_manager *cg, char ***ret_ids, size_t *ret_n);
};

enum { CGROUP_V1_MEMORY, CGROUP_V1_PIDS, CGROUP_V1_CPU, CGROUP_V1_FREEZER, CGROUP_V1_CPUACCT, _CGROUP_BASE_MAX };

/* One daemon's cgroups: the backend and the directories it works under. */
struct cgroup_manager {
        const struct cgroup_manager_ops *ops;
        /* v2: base[0] = <unified mount>/space/<instance>. v1: <controller mount>/space/<instance>
         * per controller (CGROUP_V1_*), "" when absent (cpuacct only). */
        char base[_CGROUP_BASE_MAX][PATH_MAX];
};

/* Picks v2 when the unified hierarchy has the memory and pids controllers, else v1.
 * -ENOTSUP with a reason when neither works. Free with free(). */
int cgroup_manager_detect(const char *instance, struct cgroup_manager **ret, char *reason, size_t reason_size);

/* Shared helpers for the two backends (cgroup_files.c). */
int cgroup_write_file(const char *dir, const char *file, const char *value);
int cgroup_read_file(const char *dir, const char *file, char *buf, size_t size);
/* Reads "key value" lines into *ret (0 if the key is absent); -errno if the file cannot be read. */
int cgroup_read_counter(const char *dir, const char *file, const char *key, uint64_t *ret);
/* As cgroup_read_counter, 0 for an unreadable file. */
uint64_t cgroup_read_keyed(const char *dir, const char *file, const char *key);
int cgroup_count_procs_in(const char *dir);
int cgroup_kill_procs_in(const char *dir);
int cgroup_list_children(const char *dir, char ***ret_ids, size_t *ret_n);
/* Finds the mount point of a cgroup v1 controller (or of cgroup2 when controller is NULL). */
int cgroup_find_mount(const char *controller, char *buf, size_t size);

extern const struct cgroup_manager_ops cgroup_manager_v1;
extern const struct cgroup_manager_ops cgroup_manager_v2;
/* Fill cg->base for the backend (making the directories); -errno with a reason. */
int cgroup_v1_init(struct cgroup_manager *cg, const char *instance, char *reason, size_t reason_size);
int cgroup_v2_init(struct cgroup_manager *cg, const char *instance, char *reason, size_t reason_size);
