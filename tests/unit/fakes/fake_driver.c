#include "fake_driver.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "spaced/dir_tree.h"

#define FAKE_MAX 256

struct fake_entry {
        char id[32];
        struct fake_resources res;
};

struct fake_call_count {
        char verb[24];
        long n;
};

struct fake_state {
        pthread_mutex_t lock;
        pthread_cond_t changed; /* a hold was lifted, or a call started waiting */
        char held[24];          /* calls of this verb wait until it is lifted */
        int waiting;            /* calls waiting on the hold */
        struct fault_plan *faults;
        struct fake_entry entries[FAKE_MAX];
        size_t n;
        long boots;
        struct fake_call_count calls[32];
        size_t ncalls;
};

static struct fake_state *state_of(const struct runtime_driver *d)
{
        return d->state;
}

static bool has_resources(const struct fake_resources *r)
{
        return r->rootfs || r->running || r->paused || r->run_state;
}

/* The entry of id (made when create is set); NULL if none. Under the lock. */
static struct fake_entry *entry_locked(struct fake_state *s, const char *id, bool create)
{
        for (size_t i = 0; i < s->n; i++)
                if (strcmp(s->entries[i].id, id) == 0)
                        return &s->entries[i];
        if (!create || s->n == FAKE_MAX)
                return NULL;
        struct fake_entry *e = &s->entries[s->n++];
        memset(e, 0, sizeof(*e));
        snprintf(e->id, sizeof(e->id), "%s", id);
        return e;
}

static void count_locked(struct fake_state *s, const char *verb)
{
        for (size_t i = 0; i < s->ncalls; i++)
                if (strcmp(s->calls[i].verb, verb) == 0) {
                        s->calls[i].n++;
                        return;
                }
        if (s->ncalls < sizeof(s->calls) / sizeof(s->calls[0])) {
                snprintf(s->calls[s->ncalls].verb, sizeof(s->calls[0].verb), "%s", verb);
                s->calls[s->ncalls++].n = 1;
        }
}

/* Counts the call and asks the plan; locks the state on FAULT_PASS (the caller unlocks). */
static enum fault_verdict enter(const struct runtime_driver *d, const char *verb, bool counted)
{
        struct fake_state *s = state_of(d);
        enum fault_verdict v = fault_plan_check(s->faults, "driver", verb, counted);
        pthread_mutex_lock(&s->lock);
        count_locked(s, verb);
        while (v == FAULT_PASS && strcmp(s->held, verb) == 0) {
                s->waiting++;
                pthread_cond_broadcast(&s->changed);
                pthread_cond_wait(&s->changed, &s->lock);
                s->waiting--;
        }
        if (v != FAULT_PASS)
                pthread_mutex_unlock(&s->lock);
        return v;
}

static int injected(struct space_error *err, const char *verb, const struct sandbox *sb)
{
        return space_error_set(err, SPACE_E_INTERNAL, "injected failure of %s for %s", verb, sb ? sb->id : "-");
}

/* What the host refuses: unlocks and fails with "<verb> of <id>: <why>". */
static int refuse(struct fake_state *s, struct space_error *err, const char *verb, const char *id, const char *why)
{
        pthread_mutex_unlock(&s->lock);
        return space_error_set(err, SPACE_E_INTERNAL, "%s of %s: %s", verb, id, why);
}

void fake_driver_handle(long boot, char *buf, size_t size)
{
        snprintf(buf, size, "{\"boot\":%ld}", boot);
}

static int fake_init(struct runtime_driver *d, const struct runtime_config *cfg, struct space_error *err)
{
        struct fake_state *s = calloc(1, sizeof(*s));
        if (!s)
                return space_error_errno(err, -ENOMEM, "fake driver");
        pthread_mutex_init(&s->lock, NULL);
        pthread_cond_init(&s->changed, NULL);
        d->state = s;
        d->caps.pause = true;
        return 0;
}

static void fake_free(struct runtime_driver *d)
{
        struct fake_state *s = state_of(d);
        if (!s)
                return;
        pthread_mutex_destroy(&s->lock);
        pthread_cond_destroy(&s->changed);
        free(s);
        d->state = NULL;
}

