/* gv_driver: the gvisor driver's instance and the parts of it in other files of this
 * directory. Private to src/runtime/gvisor/. */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

#include "runtime/runtime_driver.h"
#include "runtime/sandbox_host.h"

struct ns_network;

struct gv_driver {
        struct sandbox_host host;   /* first: the shared ops read it through d->state */
        char runsc_root[PATH_MAX];  /* runsc's --root: its records of this daemon's containers */
        struct ns_network *network; /* the egress links (the namespaces runtime's); NULL: no egress */
};

/* The network namespace file of a sandbox with egress, <run_dir>/<id>/netns. */
#define GV_NETNS_LEAF "netns"

/* Whether sandbox sb runs with runsc --network=sandbox in a namespace of its own holding
 * its egress link (a profile other than none), or --network=none (only lo). */
static inline bool gv_has_link(const struct gv_driver *gv, const struct sandbox *sb)
{
        return gv->network && sb->network;
}

static inline const struct gv_driver *gv_driver_of(const struct runtime_driver *d)
{
        return d->state;
}

/* Runs `runsc <global flags> <args...>` (NULL-terminated), its output appended to log_path.
 * Returns its exit status or -errno. The global flags are repeated on every call: runsc
 * forgets them between calls (restore without --network=none fails, for one). */
int gv_runsc(const struct gv_driver *gv, const char *log_path, const char *const *args);
/* gv_runsc for a call that reads the network flag (create, start, restore): sandbox sb's. */
int gv_runsc_for(const struct gv_driver *gv, const struct sandbox *sb, const char *log_path, const char *const *args);
/* Like gv_runsc, the output (up to size-1 bytes) captured in out; for short queries
 * (version, state) whose container does not inherit the output. */
int gv_runsc_capture(const struct gv_driver *gv, const char *const *args, char *out, size_t size);
/* The container's sandbox process and status ("running", "paused", "created"; runsc
 * state); 0 or -errno (-ENOENT: runsc knows no such container). */
int gv_runsc_state(const struct gv_driver *gv, const char *id, pid_t *ret_pid, char *ret_status, size_t size);
/* The pid of the container's sandbox process (runsc state), or -errno. */
pid_t gv_runsc_sandbox_pid(const struct gv_driver *gv, const char *id);

/* Writes <bundle_dir>/config.json for sandbox sb: rootfs the subvolume, space-agent (bound
 * read-only from agent_path) as PID 1 listening in socket_dir (bound at /dev/.space), in
 * the network namespace at netns_path (NULL: a new one, with only lo). */
int gv_bundle_write(const struct gv_driver *gv, const struct sandbox *sb, const char *bundle_dir, const char *rootfs,
                    const char *socket_dir, const char *netns_path, struct space_error *err);

/* Fills err with "runsc <what> of <id> failed", runsc's last log line in log_path appended; -1. */
int gv_runsc_failed(const char *what, int r, const char *log_path, const char *id, struct space_error *err);
/* Waits (up to ~10 s) for the sandbox's agent, whose init is h, to answer on its socket. */
int gv_agent_wait(const struct gv_driver *gv, const struct sandbox *sb, const struct init_handle *h, struct space_error *err);
/* Asks the agent to let go of its host socket and connections (SIGUSR1) and waits until it
 * has; or to listen again (SIGUSR2). agent_listener.h in space_agent says why. */
int gv_agent_park(const struct gv_driver *gv, const struct sandbox *sb, struct space_error *err);
int gv_agent_unpark(const struct gv_driver *gv, const struct sandbox *sb, struct space_error *err);

/* runtime_driver_ops.checkpoint of gvisor sandboxes (gv_checkpoint.c). */
int gv_checkpoint(const struct runtime_driver *d, const struct sandbox *sb, const char *rootfs_dst, const char *image_dir,
                  bool leave_running, int64_t *ret_pause_us, struct space_error *err);
