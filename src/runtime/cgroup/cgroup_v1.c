/* cgroup v1 backend: one directory per sandbox in each of the memory, pids, cpu and freezer
 * hierarchies (and cpuacct for usage when mounted separately). */
#include "runtime/cgroup/cgroup_manager.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "state_store/state_store.h"

static const char *const v1_names[_CGROUP_BASE_MAX] = { "memory", "pids", "cpu", "freezer", "cpuacct" };

int cgroup_v1_init(struct cgroup_manager *cg, const char *instance, char *reason, size_t reason_size)
{
        char(*v1_base)[PATH_MAX] = cg->base;
        for (int i = 0; i < _CGROUP_BASE_MAX; i++) {
                char mnt[PATH_MAX];
                if (cgroup_find_mount(v1_names[i], mnt, sizeof(mnt)) < 0) {
                        if (i == CGROUP_V1_CPUACCT) {
                                v1_base[i][0] = '\0';
                                continue;
                        }
                        snprintf(reason, reason_size, "controller %s is not mounted", v1_names[i]);
                        return -ENOENT;
                }
                snprintf(v1_base[i], sizeof(v1_base[i]), "%s/space", mnt);
                if (mkdir(v1_base[i], 0755) < 0 && errno != EEXIST) {
                        snprintf(reason, reason_size, "cannot create %s: %m", v1_base[i]);
                        return -errno;
                }
                snprintf(v1_base[i], sizeof(v1_base[i]), "%s/space/%s", mnt, instance);
                if (mkdir(v1_base[i], 0755) < 0 && errno != EEXIST) {
                        snprintf(reason, reason_size, "cannot create %s: %m", v1_base[i]);
                        return -errno;
                }
        }
        /* If cpu and cpuacct share a hierarchy, one directory serves both. */
        return 0;
}

static void dir_of(const struct cgroup_manager *cg, int ctrl, const char *id, char *buf, size_t size)
{
        snprintf(buf, size, "%s/%s", cg->base[ctrl], id);
}

static int v1_create(const struct cgroup_manager *cg, const char *id, const struct sandbox_resources *res)
{
        char dir[PATH_MAX], val[64];
        for (int i = 0; i < _CGROUP_BASE_MAX; i++) {
                if (!cg->base[i][0])
                        continue;
                dir_of(cg, i, id, dir, sizeof(dir));
                if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                        return -errno;
        }
        int r;
        dir_of(cg, CGROUP_V1_MEMORY, id, dir, sizeof(dir));
        snprintf(val, sizeof(val), "%lld", (long long)res->memory_mb * 1024 * 1024);
        if ((r = cgroup_write_file(dir, "memory.limit_in_bytes", val)) < 0)
                return r;
        /* Swap counts against the same limit where swap accounting exists. */
        cgroup_write_file(dir, "memory.memsw.limit_in_bytes", val);
        dir_of(cg, CGROUP_V1_PIDS, id, dir, sizeof(dir));
        snprintf(val, sizeof(val), "%lld", (long long)res->pids);
        if ((r = cgroup_write_file(dir, "pids.max", val)) < 0)
                return r;
        dir_of(cg, CGROUP_V1_CPU, id, dir, sizeof(dir));
        if ((r = cgroup_write_file(dir, "cpu.cfs_period_us", "100000")) < 0)
                return r;
        snprintf(val, sizeof(val), "%lld", (long long)(res->cpus * 100000.0));
        return cgroup_write_file(dir, "cpu.cfs_quota_us", val);
}

static int v1_attach(const struct cgroup_manager *cg, const char *id, pid_t pid)
{
        char dir[PATH_MAX], val[32];
        snprintf(val, sizeof(val), "%d", (int)pid);
        for (int i = 0; i < _CGROUP_BASE_MAX; i++) {
                if (!cg->base[i][0])
                        continue;
                dir_of(cg, i, id, dir, sizeof(dir));
                int r = cgroup_write_file(dir, "cgroup.procs", val);
                if (r < 0)
                        return r;
        }
        return 0;
}

static void sleep_ms(long ms)
{
        struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
}

static int v1_freeze(const struct cgroup_manager *cg, const char *id, bool frozen)
{
        char dir[PATH_MAX], state[32];
        dir_of(cg, CGROUP_V1_FREEZER, id, dir, sizeof(dir));
        const char *want = frozen ? "FROZEN" : "THAWED";
        int r = cgroup_write_file(dir, "freezer.state", want);
        if (r < 0)
                return r;
        for (int i = 0; i < 5000; i++) {
                if (cgroup_read_file(dir, "freezer.state", state, sizeof(state)) < 0)
                        return -EIO;
                if (strncmp(state, want, strlen(want)) == 0)
                        return 0;
                if (i % 100 == 99)
                        cgroup_write_file(dir, "freezer.state", want);
                sleep_ms(1);
        }
        return -ETIMEDOUT;
}

