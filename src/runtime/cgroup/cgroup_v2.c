/* cgroup v2 backend: <unified mount>/space/<id> with the memory, pids and cpu controllers
 * enabled for space/'s children. */
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

int cgroup_v2_init(struct cgroup_manager *cg, const char *instance, char *reason, size_t reason_size)
{
        char controllers[512], v2_mount[PATH_MAX];
        char *v2_base = cg->base[0];
        const size_t v2_base_size = sizeof(cg->base[0]);
        if (cgroup_find_mount(NULL, v2_mount, sizeof(v2_mount)) < 0) {
                snprintf(reason, reason_size, "no cgroup2 mount");
                return -ENOENT;
        }
        if (cgroup_read_file(v2_mount, "cgroup.controllers", controllers, sizeof(controllers)) < 0 ||
            !strstr(controllers, "memory") || !strstr(controllers, "pids") || !strstr(controllers, "cpu")) {
                snprintf(reason, reason_size, "%s lacks the memory, pids or cpu controller", v2_mount);
                return -ENOTSUP;
        }
        snprintf(v2_base, v2_base_size, "%s/space", v2_mount);
        if (mkdir(v2_base, 0755) < 0 && errno != EEXIST) {
                snprintf(reason, reason_size, "cannot create %s: %m", v2_base);
                return -errno;
        }
        char space_dir[PATH_MAX];
        snprintf(space_dir, sizeof(space_dir), "%s", v2_base);
        snprintf(v2_base, v2_base_size, "%s/%s", space_dir, instance);
        if (mkdir(v2_base, 0755) < 0 && errno != EEXIST) {
                snprintf(reason, reason_size, "cannot create %s: %m", v2_base);
                return -errno;
        }
        /* Each level must hand the controllers down to the next. */
        int r = cgroup_write_file(v2_mount, "cgroup.subtree_control", "+memory +pids +cpu");
        if (r == 0)
                r = cgroup_write_file(space_dir, "cgroup.subtree_control", "+memory +pids +cpu");
        if (r == 0)
                r = cgroup_write_file(v2_base, "cgroup.subtree_control", "+memory +pids +cpu");
        if (r < 0) {
                snprintf(reason, reason_size, "cannot enable controllers under %s: %s", v2_base, strerror(-r));
                return r;
        }
        return 0;
}

static void dir_of(const struct cgroup_manager *cg, const char *id, char *buf, size_t size)
{
        snprintf(buf, size, "%s/%s", cg->base[0], id);
}

static int v2_create(const struct cgroup_manager *cg, const char *id, const struct sandbox_resources *res)
{
        char dir[PATH_MAX], val[64];
        dir_of(cg, id, dir, sizeof(dir));
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return -errno;
        int r;
        snprintf(val, sizeof(val), "%lld", (long long)res->memory_mb * 1024 * 1024);
        if ((r = cgroup_write_file(dir, "memory.max", val)) < 0)
                return r;
        cgroup_write_file(dir, "memory.swap.max", "0");
        snprintf(val, sizeof(val), "%lld", (long long)res->pids);
        if ((r = cgroup_write_file(dir, "pids.max", val)) < 0)
                return r;
        snprintf(val, sizeof(val), "%lld 100000", (long long)(res->cpus * 100000.0));
        return cgroup_write_file(dir, "cpu.max", val);
}

static int v2_attach(const struct cgroup_manager *cg, const char *id, pid_t pid)
{
        char dir[PATH_MAX], val[32];
        dir_of(cg, id, dir, sizeof(dir));
        snprintf(val, sizeof(val), "%d", (int)pid);
        return cgroup_write_file(dir, "cgroup.procs", val);
}

static void sleep_ms(long ms)
{
        struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
}

static int v2_freeze(const struct cgroup_manager *cg, const char *id, bool frozen)
{
        char dir[PATH_MAX];
        dir_of(cg, id, dir, sizeof(dir));
        int r = cgroup_write_file(dir, "cgroup.freeze", frozen ? "1" : "0");
        if (r < 0)
                return r;
        for (int i = 0; i < 5000; i++) {
                if (cgroup_read_keyed(dir, "cgroup.events", "frozen") == (frozen ? 1u : 0u))
                        return 0;
                sleep_ms(1);
        }
        return -ETIMEDOUT;
}

static int v2_kill_all(const struct cgroup_manager *cg, const char *id)
{
        char dir[PATH_MAX];
        dir_of(cg, id, dir, sizeof(dir));
        if (access(dir, F_OK) < 0)
                return 0;
        bool have_kill = cgroup_write_file(dir, "cgroup.kill", "1") == 0;
        for (int i = 0; i < 1000; i++) {
                int left = cgroup_count_procs_in(dir);
                if (left <= 0)
                        return left < 0 && left != -ENOENT ? left : 0;
                if (!have_kill)
                        cgroup_kill_procs_in(dir);
                sleep_ms(i < 20 ? 1 : 5);
        }
        return -ETIMEDOUT;
}

static int v2_destroy(const struct cgroup_manager *cg, const char *id)
{
        char dir[PATH_MAX];
        dir_of(cg, id, dir, sizeof(dir));
        for (int tries = 0; rmdir(dir) < 0; tries++) {
                if (errno == ENOENT)
                        return 0;
                if (errno != EBUSY || tries > 200)
                        return -errno;
                sleep_ms(5);
        }
        return 0;
}

static int v2_read_limit_hits(const struct cgroup_manager *cg, const char *id, struct cgroup_events *ret)
{
        char dir[PATH_MAX];
        memset(ret, 0, sizeof(*ret));
        dir_of(cg, id, dir, sizeof(dir));
        int r = cgroup_read_counter(dir, "memory.events", "oom_kill", &ret->oom_kills);
        if (r == 0)
                r = cgroup_read_counter(dir, "pids.events", "max", &ret->pids_max_hits);
        if (r < 0)
                memset(ret, 0, sizeof(*ret));
        return r;
}

static int v2_read_events(const struct cgroup_manager *cg, const char *id, struct cgroup_events *ret)
{
        char dir[PATH_MAX], buf[64];
        int r = v2_read_limit_hits(cg, id, ret);
        if (r < 0)
                return r;
        dir_of(cg, id, dir, sizeof(dir));
        ret->cpu_usage_us = cgroup_read_keyed(dir, "cpu.stat", "usage_usec");
        if (cgroup_read_file(dir, "memory.current", buf, sizeof(buf)) > 0)
                ret->memory_bytes = strtoull(buf, NULL, 10);
        ret->memory_cache_bytes = cgroup_read_keyed(dir, "memory.stat", "file");
        if (cgroup_read_file(dir, "memory.max", buf, sizeof(buf)) > 0 && strncmp(buf, "max", 3) != 0)
                ret->memory_limit_bytes = strtoull(buf, NULL, 10);
        return 0;
}

static int v2_count_procs(const struct cgroup_manager *cg, const char *id)
{
        char dir[PATH_MAX];
        dir_of(cg, id, dir, sizeof(dir));
        return cgroup_count_procs_in(dir);
}

static int v2_list(const struct cgroup_manager *cg, char ***ret_ids, size_t *ret_n)
{
        return cgroup_list_children(cg->base[0], ret_ids, ret_n);
}

const struct cgroup_manager_ops cgroup_manager_v2 = {
        .name = "v2",
        .create = v2_create,
        .attach = v2_attach,
        .freeze = v2_freeze,
        .kill_all = v2_kill_all,
        .destroy = v2_destroy,
        .read_events = v2_read_events,
        .read_limit_hits = v2_read_limit_hits,
        .count_procs = v2_count_procs,
        .list = v2_list,
};
