#include "bench_proc.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"

static void cleanup_closedirp(DIR **d)
{
        if (*d)
                closedir(*d);
}
#define _cleanup_closedir_ _cleanup_(cleanup_closedirp)

/* Reads a small /proc file into buf (NUL-terminated). Returns its length or -errno. */
static ssize_t read_small(const char *path, char *buf, size_t size)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        size_t len = 0;
        ssize_t n;
        while (len + 1 < size && (n = read(fd, buf + len, size - 1 - len)) > 0)
                len += (size_t)n;
        buf[len] = '\0';
        return (ssize_t)len;
}

static bool comm_is(pid_t pid, const char *name)
{
        char path[64], comm[64];
        snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
        if (read_small(path, comm, sizeof(comm)) <= 0)
                return false;
        comm[strcspn(comm, "\n")] = '\0';
        return strcmp(comm, name) == 0;
}

static pid_t pid_of_entry(const struct dirent *de)
{
        if (!isdigit((unsigned char)de->d_name[0]))
                return 0;
        return (pid_t)strtol(de->d_name, NULL, 10);
}

/* Socket inodes listening on `port` in /proc/net/tcp{,6}; returns how many were stored. */
static size_t listening_inodes(unsigned port, unsigned long *inodes, size_t max)
{
        static const char *const tables[] = { "/proc/net/tcp", "/proc/net/tcp6" };
        size_t n = 0;
        for (size_t t = 0; t < ARRAY_SIZE(tables); t++) {
                _cleanup_fclose_ FILE *f = fopen(tables[t], "re");
                char line[512];
                if (!f || !fgets(line, sizeof(line), f)) /* the first line is a header */
                        continue;
                while (n < max && fgets(line, sizeof(line), f)) {
                        unsigned lport, state;
                        unsigned long inode;
                        if (sscanf(line, " %*d: %*[0-9A-Fa-f]:%x %*[0-9A-Fa-f]:%*x %x %*x:%*x %*x:%*x %*x %*u %*u %lu", &lport,
                                   &state, &inode) == 3 &&
                            lport == port && state == 0x0A)
                                inodes[n++] = inode;
                }
        }
        return n;
}

static bool holds_socket(pid_t pid, const unsigned long *inodes, size_t n)
{
        char dir[64];
        snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
        _cleanup_closedir_ DIR *d = opendir(dir);
        if (!d)
                return false;
        struct dirent *de;
        while ((de = readdir(d))) {
                char link[64];
                ssize_t len = readlinkat(dirfd(d), de->d_name, link, sizeof(link) - 1);
                if (len <= 0)
                        continue;
                link[len] = '\0';
                unsigned long inode;
                if (sscanf(link, "socket:[%lu]", &inode) != 1)
                        continue;
                for (size_t i = 0; i < n; i++)
                        if (inodes[i] == inode)
                                return true;
        }
        return false;
}

int bench_proc_find_spaced(unsigned port, pid_t *ret)
{
        unsigned long inodes[8];
        size_t ninodes = listening_inodes(port, inodes, ARRAY_SIZE(inodes));
        _cleanup_closedir_ DIR *d = opendir("/proc");
        if (!d)
                return -errno;
        pid_t only = 0;
        size_t count = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                pid_t pid = pid_of_entry(de);
                if (pid <= 0 || !comm_is(pid, "spaced"))
                        continue;
                if (ninodes > 0 && holds_socket(pid, inodes, ninodes)) {
                        *ret = pid;
                        return 0;
                }
                only = pid;
                count++;
        }
        if (count == 0)
                return -ENOENT;
        if (count > 1)
                return -ENOTUNIQ;
        *ret = only;
        return 0;
}