static int v1_kill_all(const struct cgroup_manager *cg, const char *id)
{
        char dir[PATH_MAX];
        dir_of(cg, CGROUP_V1_FREEZER, id, dir, sizeof(dir));
        if (access(dir, F_OK) < 0)
                return 0;
        for (int i = 0; i < 1000; i++) {
                int left = cgroup_count_procs_in(dir);
                if (left <= 0)
                        return left < 0 && left != -ENOENT ? left : 0;
                cgroup_kill_procs_in(dir);
                /* Frozen tasks only die once thawed. */
                cgroup_write_file(dir, "freezer.state", "THAWED");
                sleep_ms(i < 20 ? 1 : 5);
        }
        return -ETIMEDOUT;
}

static int v1_destroy(const struct cgroup_manager *cg, const char *id)
{
        char dir[PATH_MAX];
        int ret = 0;
        for (int i = 0; i < _CGROUP_BASE_MAX; i++) {
                if (!cg->base[i][0])
                        continue;
                dir_of(cg, i, id, dir, sizeof(dir));
                for (int tries = 0; rmdir(dir) < 0; tries++) {
                        if (errno == ENOENT)
                                break;
                        if (errno != EBUSY || tries > 200) {
                                ret = -errno;
                                break;
                        }
                        sleep_ms(5);
                }
        }
        return ret;
}

static int v1_read_limit_hits(const struct cgroup_manager *cg, const char *id, struct cgroup_events *ret)
{
        char dir[PATH_MAX];
        memset(ret, 0, sizeof(*ret));
        dir_of(cg, CGROUP_V1_MEMORY, id, dir, sizeof(dir));
        int r = cgroup_read_counter(dir, "memory.oom_control", "oom_kill", &ret->oom_kills);
        if (r == 0) {
                dir_of(cg, CGROUP_V1_PIDS, id, dir, sizeof(dir));
                r = cgroup_read_counter(dir, "pids.events", "max", &ret->pids_max_hits);
        }
        if (r < 0)
                memset(ret, 0, sizeof(*ret));
        return r;
}

static int v1_read_events(const struct cgroup_manager *cg, const char *id, struct cgroup_events *ret)
{
        char dir[PATH_MAX], buf[64];
        int r = v1_read_limit_hits(cg, id, ret);
        if (r < 0)
                return r;
        dir_of(cg, CGROUP_V1_MEMORY, id, dir, sizeof(dir));
        if (cgroup_read_file(dir, "memory.usage_in_bytes", buf, sizeof(buf)) > 0)
                ret->memory_bytes = strtoull(buf, NULL, 10);
        ret->memory_cache_bytes = cgroup_read_keyed(dir, "memory.stat", "cache");
        /* "No limit" reads as a huge page-aligned number. */
        if (cgroup_read_file(dir, "memory.limit_in_bytes", buf, sizeof(buf)) > 0) {
                uint64_t limit = strtoull(buf, NULL, 10);
                ret->memory_limit_bytes = limit >= (1ull << 62) ? 0 : limit;
        }
        dir_of(cg, cg->base[CGROUP_V1_CPUACCT][0] ? CGROUP_V1_CPUACCT : CGROUP_V1_CPU, id, dir, sizeof(dir));
        if (cgroup_read_file(dir, "cpuacct.usage", buf, sizeof(buf)) > 0)
                ret->cpu_usage_us = strtoull(buf, NULL, 10) / 1000;
        return 0;
}

static int v1_count_procs(const struct cgroup_manager *cg, const char *id)
{
        char dir[PATH_MAX];
        dir_of(cg, CGROUP_V1_FREEZER, id, dir, sizeof(dir));
        return cgroup_count_procs_in(dir);
}

static int v1_list(const struct cgroup_manager *cg, char ***ret_ids, size_t *ret_n)
{
        return cgroup_list_children(cg->base[CGROUP_V1_FREEZER], ret_ids, ret_n);
}

const struct cgroup_manager_ops cgroup_manager_v1 = {
        .name = "v1",
        .create = v1_create,
        .attach = v1_attach,
        .freeze = v1_freeze,
        .kill_all = v1_kill_all,
        .destroy = v1_destroy,
        .read_events = v1_read_events,
        .read_limit_hits = v1_read_limit_hits,
        .count_procs = v1_count_procs,
        .list = v1_list,
};
