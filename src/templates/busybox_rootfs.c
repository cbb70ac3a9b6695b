/* The busybox template: Debian's busybox-static and a symlink per applet — a complete,
 * tiny Linux userland built in milliseconds. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "spaced/host_command.h"
#include "templates/template_catalog.h"

static const char *const busybox_candidates[] = { "/bin/busybox", "/usr/bin/busybox" };

static int write_file(const char *root, const char *rel, const char *content, mode_t mode)
{
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/%s", root, rel);
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
        if (fd < 0)
                return -errno;
        size_t len = strlen(content);
        return write(fd, content, len) == (ssize_t)len ? 0 : -EIO;
}

static int copy_file(const char *src, const char *dst, mode_t mode)
{
        _cleanup_close_ int in = open(src, O_RDONLY | O_CLOEXEC);
        _cleanup_close_ int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
        if (in < 0 || out < 0)
                return -errno;
        char buf[65536];
        ssize_t n;
        while ((n = read(in, buf, sizeof(buf))) > 0)
                if (write(out, buf, (size_t)n) != n)
                        return -EIO;
        return n < 0 ? -errno : 0;
}

int busybox_rootfs_build(const char *root, struct space_error *err)
{
        const char *busybox = NULL;
        for (size_t i = 0; i < ARRAY_SIZE(busybox_candidates); i++)
                if (access(busybox_candidates[i], X_OK) == 0) {
                        busybox = busybox_candidates[i];
                        break;
                }
        if (!busybox)
                return space_error_set(err, SPACE_E_INTERNAL, "busybox not found (install the busybox-static package)");

        static const char *const dirs[] = { "bin", "sbin", "usr",  "usr/bin",   "usr/sbin", "etc",     "proc", "sys", "dev",
                                            "tmp", "root", "home", "home/user", "var",      "var/tmp", "run",  "mnt" };
        char path[PATH_MAX];
        for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
                snprintf(path, sizeof(path), "%s/%s", root, dirs[i]);
                if (mkdir(path, strcmp(dirs[i], "tmp") == 0 || strcmp(dirs[i], "var/tmp") == 0 ? 01777 : 0755) < 0 &&
                    errno != EEXIST)
                        return space_error_errno(err, errno, "mkdir %s", path);
        }
        snprintf(path, sizeof(path), "%s/home/user", root);
        if (chown(path, 1000, 1000) < 0)
                return space_error_errno(err, errno, "chown %s", path);
        snprintf(path, sizeof(path), "%s/bin/busybox", root);
        int r = copy_file(busybox, path, 0755);
        if (r < 0)
                return space_error_errno(err, r, "copy %s", busybox);

        /* One symlink per applet, at the path busybox itself reports. */
        char list[65536];
        char *argv[] = { (char *)busybox, "--list-full", NULL };
        r = host_command_run(argv, NULL, list, sizeof(list), 30);
        if (r != 0)
                return space_error_set(err, SPACE_E_INTERNAL, "busybox --list-full failed (%d)", r);
        for (char *save = NULL, *line = strtok_r(list, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                if (!*line || strstr(line, "..") || line[0] == '/')
                        continue;
                snprintf(path, sizeof(path), "%s/%s", root, line);
                if (symlink("/bin/busybox", path) < 0 && errno != EEXIST)
                        return space_error_errno(err, errno, "symlink %s", path);
        }
        if ((r = write_file(root, "etc/passwd",
                            "root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000:user:/home/user:/bin/sh\n"
                            "nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n",
                            0644)) < 0 ||
            (r = write_file(root, "etc/group", "root:x:0:\nuser:x:1000:\nnogroup:x:65534:\n", 0644)) < 0 ||
            (r = write_file(root, "etc/hosts", "127.0.0.1 localhost\n::1 localhost\n", 0644)) < 0 ||
            (r = write_file(root, "etc/os-release", "NAME=\"space busybox\"\nID=busybox\n", 0644)) < 0)
                return space_error_errno(err, r, "write /etc");
        return 0;
}
