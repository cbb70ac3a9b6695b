#include "fake_daemon.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "controller/reconciler.h"
#include "operations/operation_queue.h"
#include "operations/sandbox_lifecycle.h"
#include "spaced/dir_tree.h"
#include "spaced/log.h"
#include "spaced/wallclock.h"

#define M(s) (1u << (s))
#define WAIT_MS 10000

static int open_store(struct fake_daemon *fd)
{
        struct state_handle inner = { .ops = &state_store_sqlite };
        int r = inner.ops->open(fd->db, &inner.st);
        if (r < 0)
                return r;
        r = fault_store_wrap(inner, &fd->faults, &fd->ctx.store);
        if (r < 0)
                inner.ops->close(inner.st);
        return r;
}

static struct state_handle inner_of(struct fake_daemon *fd)
{
        return fault_store_inner(fd->ctx.store.st);
}

int fake_daemon_start(struct fake_daemon *fd, int workers)
{
        char path[PATH_MAX + 32];
        const char *tmp = getenv("TMPDIR");
        memset(fd, 0, sizeof(*fd));
        fd->workers = workers;
        fault_plan_init(&fd->faults);
        if (!getenv("SPACE_TEST_LOG"))
                log_set_level(LOG_ERROR + 1); /* injected failures log a lot; SPACE_TEST_LOG=1 shows it */
        /* Throwaway state: on tmpfs when there is one (the sweeps make hundreds of stores, and
         * SQLite's syncs on a disk cost them more than everything else). */
        if (!tmp || !*tmp)
                tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        snprintf(fd->dir, sizeof(fd->dir), "%s/space-fake-XXXXXX", tmp);
        if (!mkdtemp(fd->dir))
                return -errno;
        struct spaced_config *cfg = &fd->ctx.cfg;
        snprintf(cfg->state_dir, sizeof(cfg->state_dir), "%s", fd->dir);
        cfg->disk_quota = true; /* so every launch sets a disk limit: one more driver call */
        cfg->workers = workers;
        snprintf(fd->db, sizeof(fd->db), "%s/state.db", fd->dir);
        snprintf(fd->ctx.pool.root, sizeof(fd->ctx.pool.root), "%s/pool", fd->dir);
        snprintf(path, sizeof(path), "%s/templates/%s", fd->ctx.pool.root, FAKE_TEMPLATE);
        int r = dir_tree_create(path, 0700);
        if (r < 0)
                return r;
        pool_monitor_init(&fd->ctx.pool_health); /* zeroed: POOL_OK */
        if ((r = open_store(fd)) < 0)
                return r;
        struct template_record t = { .environment = json_pack("{s:s, s:s}", "driver", FAKE_DRIVER_NAME, "base", "fake") };
        snprintf(t.name, sizeof(t.name), FAKE_TEMPLATE);
        snprintf(t.state, sizeof(t.state), "ready");
        r = STORE(&fd->ctx, template_upsert, &t);
        template_record_release(&t);
        if (r < 0)
                return r;
        struct runtime_driver *d = NULL;
        if ((r = fake_driver_new(&fd->faults, &d)) < 0)
                return r;
        if ((r = runtime_registry_adopt(&fd->ctx.runtimes, d)) < 0) {
                d->ops->free(d);
                free(d);
                return r;
        }
        fd->driver = d;
        return operation_queue_new(&fd->ctx, workers, &fd->ctx.queue);
}

void fake_daemon_stop(struct fake_daemon *fd)
{
        fault_plan_disarm(&fd->faults);
        operation_queue_free(fd->ctx.queue);
        fd->ctx.queue = NULL;
        if (fd->ctx.store.st)
                fd->ctx.store.ops->close(fd->ctx.store.st);
        fd->ctx.store.st = NULL;
        runtime_registry_free(&fd->ctx.runtimes);
        if (fd->dir[0])
                dir_tree_remove(fd->dir);
        fault_plan_destroy(&fd->faults);
}

int fake_daemon_restart_faulty(struct fake_daemon *fd, enum fault_mode mode, long n, const char *only)
{
        operation_queue_free(fd->ctx.queue);
        fd->ctx.queue = NULL;
        fault_plan_disarm(&fd->faults);
        fd->ctx.store.ops->close(fd->ctx.store.st);
        fd->ctx.store.st = NULL;
        int r = open_store(fd);
        if (r < 0)
                return r;
        if ((r = operation_queue_new(&fd->ctx, fd->workers, &fd->ctx.queue)) < 0)
                return r;
        if (mode != FAULT_OFF)
                fault_plan_arm(&fd->faults, mode, n, only);
        return reconciler_startup(&fd->ctx);
}

int fake_daemon_restart(struct fake_daemon *fd)
{
        return fake_daemon_restart_faulty(fd, FAULT_OFF, 0, NULL);
}

static void nap(void)
{
        struct timespec ts = { 0, 2 * 1000 * 1000 };
        nanosleep(&ts, NULL);
}

