/* ns_proc_view: FUSE mounts over /proc files and the trimmed cpuinfo (see the header). */
#include "runtime/namespaces/ns_proc_view.h"

#include "runtime/namespaces/ns_child.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const view_targets[NS_PROC_VIEWS] = { "proc/meminfo", "proc/stat", "proc/loadavg", "proc/uptime" };

static void put_str(char *buf, size_t size, size_t *n, const char *s)
{
        while (*s && *n + 1 < size)
                buf[(*n)++] = *s++;
        buf[*n] = 0;
}

bool ns_proc_view_available(char *why, size_t size)
{
        struct stat st;
        if (stat("/dev/fuse", &st) < 0) {
                snprintf(why, size, "no /dev/fuse (%s)", strerror(errno));
                return false;
        }
        if (!S_ISCHR(st.st_mode) || (st.st_mode & 0006) != 0006) {
                snprintf(why, size, "/dev/fuse has mode %04o; the views need 0666 (udev's default; scripts/install-deps sets it)",
                         (unsigned)(st.st_mode & 07777));
                return false;
        }
        return true;
}

void ns_proc_view_mount(int fds[NS_PROC_VIEWS])
{
        for (int i = 0; i < NS_PROC_VIEWS; i++)
                fds[i] = -1;
        for (int i = 0; i < NS_PROC_VIEWS; i++) {
                /* Before pivot_root "/" is still the host's tree: its /dev/fuse. */
                int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
                if (fd < 0)
                        return;
                char opts[160];
                size_t n = 0;
                char number[12];
                ns_child_format_uint(number, sizeof(number), (uint64_t)fd);
                put_str(opts, sizeof(opts), &n, "fd=");
                put_str(opts, sizeof(opts), &n, number);
                put_str(opts, sizeof(opts), &n, ",rootmode=100444,user_id=0,group_id=0,allow_other,default_permissions");
                /* The mount does not wait for the server: requests queue until the agent answers INIT. */
                if (mount("space-proc", view_targets[i], "fuse", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts) < 0) {
                        close(fd);
                        continue;
                }
                fds[i] = fd;
        }
}

/* Copies proc/cpuinfo to out and cuts it at the start of the line holding the
 * (cpus+1)th "processor" key (a key may span two reads: the cut is by file offset). */
static int copy_processors(int in, int out, uint32_t cpus)
{
        static const char key[] = "processor";
        char buf[4096];
        uint32_t seen = 0;
        off_t offset = 0, line_offset = 0;
        size_t matched = 0; /* bytes of key matched from the current line's start */
        bool matching = true;
        for (;;) {
                ssize_t len = read(in, buf, sizeof(buf));
                if (len < 0)
                        return -errno;
                if (len == 0)
                        return 0;
                if (write(out, buf, (size_t)len) != len)
                        return -EIO;
                for (ssize_t i = 0; i < len; i++) {
                        char ch = buf[i];
                        if (ch == '\n') {
                                line_offset = offset + i + 1;
                                matched = 0;
                                matching = true;
                                continue;
                        }
                        if (!matching)
                                continue;
                        if (ch != key[matched]) {
                                matching = false;
                                continue;
                        }
                        if (++matched < sizeof(key) - 1)
                                continue;
                        matching = false;
                        if (++seen > cpus)
                                return ftruncate(out, line_offset) < 0 ? -errno : 0;
                }
                offset += len;
        }
}

void ns_proc_view_cpuinfo(uint32_t cpus)
{
        if (!cpus)
                return;
        int in = open("proc/cpuinfo", O_RDONLY | O_CLOEXEC);
        if (in < 0)
                return;
        int out = open("dev/.cpuinfo", O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0444);
        if (out < 0) {
                close(in);
                return;
        }
        int r = copy_processors(in, out, cpus);
        close(in);
        close(out);
        if (r == 0 && mount("dev/.cpuinfo", "proc/cpuinfo", NULL, MS_BIND, NULL) == 0)
                (void)mount(NULL, "proc/cpuinfo", NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL);
        (void)unlink("dev/.cpuinfo");
}