static int fake_create_rootfs(const struct runtime_driver *d, const struct sandbox *sb, const char *template_path,
                              struct space_error *err)
{
        struct fake_state *s = state_of(d);
        if (enter(d, "create_rootfs", true) != FAULT_PASS)
                return injected(err, "create_rootfs", sb);
        if (access(template_path, F_OK) < 0)
                return refuse(s, err, "create_rootfs", sb->id, "its source does not exist");
        struct fake_entry *e = entry_locked(s, sb->id, true);
        if (!e)
                return refuse(s, err, "create_rootfs", sb->id, "the fake is full");
        if (e->res.running)
                return refuse(s, err, "create_rootfs", sb->id, "its processes still use the old one");
        e->res.rootfs = true; /* a leftover of an earlier attempt is made again */
        snprintf(e->res.source, sizeof(e->res.source), "%s", template_path);
        pthread_mutex_unlock(&s->lock);
        return 0;
}

static int fake_destroy_rootfs(const struct runtime_driver *d, const struct sandbox *sb, struct space_error *err)
{
        struct fake_state *s = state_of(d);
        if (enter(d, "destroy_rootfs", true) != FAULT_PASS)
                return injected(err, "destroy_rootfs", sb);
        struct fake_entry *e = entry_locked(s, sb->id, false);
        if (e && e->res.running)
                return refuse(s, err, "destroy_rootfs", sb->id, "it is running");
        if (e) {
                e->res.rootfs = false;
                e->res.source[0] = '\0';
        }
        pthread_mutex_unlock(&s->lock);
        return 0;
}

static int fake_snapshot_rootfs(const struct runtime_driver *d, const struct sandbox *sb, const char *dst, int64_t *ret_pause_us,
                                struct space_error *err)
{
        struct fake_state *s = state_of(d);
        if (enter(d, "snapshot_rootfs", true) != FAULT_PASS)
                return injected(err, "snapshot_rootfs", sb);
        struct fake_entry *e = entry_locked(s, sb->id, false);
        if (!e || !e->res.rootfs)
                return refuse(s, err, "snapshot_rootfs", sb->id, "it has no rootfs");
        int r = dir_tree_create(dst, 0700);
        pthread_mutex_unlock(&s->lock);
        if (r < 0)
                return space_error_errno(err, r, "fake snapshot %s", dst);
        *ret_pause_us = 1;
        return 0;
}

static int fake_restore_rootfs(const struct runtime_driver *d, const struct sandbox *sb, const char *src, struct space_error *err)
{
        struct fake_state *s = state_of(d);
        if (enter(d, "restore_rootfs", true) != FAULT_PASS)
                return injected(err, "restore_rootfs", sb);
        struct fake_entry *e = entry_locked(s, sb->id, true);
        if (!e)
                return refuse(s, err, "restore_rootfs", sb->id, "the fake is full");
        if (e->res.running)
                return refuse(s, err, "restore_rootfs", sb->id, "it is running");
        if (access(src, F_OK) < 0)
                return refuse(s, err, "restore_rootfs", sb->id, "the snapshot does not exist");
        e->res.rootfs = true;
        snprintf(e->res.source, sizeof(e->res.source), "%s", src);
        pthread_mutex_unlock(&s->lock);
        return 0;
}

static int fake_start(const struct runtime_driver *d, struct sandbox *sb, struct space_error *err)
{
        struct fake_state *s = state_of(d);
        if (enter(d, "start", true) != FAULT_PASS)
                return injected(err, "start", sb);
        struct fake_entry *e = entry_locked(s, sb->id, false);
        if (!e || !e->res.rootfs)
                return refuse(s, err, "start", sb->id, "it has no rootfs");
        /* Kills any leftover first, as the real one does. */
        e->res.running = e->res.run_state = true;
        e->res.paused = false;
        e->res.boot = ++s->boots;
        fake_driver_handle(e->res.boot, sb->runtime_state, sizeof(sb->runtime_state));
        pthread_mutex_unlock(&s->lock);
        return 0;
}

