/* Memory state of gvisor sandboxes: runsc checkpoint, with the btrfs snapshot of the rootfs
 * taken while the sandbox is paused for it (docs/memory-state.md). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "runtime/gvisor/gv_driver.h"
#include "spaced/fault_point.h"
#include "spaced/wallclock.h"

#define PARK_WAIT_MS 5000
#define PARK_RESEND_MS 250

static int signal_agent(const struct gv_driver *gv, const struct sandbox *sb, const char *sig, struct space_error *err)
{
        const char *args[] = { "kill", sb->id, sig, NULL };
        int r = gv_runsc(gv, NULL, args);
        return r != 0 ? space_error_set(err, SPACE_E_INTERNAL, "runsc kill %s of %s failed (%d)", sig, sb->id, r) : 0;
}

int gv_agent_park(const struct gv_driver *gv, const struct sandbox *sb, struct space_error *err)
{
        char sock[PATH_MAX];
        sandbox_host_socket_path(&gv->host, sb->id, sock, sizeof(sock));
        /* The agent removes its socket last, once nothing of the host is held. It acts only on
         * signals from outside the sandbox; one of ours that met a pending USR1 sent from inside
         * merged into it and was dropped with it, so it is sent again while we wait. */
        for (int waited_ms = 0; access(sock, F_OK) == 0; waited_ms += 5) {
                if (waited_ms >= PARK_WAIT_MS)
                        return space_error_set(err, SPACE_E_INTERNAL, "the agent of %s did not let go of its socket", sb->id);
                if (waited_ms % PARK_RESEND_MS == 0 && signal_agent(gv, sb, "USR1", err) < 0)
                        return -1;
                usleep(5000);
        }
        return 0;
}

int gv_agent_unpark(const struct gv_driver *gv, const struct sandbox *sb, struct space_error *err)
{
        return signal_agent(gv, sb, "USR2", err);
}

static int runsc_verb(const struct gv_driver *gv, const struct sandbox *sb, const char *verb, struct space_error *err)
{
        const char *args[] = { verb, sb->id, NULL };
        int r = gv_runsc(gv, NULL, args);
        return r != 0 ? space_error_set(err, SPACE_E_INTERNAL, "runsc %s of %s failed (%d)", verb, sb->id, r) : 0;
}

/* After a checkpoint that left it running, or one that failed: the sandbox as it was (a
 * paused one stays paused, its agent parked). */
static int carry_on(const struct runtime_driver *d, const struct sandbox *sb, bool was_running, struct space_error *err)
{
        const struct gv_driver *gv = gv_driver_of(d);
        struct init_handle h;
        if (!was_running)
                return 0;
        char status[32] = "";
        /* After a failed pause it may not be paused: running is what is asked. */
        if (runsc_verb(gv, sb, "resume", err) < 0 &&
            (gv_runsc_state(gv, sb->id, NULL, status, sizeof(status)) < 0 || strcmp(status, "running") != 0))
                return -1;
        if (gv_agent_unpark(gv, sb, err) < 0)
                return -1;
        init_handle_read(sb->runtime_state, &h);
        return gv_agent_wait(gv, sb, &h, err);
}

int gv_checkpoint(const struct runtime_driver *d, const struct sandbox *sb, const char *rootfs_dst, const char *image_dir,
                  bool leave_running, int64_t *ret_pause_us, struct space_error *err)
{
        const struct gv_driver *gv = gv_driver_of(d);
        char status[32], log[PATH_MAX], sock[PATH_MAX];
        struct space_error ignored;
        sandbox_host_run_path(&gv->host, sb->id, "runsc.log", log, sizeof(log));
        sandbox_host_socket_path(&gv->host, sb->id, sock, sizeof(sock));
        int r = gv_runsc_state(gv, sb->id, NULL, status, sizeof(status));
        if (r < 0)
                return space_error_errno(err, -r, "runsc state of %s", sb->id);
        /* Redone after a crash, it may find the sandbox paused by the first attempt: the row's
         * state says what it was. */
        bool was_running = sb->state == SANDBOX_RUNNING;
        if (strcmp(status, "running") != 0 && strcmp(status, "paused") != 0)
                return space_error_set(err, SPACE_E_INVALID_STATE, "the gvisor sandbox %s is %s", sb->id, status);
        if (strcmp(status, "paused") == 0 && access(sock, F_OK) == 0)
                return space_error_set(err, SPACE_E_INVALID_STATE,
                                       "sandbox %s was paused with its agent listening (by an older spaced): resume it "
                                       "and pause it again",
                                       sb->id);
        int64_t t0 = monotonic_now_us();
        /* A paused sandbox's agent is parked already (gv_pause). */
        if (strcmp(status, "running") == 0 && (gv_agent_park(gv, sb, err) < 0 || runsc_verb(gv, sb, "pause", err) < 0))
                goto fail;
        /* Paused: no task runs and every write has reached the subvolume (no overlay, no
         * caching in gVisor), so the snapshot and the image are of one moment. */
        if (rootfs_dst) {
                struct sandbox frozen = *sb;
                int64_t unused;
                frozen.state = SANDBOX_PAUSED; /* already frozen: taken without the cgroup freezer */
                if (d->ops->snapshot_rootfs(d, &frozen, rootfs_dst, &unused, err) < 0)
                        goto fail;
        }
        fault_point("checkpoint", "frozen");
        /* Always --leave-running, also for a hibernation: without it runsc ends the sandbox's
         * processes after the save, and a checkpoint redone after a crash in between (the
         * image not yet renamed into place) saved them with that SIGKILL pending, an image
         * whose restore dies at once. Left running (and still paused by us), a redo finds
         * them whole; the caller of a hibernation stops them once the image is safe. */
        const char *args[] = { "checkpoint", "--leave-running", "--image-path", image_dir, sb->id, NULL };
        if ((r = gv_runsc_for(gv, sb, log, args)) != 0) {
                gv_runsc_failed("checkpoint", r, log, sb->id, err);
                goto fail;
        }
        /* Not leave_running: it stays frozen, its agent parked, until the caller stops it (or
         * resumes it, when what follows the checkpoint fails). */
        if (leave_running && carry_on(d, sb, was_running, err) < 0)
                return -1; /* the image and snapshot are whole; the caller decides */
        *ret_pause_us = monotonic_now_us() - t0;
        return 0;
fail:
        carry_on(d, sb, was_running, &ignored);
        return -1;
}