/* The value in KiB of a "Key:   123 kB" line of /proc/<pid>/status, or -1. */
static long status_kb(const char *status, const char *key)
{
        const char *p = strstr(status, key);
        return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

int bench_proc_rss(pid_t pid, long *ret_rss_kb, long *ret_hwm_kb)
{
        char path[64], status[4096];
        snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
        ssize_t n = read_small(path, status, sizeof(status));
        if (n < 0)
                return (int)n;
        long rss = status_kb(status, "\nVmRSS:"), hwm = status_kb(status, "\nVmHWM:");
        if (rss < 0) /* a zombie or a kernel thread */
                return -ESRCH;
        *ret_rss_kb = rss;
        *ret_hwm_kb = hwm;
        return 0;
}

/* The sandbox id of a /proc/<pid>/cgroup text: in any hierarchy, the first level named sb-*
 * below "/space/" (space/<instance>/<id> since cgroups are instance-scoped, space/<id> before;
 * the path may start with more levels when spaced itself runs in a sub-cgroup). */
static bool cgroup_sandbox_id(const char *cgroups, char *id, size_t size)
{
        for (const char *p = strstr(cgroups, "/space/"); p; p = strstr(p + 1, "/space/")) {
                const char *level = p + strlen("/space/");
                for (;;) {
                        size_t len = strcspn(level, "/\n");
                        if (len == 0)
                                break;
                        if (strncmp(level, "sb-", 3) == 0 && len < size) {
                                memcpy(id, level, len);
                                id[len] = '\0';
                                return true;
                        }
                        if (level[len] != '/')
                                break;
                        level += len + 1;
                }
        }
        return false;
}

int bench_proc_agents_rss(bool (*mine)(const char *id, void *userdata), void *userdata, struct bench_rss *ret)
{
        struct bench_rss sum = { .min_kb = 0 };
        _cleanup_closedir_ DIR *d = opendir("/proc");
        if (!d)
                return -errno;
        struct dirent *de;
        while ((de = readdir(d))) {
                pid_t pid = pid_of_entry(de);
                char path[64], cgroups[2048], id[64];
                long rss, hwm;
                if (pid <= 0 || !comm_is(pid, "space-agent"))
                        continue;
                snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
                if (read_small(path, cgroups, sizeof(cgroups)) <= 0 || !cgroup_sandbox_id(cgroups, id, sizeof(id)) ||
                    !mine(id, userdata) || bench_proc_rss(pid, &rss, &hwm) < 0)
                        continue;
                if (sum.count == 0 || rss < sum.min_kb)
                        sum.min_kb = rss;
                if (rss > sum.max_kb)
                        sum.max_kb = rss;
                sum.sum_kb += rss;
                sum.count++;
        }
        *ret = sum;
        return 0;
}

void bench_proc_cgroup_memory(char (*ids)[64], size_t n, struct bench_rss *ret)
{
        /* space/<instance>/<id> (instance-scoped cgroups), or space/<id> before those. */
        static const char *const formats[] = {
                "/sys/fs/cgroup/memory/space/*/%s/memory.usage_in_bytes",
                "/sys/fs/cgroup/space/*/%s/memory.current",
                "/sys/fs/cgroup/unified/space/*/%s/memory.current",
                "/sys/fs/cgroup/memory/space/%s/memory.usage_in_bytes",
                "/sys/fs/cgroup/space/%s/memory.current",
                "/sys/fs/cgroup/unified/space/%s/memory.current",
        };
        struct bench_rss sum = { 0 };
        for (size_t i = 0; i < n; i++)
                for (size_t f = 0; f < ARRAY_SIZE(formats); f++) {
                        char pattern[PATH_MAX], value[64];
                        glob_t g;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
                        snprintf(pattern, sizeof(pattern), formats[f], ids[i]);
#pragma GCC diagnostic pop
                        if (glob(pattern, 0, NULL, &g) != 0)
                                continue;
                        ssize_t got = g.gl_pathc == 1 ? read_small(g.gl_pathv[0], value, sizeof(value)) : -1;
                        globfree(&g);
                        if (got <= 0)
                                continue;
                        long kb = (long)(strtoull(value, NULL, 10) / 1024);
                        if (sum.count == 0 || kb < sum.min_kb)
                                sum.min_kb = kb;
                        if (kb > sum.max_kb)
                                sum.max_kb = kb;
                        sum.sum_kb += kb;
                        sum.count++;
                        break;
                }
        *ret = sum;
}
