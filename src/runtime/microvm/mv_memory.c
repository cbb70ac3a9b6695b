/* Memory state of microvm sandboxes (docs/memory-state.md): QEMU stops the VM's vCPUs
 * (QMP stop: its disk requests drained and flushed), the subvolume holding the disk is
 * snapshotted at that moment, and QEMU writes the VM's memory and devices through a passed
 * fd (QMP getfd + migrate "fd:": QEMU 7.2 has no file: migration, and its seccomp filter
 * forbids exec:) into <image>/memory.img, with <image>/machine saying the memory and
 * vCPUs it needs. A VM starts from it with -incoming defer, loads it (migrate-incoming
 * "fd:"), and continues (cont): its processes go on where they were. The supervisor is
 * new; its HELLO makes the restored guest end drop the streams of the old one. A paused
 * microvm is stopped (QMP) as well as frozen (cgroup), so that what a checkpoint of it
 * thaws to talk to QEMU does not run the guest. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "runtime/cgroup/cgroup_manager.h"
#include "runtime/microvm/mv_driver.h"
#include "runtime/microvm/mv_qmp.h"
#include "spaced/fault_point.h"
#include "spaced/wallclock.h"

#define QMP_TIMEOUT_MS 10000
#define SAVE_TIMEOUT_MS 300000 /* TCG on a loaded host, a large guest: the image is written at disk speed */
#define MONITOR_WAIT_MS 30000
#define MEMORY_IMAGE "memory.img"
#define MACHINE_FILE "machine"

static int freeze(const struct mv_driver *mv, const struct sandbox *sb, bool frozen, struct space_error *err)
{
        int r = mv->host.cgroups->ops->freeze(mv->host.cgroups, sb->id, frozen);
        return r < 0 ? space_error_errno(err, -r, "%s %s", frozen ? "freeze" : "thaw", sb->id) : 0;
}

/* 1 with the monitor connected; 0 when the VM has none (started by an older spaced). */
static int monitor(const struct mv_driver *mv, const struct sandbox *sb, struct mv_qmp *q, struct space_error *err)
{
        char sock[PATH_MAX];
        mv_qmp_socket_path(mv, sb->id, sock, sizeof(sock));
        if (access(sock, F_OK) < 0)
                return 0;
        return mv_qmp_connect(q, sock, QMP_TIMEOUT_MS, err) < 0 ? -1 : 1;
}

static int vcpus(const struct mv_driver *mv, const struct sandbox *sb, const char *command, struct space_error *err)
{
        struct mv_qmp q;
        int r = monitor(mv, sb, &q, err);
        if (r <= 0)
                return r;
        r = mv_qmp_execute(&q, command, NULL, -1, NULL, QMP_TIMEOUT_MS, err);
        mv_qmp_close(&q);
        return r;
}

int mv_pause(const struct runtime_driver *d, const struct sandbox *sb, struct space_error *err)
{
        const struct mv_driver *mv = mv_driver_of(d);
        struct space_error ignored;
        if (vcpus(mv, sb, "stop", err) < 0)
                return -1;
        if (freeze(mv, sb, true, err) < 0) {
                vcpus(mv, sb, "cont", &ignored);
                return -1;
        }
        return 0;
}

/* Also the resume of a VM left stopped by a checkpoint, or of one running already (a redo
 * after a crash): thaw and cont are both no-ops then. */
int mv_resume(const struct runtime_driver *d, const struct sandbox *sb, struct space_error *err)
{
        const struct mv_driver *mv = mv_driver_of(d);
        return freeze(mv, sb, false, err) < 0 || vcpus(mv, sb, "cont", err) < 0 ? -1 : 0;
}

