/* The debian template: bookworm minbase from debootstrap (about a minute and 200 MB),
 * built once on request and kept. */
#include <errno.h>
#include <stdio.h>

#include "spaced/host_command.h"
#include "templates/build_registry.h"
#include "templates/template_catalog.h"

static bool cancelled(void *key)
{
        return key && build_registry_cancelled(key);
}

int debian_rootfs_build(const char *root, const char *mirror, const char *log_path, const char *cancel_key,
                        struct space_error *err)
{
        /* The pool is nodev, and debootstrap's maintainer scripts need the target's /dev/null:
         * it runs in a mount namespace of its own where the target is a bind with dev. */
        char *argv[] = { "unshare",
                         "--mount",
                         "--propagation",
                         "private",
                         "sh",
                         "-c",
                         "mount --bind \"$0\" \"$0\" && mount -o remount,bind,dev,nosuid \"$0\" && "
                         "exec debootstrap --variant=minbase bookworm \"$0\" \"$1\"",
                         (char *)root,
                         (char *)mirror,
                         NULL };
        int r = host_command_run_until(argv, log_path, 1800, cancelled, (void *)cancel_key);
        if (cancelled((void *)cancel_key))
                return space_error_set(err, SPACE_E_CANCELLED, "the build was cancelled");
        if (r < 0)
                return space_error_errno(err, r, "run debootstrap (install the debootstrap package)");
        if (r != 0)
                return space_error_set(err, SPACE_E_INTERNAL, "debootstrap exited with %d; see %s", r, log_path);
        /* Sandboxes get a /dev of their own at start: the template keeps no device nodes, so
         * that they are never host objects and a full export of a sandbox imports. */
        char devdir[4096];
        snprintf(devdir, sizeof(devdir), "%s/dev", root);
        char *nodes[] = { "find", devdir, "-xdev", "(", "-type", "b", "-o", "-type", "c", ")", "-delete", NULL };
        r = host_command_run(nodes, log_path, NULL, 0, 60);
        if (r != 0)
                return space_error_set(err, SPACE_E_INTERNAL,
                                       "removing device nodes from the debian rootfs exited with %d; see %s", r, log_path);
        /* An unprivileged user, as the presets have. */
        char *useradd[] = { "chroot", (char *)root, "useradd",   "--create-home", "--uid",
                            "1000",   "--shell",    "/bin/bash", "user",          NULL };
        r = host_command_run(useradd, log_path, NULL, 0, 60);
        if (r != 0)
                return space_error_set(err, SPACE_E_INTERNAL, "useradd in the debian rootfs exited with %d; see %s", r, log_path);
        return 0;
}