static bool ended(const struct operation *op)
{
        return op->state == OPERATION_SUCCEEDED || op->state == OPERATION_FAILED;
}

/* Polls test (1: done, 0: not yet, -errno) until it is done, for up to WAIT_MS. */
static int until(struct fake_daemon *fd, int (*test)(struct fake_daemon *fd, const char *id, struct operation *ret),
                 const char *id, struct operation *ret)
{
        for (int64_t end = monotonic_now_us() + WAIT_MS * 1000LL; monotonic_now_us() < end; nap()) {
                int r = test(fd, id, ret);
                if (r != 0)
                        return r < 0 ? r : 0;
        }
        return -ETIMEDOUT;
}

static int op_ended(struct fake_daemon *fd, const char *id, struct operation *ret)
{
        struct state_handle in = inner_of(fd);
        int r = in.ops->operation_get(in.st, id, ret);
        return r < 0 ? r : ended(ret);
}

static int none_unfinished(struct fake_daemon *fd, const char *id, struct operation *ret)
{
        struct state_handle in = inner_of(fd);
        struct operation *ops = NULL;
        size_t n = 0;
        int r = in.ops->operation_list(in.st, NULL, -1, true, NULL, NULL, &ops, &n);
        free(ops);
        return r < 0 ? r : n == 0;
}

/* The plan fired, or the operation ended or cannot be read (no operation: none is left). */
static int fired_or_ended(struct fake_daemon *fd, const char *id, struct operation *ret)
{
        return fault_plan_fired(&fd->faults) || (id ? op_ended(fd, id, ret) != 0 : none_unfinished(fd, id, ret) != 0);
}

int fake_daemon_wait(struct fake_daemon *fd, const char *op_id, struct operation *ret)
{
        return until(fd, op_ended, op_id, ret);
}

int fake_daemon_drain(struct fake_daemon *fd)
{
        return until(fd, none_unfinished, NULL, NULL);
}

bool fake_daemon_halt(struct fake_daemon *fd, const char *op_id)
{
        struct operation op;
        until(fd, fired_or_ended, op_id, &op);
        operation_queue_free(fd->ctx.queue);
        fd->ctx.queue = NULL;
        return fault_plan_fired(&fd->faults);
}

int fake_daemon_sandbox(struct fake_daemon *fd, const char *id, struct sandbox *ret)
{
        struct state_handle in = inner_of(fd);
        return in.ops->sandbox_get(in.st, id, ret);
}

int fake_daemon_create(struct fake_daemon *fd, int64_t timeout_s, const char *on_timeout, char *ret_id, struct operation *ret_op,
                       struct space_error *err)
{
        struct sandbox sb = { 0 };
        snprintf(sb.template_name, sizeof(sb.template_name), FAKE_TEMPLATE);
        snprintf(sb.project_id, sizeof(sb.project_id), PROJECT_DEFAULT);
        sb.resources = (struct sandbox_resources){ .cpus = 1, .memory_mb = 256, .pids = 64, .disk_mb = 64 };
        sb.env = json_object();
        sb.metadata = json_object();
        sb.timeout_s = timeout_s;
        snprintf(sb.on_timeout, sizeof(sb.on_timeout), "%s", on_timeout ? on_timeout : "stop");
        int r = sandbox_lifecycle_create(&fd->ctx, &sb, ret_op, err);
        if (r == 0)
                snprintf(ret_id, 32, "%s", sb.id);
        sandbox_release(&sb);
        return r;
}

/* ---- the check ---- */

static int disagree(char *why, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int disagree(char *why, size_t size, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, size, fmt, ap);
        va_end(ap);
        return -1;
}

static int check_sandbox(struct fake_daemon *fd, const struct sandbox *sb, char *why, size_t size)
{
        struct fake_resources res;
        fake_driver_get(fd->driver, sb->id, &res);
        const char *st = sandbox_state_name(sb->state);
        char handle[64];
        fake_driver_handle(res.boot, handle, sizeof(handle));
        switch (sb->state) {
        case SANDBOX_RUNNING:
        case SANDBOX_PAUSED:
                if (!res.rootfs || !res.running || !res.run_state)
                        return disagree(why, size, "%s is %s but rootfs=%d running=%d run_state=%d", sb->id, st, res.rootfs,
                                        res.running, res.run_state);
                if (res.paused != (sb->state == SANDBOX_PAUSED))
                        return disagree(why, size, "%s is %s but the host has it %s", sb->id, st,
                                        res.paused ? "frozen" : "thawed");
                if (strcmp(handle, sb->runtime_state) != 0)
                        return disagree(why, size, "%s is %s with handle '%s'; its init is %s", sb->id, st, sb->runtime_state,
                                        handle);
                return 0;
        case SANDBOX_STOPPED:
                if (!res.rootfs || res.running || res.run_state)
                        return disagree(why, size, "%s is stopped but rootfs=%d running=%d run_state=%d", sb->id, res.rootfs,
                                        res.running, res.run_state);
                return 0;
        case SANDBOX_FAILED:
        case SANDBOX_DESTROYED:
                if (res.rootfs || res.running || res.run_state)
                        return disagree(why, size, "%s is %s but holds rootfs=%d running=%d run_state=%d", sb->id, st, res.rootfs,
                                        res.running, res.run_state);
                return 0;
        default:
                return disagree(why, size, "%s is left %s (reason '%s')", sb->id, st, sb->state_reason);
        }
}