static int write_machine(const struct sandbox *sb, const char *image_dir, struct space_error *err)
{
        char path[PATH_MAX + 16], text[64];
        unsigned mb = sb->resources.memory_mb >= 64 ? (unsigned)sb->resources.memory_mb : 256;
        unsigned cpus = sb->resources.cpus > 1 ? (unsigned)(sb->resources.cpus + 0.999) : 1;
        snprintf(path, sizeof(path), "%s/" MACHINE_FILE, image_dir);
        int n = snprintf(text, sizeof(text), "memory_mb=%u cpus=%u\n", mb, cpus);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return space_error_errno(err, errno, "write %s", path);
        bool ok = write(fd, text, (size_t)n) == n && fsync(fd) == 0;
        close(fd);
        return ok ? 0 : space_error_errno(err, errno ? errno : EIO, "write %s", path);
}

static int read_machine(const char *image_dir, struct mv_machine *m, struct space_error *err)
{
        char path[PATH_MAX + 16], text[64], tail;
        snprintf(path, sizeof(path), "%s/" MACHINE_FILE, image_dir);
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return space_error_errno(err, errno, "the machine of the memory image %s", image_dir);
        ssize_t n = read(fd, text, sizeof(text) - 1);
        close(fd);
        text[n > 0 ? n : 0] = '\0';
        if (n <= 0 || sscanf(text, "memory_mb=%u cpus=%u%c", &m->memory_mb, &m->cpus, &tail) != 3 || tail != '\n' ||
            m->memory_mb < 64 || m->memory_mb > (1u << 20) || m->cpus < 1 || m->cpus > 256)
                return space_error_set(err, SPACE_E_INTERNAL, "the memory image %s has no valid machine file", image_dir);
        return 0;
}

static int save_memory(struct mv_qmp *q, const char *image_dir, struct space_error *err)
{
        char path[PATH_MAX + 16];
        snprintf(path, sizeof(path), "%s/" MEMORY_IMAGE, image_dir);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return space_error_errno(err, errno, "create %s", path);
        int r = mv_qmp_save(q, fd, SAVE_TIMEOUT_MS, err);
        if (r == 0 && fsync(fd) < 0)
                r = space_error_errno(err, errno, "fsync %s", path);
        close(fd);
        return r;
}

/* After a checkpoint that left it running, or one that failed: the VM as it was (a paused
 * one stopped and frozen). */
static int carry_on(const struct mv_driver *mv, const struct sandbox *sb, bool was_running, struct space_error *err)
{
        return was_running ? vcpus(mv, sb, "cont", err) : freeze(mv, sb, true, err);
}

/* A checkpoint redone after a crash that followed the save finds QEMU "postmigrate" (its
 * disk let go), from which it saves no more: cont takes the disk back; the stop that
 * follows and the rootfs snapshot after it make the pair anew (the guest ran a moment). */
static int after_a_save(struct mv_qmp *q, struct space_error *err)
{
        json_t *rv = NULL;
        if (mv_qmp_execute(q, "query-status", NULL, -1, &rv, QMP_TIMEOUT_MS, err) < 0)
                return -1;
        const char *status = json_string_value(json_object_get(rv, "status"));
        bool saved = status && strcmp(status, "postmigrate") == 0;
        json_decref(rv);
        return saved ? mv_qmp_execute(q, "cont", NULL, -1, NULL, QMP_TIMEOUT_MS, err) : 0;
}

