/* The OCI bundle spaced writes for a gvisor sandbox (runtime-spec config.json). */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <unistd.h>

#include "runtime/gvisor/gv_driver.h"

/* What root keeps inside, as in the namespaces runtime (ns_child.c). */
static json_t *kept_caps(void)
{
        return json_pack("[s,s,s,s,s,s,s,s,s]", "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL",
                         "CAP_SETGID", "CAP_SETUID", "CAP_NET_BIND_SERVICE", "CAP_SETFCAP");
}

static json_t *bind_mount(const char *dst, const char *src, bool read_only)
{
        return json_pack("{s:s, s:s, s:s, s:[s,s,s,s]}", "destination", dst, "type", "bind", "source", src, "options", "rbind",
                         read_only ? "ro" : "rw", "nosuid", "nodev");
}

int gv_bundle_write(const struct gv_driver *gv, const struct sandbox *sb, const char *bundle_dir, const char *rootfs,
                    const char *socket_dir, const char *netns_path, struct space_error *err)
{
        char memory[24], cpus[12], path[PATH_MAX], tmp[PATH_MAX + 8];
        uint64_t memory_bytes = sb->resources.memory_mb > 0 ? (uint64_t)sb->resources.memory_mb << 20 : 0;
        /* SUDO on (docs/isolation.md): setuid binaries work, inside gVisor's own kernel. */
        bool sudo = json_is_true(json_object_get(json_object_get(sb->environment, "config"), "sudo"));
        unsigned n_cpus = sb->resources.cpus > 1 ? (unsigned)(sb->resources.cpus + 0.999) : 1;
        snprintf(memory, sizeof(memory), "%llu", (unsigned long long)memory_bytes);
        snprintf(cpus, sizeof(cpus), "%u", n_cpus);
        json_t *process = json_pack("{s:[s,s,s,s,s,s,s], s:[s], s:s, s:{s:i, s:i}, s:{s:o, s:o, s:o}, s:b}", "args",
                                    "/dev/.space-agent", "--listen", "/dev/.space/agent.sock", "--memory-bytes", memory, "--cpus",
                                    cpus, "env", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "cwd", "/",
                                    "user", "uid", 0, "gid", 0, "capabilities", "bounding", kept_caps(), "effective", kept_caps(),
                                    "permitted", kept_caps(), "noNewPrivileges", !sudo);
        json_t *mounts = json_pack(
                "[{s:s, s:s, s:s}, {s:s, s:s, s:s, s:[s,s,s]}, o, o]", "destination", "/proc", "type", "proc", "source", "proc",
                "destination", "/tmp", "type", "tmpfs", "source", "tmpfs", "options", "nosuid", "nodev", "mode=1777",
                bind_mount("/dev/.space-agent", gv->host.config.agent_path, true), bind_mount("/dev/.space", socket_dir, false));
        json_t *config =
                json_pack("{s:s, s:o, s:{s:s, s:b}, s:s, s:o, s:{s:[{s:s},{s:s},{s:s},{s:s},{s:s}]}}", "ociVersion", "1.0.2",
                          "process", process, "root", "path", rootfs, "readonly", 0, "hostname", sb->id, "mounts", mounts,
                          "linux", "namespaces", "type", "pid", "type", "mount", "type", "ipc", "type", "uts", "type", "network");
        /* With a link: the namespace spaced made and put it in (runsc joins it by path). */
        json_t *netns = json_array_get(json_object_get(json_object_get(config, "linux"), "namespaces"), 4);
        if (netns_path && json_object_set_new(netns, "path", json_string(netns_path)) < 0) {
                json_decref(config);
                config = NULL;
        }
        if (!config)
                return space_error_set(err, SPACE_E_INTERNAL, "out of memory for the bundle of %s", sb->id);
        snprintf(path, sizeof(path), "%s/config.json", bundle_dir);
        snprintf(tmp, sizeof(tmp), "%s.tmp", path);
        int r = json_dump_file(config, tmp, JSON_COMPACT);
        json_decref(config);
        if (r < 0 || rename(tmp, path) < 0)
                return space_error_errno(err, errno ? errno : EIO, "write %s", path);
        return 0;
}