static int fake_stop(const struct runtime_driver *d, const struct sandbox *sb, struct space_error *err)
{
        struct fake_state *s = state_of(d);
        if (enter(d, "stop", true) != FAULT_PASS)
                return injected(err, "stop", sb);
        struct fake_entry *e = entry_locked(s, sb->id, false);
        if (e)
                e->res.running = e->res.paused = e->res.run_state = false;
        pthread_mutex_unlock(&s->lock);
        return 0;
}

static int freeze(const struct runtime_driver *d, const struct sandbox *sb, bool pause, struct space_error *err)
{
        struct fake_state *s = state_of(d);
        const char *verb = pause ? "pause" : "resume";
        if (enter(d, verb, true) != FAULT_PASS)
                return injected(err, verb, sb);
        struct fake_entry *e = entry_locked(s, sb->id, false);
        if (!e || !e->res.running)
                return refuse(s, err, "freeze", sb->id, "it is not running");
        e->res.paused = pause;
        pthread_mutex_unlock(&s->lock);
        return 0;
}

static int fake_pause(const struct runtime_driver *d, const struct sandbox *sb, struct space_error *err)
{
        return freeze(d, sb, true, err);
}

static int fake_resume(const struct runtime_driver *d, const struct sandbox *sb, struct space_error *err)
{
        return freeze(d, sb, false, err);
}

static int fake_exec(const struct runtime_driver *d, const struct sandbox *sb, const struct exec_request *req,
                     struct exec_result *ret, struct space_error *err)
{
        return space_error_set(err, SPACE_E_UNSUPPORTED, "the fake driver runs no commands");
}

/* 1 when its init runs and the handle in the row is the one it was launched with. */
static int fake_probe(const struct runtime_driver *d, const struct sandbox *sb, bool deep)
{
        struct fake_state *s = state_of(d);
        if (enter(d, "probe", false) != FAULT_PASS)
                return -EIO;
        struct fake_entry *e = entry_locked(s, sb->id, false);
        char handle[64];
        if (e)
                fake_driver_handle(e->res.boot, handle, sizeof(handle));
        int alive = e && e->res.running && strcmp(handle, sb->runtime_state) == 0;
        pthread_mutex_unlock(&s->lock);
        return alive;
}

static int fake_agent_connect(const struct runtime_driver *d, const struct sandbox *sb, int timeout_ms)
{
        return -ECONNREFUSED;
}

static int fake_stats(const struct runtime_driver *d, const struct sandbox *sb, struct runtime_stats *ret)
{
        memset(ret, 0, sizeof(*ret));
        return 0;
}

static int fake_path_exists(const struct runtime_driver *d, const struct sandbox *sb, const char *path)
{
        return -ENOTSUP;
}

static int fake_changed_since(const struct runtime_driver *d, const struct sandbox *sb, const char *snapshot_path)
{
        return 1;
}

static int fake_kill(const struct runtime_driver *d, const struct sandbox *sb)
{
        struct fake_state *s = state_of(d);
        if (enter(d, "kill", true) != FAULT_PASS)
                return -EIO;
        struct fake_entry *e = entry_locked(s, sb->id, false);
        if (e)
                e->res.running = e->res.paused = false; /* the run state stays for stop() */
        pthread_mutex_unlock(&s->lock);
        return 0;
}

static int fake_host_pid(const struct runtime_driver *d, const struct sandbox *sb)
{
        return -ENOTSUP;
}

static int fake_disk_limit(const struct runtime_driver *d, const struct sandbox *sb, uint64_t limit_bytes)
{
        struct fake_state *s = state_of(d);
        if (enter(d, "disk_limit", true) != FAULT_PASS)
                return -EIO;
        struct fake_entry *e = entry_locked(s, sb->id, false);
        int r = e && e->res.rootfs ? 0 : -ENOENT;
        pthread_mutex_unlock(&s->lock);
        return r;
}

static int fake_list_resources(const struct runtime_driver *d, char ***ret_ids, size_t *ret_n)
{
        struct fake_state *s = state_of(d);
        if (enter(d, "list_resources", true) != FAULT_PASS)
                return -EIO;
        pthread_mutex_unlock(&s->lock);
        char **ids = NULL;
        size_t n = fake_driver_ids(d, &ids);
        *ret_ids = ids;
        *ret_n = n;
        return 0;
}