int mv_checkpoint(const struct runtime_driver *d, const struct sandbox *sb, const char *rootfs_dst, const char *image_dir,
                  bool leave_running, int64_t *ret_pause_us, struct space_error *err)
{
        const struct mv_driver *mv = mv_driver_of(d);
        struct space_error ignored;
        struct mv_qmp q = { .fd = -1 };
        /* Redone after a crash, it may find the VM stopped by the first attempt: the row's
         * state says what it was. */
        bool was_running = sb->state == SANDBOX_RUNNING;
        int64_t t0 = monotonic_now_us();
        /* A paused VM's vCPUs are stopped (mv_pause): QEMU answers only thawed. */
        if (!was_running && freeze(mv, sb, false, err) < 0)
                return -1;
        int r = monitor(mv, sb, &q, err);
        if (r == 0)
                space_error_set(err, SPACE_E_UNSUPPORTED,
                                "the microvm of %s was started without a QMP monitor (by an older spaced): stop and start it "
                                "for memory snapshots",
                                sb->id);
        if (r <= 0 || after_a_save(&q, err) < 0 || mv_qmp_execute(&q, "stop", NULL, -1, NULL, QMP_TIMEOUT_MS, err) < 0)
                goto fail;
        if (rootfs_dst) {
                struct sandbox frozen = *sb;
                int64_t unused;
                frozen.state = SANDBOX_PAUSED; /* stopped already: taken without the cgroup freezer or a sync */
                if (d->ops->snapshot_rootfs(d, &frozen, rootfs_dst, &unused, err) < 0)
                        goto fail;
        }
        fault_point("checkpoint", "frozen");
        if (write_machine(sb, image_dir, err) < 0 || save_memory(&q, image_dir, err) < 0)
                goto fail;
        fault_point("checkpoint", "saved");
        mv_qmp_close(&q);
        /* Not leave_running: it stays stopped (a paused one frozen too) until the caller stops
         * it, or resumes it when what follows the checkpoint fails. */
        if (leave_running ? carry_on(mv, sb, was_running, err) < 0 : !was_running && freeze(mv, sb, true, err) < 0)
                return -1; /* the image and snapshot are whole; the caller decides */
        *ret_pause_us = monotonic_now_us() - t0;
        return 0;
fail:
        mv_qmp_close(&q);
        carry_on(mv, sb, was_running, &ignored);
        return -1;
}

/* The monitor of a VM just started: QEMU makes its socket before it drops to its user. */
static int monitor_of_new_vm(const struct mv_driver *mv, const struct sandbox *sb, struct mv_qmp *q, struct space_error *err)
{
        char sock[PATH_MAX];
        struct init_handle h;
        init_handle_read(sb->runtime_state, &h);
        mv_qmp_socket_path(mv, sb->id, sock, sizeof(sock));
        for (int waited_ms = 0; waited_ms < MONITOR_WAIT_MS && init_handle_alive(&h); waited_ms += 20) {
                if (access(sock, F_OK) == 0 && mv_qmp_connect(q, sock, QMP_TIMEOUT_MS, err) == 0)
                        return 0;
                usleep(20000);
        }
        return space_error_set(err, SPACE_E_INTERNAL, "the microvm of %s did not open its monitor (see qemu.log)", sb->id);
}

int mv_start_from_image(const struct runtime_driver *d, struct sandbox *sb, const char *image_dir, struct space_error *err)
{
        const struct mv_driver *mv = mv_driver_of(d);
        struct mv_machine m;
        struct mv_qmp q = { .fd = -1 };
        struct space_error ignored;
        struct init_handle h;
        char path[PATH_MAX + 16];
        if (read_machine(image_dir, &m, err) < 0)
                return -1;
        snprintf(path, sizeof(path), "%s/" MEMORY_IMAGE, image_dir);
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return space_error_errno(err, errno, "open %s", path);
        if (mv_launch_vm(d, sb, &m, err) < 0) {
                close(fd);
                return -1;
        }
        int r = monitor_of_new_vm(mv, sb, &q, err);
        if (r == 0)
                r = mv_qmp_load(&q, fd, SAVE_TIMEOUT_MS, err);
        close(fd);
        fault_point("restore", "loaded");
        if (r == 0)
                r = mv_qmp_execute(&q, "cont", NULL, -1, NULL, QMP_TIMEOUT_MS, err);
        mv_qmp_close(&q);
        init_handle_read(sb->runtime_state, &h);
        if (r < 0 || mv_wait_agent(mv, sb, &h, err) < 0) {
                d->ops->stop(d, sb, &ignored);
                return -1;
        }
        return 0;
}
