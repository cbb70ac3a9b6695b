/* The debian template: bookworm minbase from debootstrap (about a minute and 200 MB),
 * built once on request and kept. */
#include <errno.h>
#include <stdio.h>

#include "spaced/host_command.h"
#include "templates/template_catalog.h"

int debian_rootfs_build(const char *root, const char *mirror, const char *log_path, struct space_error *err)
{
        char *argv[] = { "debootstrap", "--variant=minbase", "bookworm", (char *)root, (char *)mirror, NULL };
        int r = host_command_run(argv, log_path, NULL, 0, 1800);
        if (r < 0)
                return space_error_errno(err, r, "run debootstrap (install the debootstrap package)");
        if (r != 0)
                return space_error_set(err, SPACE_E_INTERNAL, "debootstrap exited with %d; see %s", r, log_path);
        /* An unprivileged user, as the presets have. */
        char *useradd[] = { "chroot", (char *)root, "useradd", "--create-home", "--uid", "1000", "--shell", "/bin/bash", "user", NULL };
        r = host_command_run(useradd, log_path, NULL, 0, 60);
        if (r != 0)
                return space_error_set(err, SPACE_E_INTERNAL, "useradd in the debian rootfs exited with %d; see %s", r, log_path);
        return 0;
}
