/* Calling runsc: every call carries the same global flags (docs/isolation.md, gvisor). */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "runtime/gvisor/gv_driver.h"
#include "spaced/host_command.h"

#define RUNSC_TIMEOUT_S 60
#define MAX_ARGS 24

/* systrap: no KVM needed. network none: a sandbox has only lo, unless it has an egress link:
 * then --network=host, the host kernel's stack of the network namespace its bundle names
 * (spaced's, holding only its link: gv_bundle.c, docs/network.md). Not --network=sandbox
 * (gVisor's netstack): Debian's runsc 0.0~20240729 refuses it on kernels whose
 * net.core.rmem_default is per namespace (6.x: "cannot run with network enabled in root
 * network namespace"). overlay none and shared file access: writes reach the
 * btrfs subvolume at once, so its snapshots see them. host-uds create: the agent's socket,
 * bound inside, is a socket on the host. ignore-cgroups: spaced's cgroup manager owns the
 * sandbox's cgroup. */
static int build_argv(const struct gv_driver *gv, bool link, const char *const *args, char **argv)
{
        static const char *const globals[] = { "--platform=systrap", "--overlay2=none", "--file-access=shared",
                                               "--host-uds=create", "--ignore-cgroups" };
        size_t n = 0;
        argv[n++] = "runsc";
        argv[n++] = "--root";
        argv[n++] = (char *)gv->runsc_root;
        argv[n++] = link ? "--network=host" : "--network=none";
        for (size_t i = 0; i < sizeof(globals) / sizeof(globals[0]); i++)
                argv[n++] = (char *)globals[i];
        for (size_t i = 0; args[i]; i++) {
                if (n + 1 >= MAX_ARGS)
                        return -E2BIG;
                argv[n++] = (char *)args[i];
        }
        argv[n] = NULL;
        return 0;
}

static int run(const struct gv_driver *gv, bool link, const char *log_path, const char *const *args)
{
        char *argv[MAX_ARGS];
        int r = build_argv(gv, link, args, argv);
        return r < 0 ? r : host_command_run(argv, log_path ? log_path : "/dev/null", NULL, 0, RUNSC_TIMEOUT_S);
}

int gv_runsc(const struct gv_driver *gv, const char *log_path, const char *const *args)
{
        return run(gv, false, log_path, args);
}

int gv_runsc_for(const struct gv_driver *gv, const struct sandbox *sb, const char *log_path, const char *const *args)
{
        return run(gv, gv_has_link(gv, sb), log_path, args);
}

int gv_runsc_capture(const struct gv_driver *gv, const char *const *args, char *out, size_t size)
{
        char *argv[MAX_ARGS];
        int r = build_argv(gv, false, args, argv);
        return r < 0 ? r : host_command_run(argv, NULL, out, size, RUNSC_TIMEOUT_S);
}

int gv_runsc_state(const struct gv_driver *gv, const char *id, pid_t *ret_pid, char *ret_status, size_t size)
{
        char out[4096];
        const char *args[] = { "state", id, NULL };
        int r = gv_runsc_capture(gv, args, out, sizeof(out));
        if (r != 0)
                return r < 0 ? r : -ENOENT;
        const char *brace = strchr(out, '{'); /* warnings may come first */
        json_t *o = brace ? json_loads(brace, JSON_DISABLE_EOF_CHECK, NULL) : NULL;
        json_int_t pid = json_integer_value(json_object_get(o, "pid"));
        const char *status = json_string_value(json_object_get(o, "status"));
        if (ret_status)
                snprintf(ret_status, size, "%s", status ? status : "");
        json_decref(o);
        if (pid <= 0 || pid > INT32_MAX)
                return -ENOENT;
        if (ret_pid)
                *ret_pid = (pid_t)pid;
        return 0;
}

pid_t gv_runsc_sandbox_pid(const struct gv_driver *gv, const char *id)
{
        pid_t pid;
        int r = gv_runsc_state(gv, id, &pid, NULL, 0);
        return r < 0 ? r : pid;
}
