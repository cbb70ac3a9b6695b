/* gv_driver: the gvisor driver's instance and the parts of it in other files of this
 * directory. Private to src/runtime/gvisor/. */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

#include "runtime/runtime_driver.h"
#include "runtime/sandbox_host.h"

struct gv_driver {
        struct sandbox_host host;  /* first: the shared ops read it through d->state */
        char runsc_root[PATH_MAX]; /* runsc's --root: its records of this daemon's containers */
};

static inline const struct gv_driver *gv_driver_of(const struct runtime_driver *d)
{
        return d->state;
}

/* Runs `runsc <global flags> <args...>` (NULL-terminated), its output appended to log_path.
 * Returns its exit status or -errno. The global flags are repeated on every call: runsc
 * forgets them between calls (restore without --network=none fails, for one). */
int gv_runsc(const struct gv_driver *gv, const char *log_path, const char *const *args);
/* Like gv_runsc, the output (up to size-1 bytes) captured in out; for short queries
 * (version, state) whose container does not inherit the output. */
int gv_runsc_capture(const struct gv_driver *gv, const char *const *args, char *out, size_t size);
/* The pid of the container's sandbox process (runsc state), or -errno. */
pid_t gv_runsc_sandbox_pid(const struct gv_driver *gv, const char *id);

/* Writes <bundle_dir>/config.json for sandbox sb: rootfs the subvolume, space-agent (bound
 * read-only from agent_path) as PID 1 listening in socket_dir (bound at /dev/.space). */
int gv_bundle_write(const struct gv_driver *gv, const struct sandbox *sb, const char *bundle_dir, const char *rootfs,
                    const char *socket_dir, struct space_error *err);