static const struct runtime_driver_ops fake_driver_ops = {
        .name = FAKE_DRIVER_NAME,
        .version = "1",
        .init = fake_init,
        .free = fake_free,
        .create_rootfs = fake_create_rootfs,
        .destroy_rootfs = fake_destroy_rootfs,
        .snapshot_rootfs = fake_snapshot_rootfs,
        .restore_rootfs = fake_restore_rootfs,
        .start = fake_start,
        .stop = fake_stop,
        .pause = fake_pause,
        .resume = fake_resume,
        .exec = fake_exec,
        .probe = fake_probe,
        .agent_connect = fake_agent_connect,
        .stats = fake_stats,
        .path_exists = fake_path_exists,
        .changed_since = fake_changed_since,
        .kill = fake_kill,
        .host_pid = fake_host_pid,
        .disk_limit = fake_disk_limit,
        .list_resources = fake_list_resources,
};

int fake_driver_new(struct fault_plan *faults, struct runtime_driver **ret)
{
        struct runtime_driver *d = calloc(1, sizeof(*d));
        struct runtime_config cfg = { 0 };
        struct space_error err = { 0 };
        if (!d)
                return -ENOMEM;
        d->ops = &fake_driver_ops;
        if (fake_driver_ops.init(d, &cfg, &err) < 0) {
                free(d);
                return -ENOMEM;
        }
        state_of(d)->faults = faults;
        *ret = d;
        return 0;
}

bool fake_driver_get(const struct runtime_driver *d, const char *id, struct fake_resources *ret)
{
        struct fake_state *s = state_of(d);
        pthread_mutex_lock(&s->lock);
        struct fake_entry *e = entry_locked(s, id, false);
        memset(ret, 0, sizeof(*ret));
        if (e)
                *ret = e->res;
        pthread_mutex_unlock(&s->lock);
        return has_resources(ret);
}

void fake_driver_put(const struct runtime_driver *d, const char *id, const struct fake_resources *res)
{
        struct fake_state *s = state_of(d);
        pthread_mutex_lock(&s->lock);
        struct fake_entry *e = entry_locked(s, id, true);
        if (e)
                e->res = *res;
        pthread_mutex_unlock(&s->lock);
}

size_t fake_driver_ids(const struct runtime_driver *d, char ***ret)
{
        struct fake_state *s = state_of(d);
        pthread_mutex_lock(&s->lock);
        char **ids = calloc(s->n + 1, sizeof(*ids));
        size_t n = 0;
        for (size_t i = 0; ids && i < s->n; i++)
                if (has_resources(&s->entries[i].res) && (ids[n] = strdup(s->entries[i].id)))
                        n++;
        pthread_mutex_unlock(&s->lock);
        *ret = ids;
        return n;
}

long fake_driver_calls(const struct runtime_driver *d, const char *verb)
{
        struct fake_state *s = state_of(d);
        long n = 0;
        pthread_mutex_lock(&s->lock);
        for (size_t i = 0; i < s->ncalls; i++)
                if (!verb || strcmp(s->calls[i].verb, verb) == 0)
                        n += s->calls[i].n;
        pthread_mutex_unlock(&s->lock);
        return n;
}

void fake_driver_hold(const struct runtime_driver *d, const char *verb)
{
        struct fake_state *s = state_of(d);
        pthread_mutex_lock(&s->lock);
        if (verb)
                snprintf(s->held, sizeof(s->held), "%s", verb);
        else
                s->held[0] = '\0';
        pthread_cond_broadcast(&s->changed);
        pthread_mutex_unlock(&s->lock);
}

int fake_driver_await_held(const struct runtime_driver *d, int n, int timeout_ms)
{
        struct fake_state *s = state_of(d);
        struct timespec deadline;
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += timeout_ms / 1000;
        deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (deadline.tv_nsec >= 1000000000L) {
                deadline.tv_sec++;
                deadline.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&s->lock);
        int r = 0;
        while (s->waiting < n && r == 0)
                r = pthread_cond_timedwait(&s->changed, &s->lock, &deadline);
        int waiting = s->waiting;
        pthread_mutex_unlock(&s->lock);
        return waiting;
}