#define TRANSIENT (M(SANDBOX_CREATING) | M(SANDBOX_STARTING) | M(SANDBOX_STOPPING) | M(SANDBOX_DESTROYING) | M(SANDBOX_RESTORING))

/* transient_ok: rows in a transient state are not checked (the controller finishes them). */
static int check_sandboxes(struct fake_daemon *fd, bool transient_ok, char *why, size_t size)
{
        struct state_handle in = inner_of(fd);
        struct sandbox *live = NULL, *gone = NULL;
        size_t nlive = 0, ngone = 0;
        int bad = 0;
        if (in.ops->sandbox_list(in.st, -1, NULL, NULL, &live, &nlive) < 0 ||
            in.ops->sandbox_list(in.st, SANDBOX_DESTROYED, NULL, NULL, &gone, &ngone) < 0)
                bad = disagree(why, size, "cannot list sandboxes");
        for (size_t i = 0; !bad && i < nlive; i++)
                if (!transient_ok || !(TRANSIENT & M(live[i].state)))
                        bad = check_sandbox(fd, &live[i], why, size);
        for (size_t i = 0; !bad && i < ngone; i++)
                bad = check_sandbox(fd, &gone[i], why, size);
        /* What the host holds belongs to a row that is not destroyed (checked above per state). */
        char **ids = NULL;
        size_t n = fake_driver_ids(fd->driver, &ids);
        for (size_t i = 0; i < n; i++) {
                bool owned = false;
                for (size_t j = 0; j < nlive && !owned; j++)
                        owned = strcmp(live[j].id, ids[i]) == 0;
                if (!owned && !bad)
                        bad = disagree(why, size, "the host holds resources of %s, which no live row owns", ids[i]);
                free(ids[i]);
        }
        free(ids);
        sandbox_array_free(live, nlive);
        sandbox_array_free(gone, ngone);
        return bad;
}

static int check_operations(struct fake_daemon *fd, char *why, size_t size)
{
        struct state_handle in = inner_of(fd);
        struct operation *ops = NULL;
        size_t n = 0;
        int bad = 0;
        if (in.ops->operation_list(in.st, NULL, -1, false, NULL, NULL, &ops, &n) < 0)
                return disagree(why, size, "cannot list operations");
        for (size_t i = 0; i < n && !bad; i++)
                if (!ended(&ops[i]))
                        bad = disagree(why, size, "operation %s (%s of %s) is left %s", ops[i].id, ops[i].kind, ops[i].target,
                                       operation_state_name(ops[i].state));
                else if (ops[i].state == OPERATION_FAILED && (!ops[i].error_code[0] || !ops[i].error_message[0]))
                        bad = disagree(why, size, "operation %s (%s) failed without an error", ops[i].id, ops[i].kind);
                else if (ops[i].finished_at_ms <= 0)
                        bad = disagree(why, size, "operation %s (%s) ended without finished_at", ops[i].id, ops[i].kind);
        free(ops);
        return bad;
}

static int check_snapshots(struct fake_daemon *fd, char *why, size_t size)
{
        struct state_handle in = inner_of(fd);
        struct snapshot *snaps = NULL;
        size_t n = 0;
        int bad = 0;
        if (in.ops->snapshot_list(in.st, NULL, NULL, NULL, &snaps, &n) < 0)
                return disagree(why, size, "cannot list snapshots");
        for (size_t i = 0; i < n && !bad; i++) {
                char path[PATH_MAX];
                if (strcmp(snaps[i].state, "ready") != 0)
                        bad = disagree(why, size, "snapshot %s is left %s", snaps[i].id, snaps[i].state);
                else if (btrfs_pool_snapshot_path(&fd->ctx.pool, snaps[i].id, path, sizeof(path)) < 0 || access(path, F_OK) < 0)
                        bad = disagree(why, size, "snapshot %s is ready but its data is not there", snaps[i].id);
        }
        free(snaps);
        return bad;
}

int fake_daemon_check(struct fake_daemon *fd, char *why, size_t size)
{
        if (check_sandboxes(fd, false, why, size) < 0 || check_operations(fd, why, size) < 0 ||
            check_snapshots(fd, why, size) < 0)
                return -1;
        return 0;
}

int fake_daemon_check_settled(struct fake_daemon *fd, char *why, size_t size)
{
        return check_sandboxes(fd, true, why, size) < 0 || check_operations(fd, why, size) < 0 ? -1 : 0;
}
