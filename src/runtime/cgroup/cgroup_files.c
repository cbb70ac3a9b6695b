/* File-level helpers shared by the cgroup v1 and v2 backends, and backend detection. */
#include "runtime/cgroup/cgroup_manager.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"

int cgroup_write_file(const char *dir, const char *file, const char *value)
{
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/%s", dir, file);
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        size_t len = strlen(value);
        ssize_t n = write(fd, value, len);
        if (n < 0)
                return -errno;
        return (size_t)n == len ? 0 : -EIO;
}

int cgroup_read_file(const char *dir, const char *file, char *buf, size_t size)
{
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/%s", dir, file);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t n = read(fd, buf, size - 1);
        if (n < 0)
                return -errno;
        buf[n] = '\0';
        return (int)n;
}

int cgroup_read_counter(const char *dir, const char *file, const char *key, uint64_t *ret)
{
        char buf[4096];
        *ret = 0;
        int r = cgroup_read_file(dir, file, buf, sizeof(buf));
        if (r < 0)
                return r;
        size_t klen = strlen(key);
        for (char *line = buf; line && *line;) {
                char *next = strchr(line, '\n');
                if (strncmp(line, key, klen) == 0 && line[klen] == ' ') {
                        *ret = strtoull(line + klen + 1, NULL, 10);
                        return 0;
                }
                line = next ? next + 1 : NULL;
        }
        return 0;
}

uint64_t cgroup_read_keyed(const char *dir, const char *file, const char *key)
{
        uint64_t v;
        return cgroup_read_counter(dir, file, key, &v) < 0 ? 0 : v;
}

/* Reads a whole cgroup.procs (it may hold thousands of pids) into a malloc'd buffer. */
static int read_procs(const char *dir, char **ret, size_t *ret_len)
{
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        size_t len = 0, cap = 4096;
        char *buf = malloc(cap);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                if (len + 1 == cap) {
                        char *grown = realloc(buf, cap * 2);
                        if (!grown) {
                                free(buf);
                                return -ENOMEM;
                        }
                        buf = grown;
                        cap *= 2;
                }
                ssize_t n = read(fd, buf + len, cap - len - 1);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        int r = -errno;
                        free(buf);
                        return r;
                }
                if (n == 0)
                        break;
                len += (size_t)n;
        }
        buf[len] = '\0';
        *ret = buf;
        *ret_len = len;
        return 0;
}

int cgroup_count_procs_in(const char *dir)
{
        char *buf;
        size_t len;
        int r = read_procs(dir, &buf, &len);
        if (r < 0)
                return r;
        int count = 0;
        for (size_t i = 0; i < len; i++)
                if (buf[i] == '\n')
                        count++;
        free(buf);
        return count;
}

/* One pass of SIGKILL over cgroup.procs; returns how many were signalled. Only whole,
 * newline-terminated lines are pids. */
int cgroup_kill_procs_in(const char *dir)
{
        char *buf;
        size_t len;
        int r = read_procs(dir, &buf, &len);
        if (r < 0)
                return r;
        int count = 0;
        for (char *line = buf, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
                char *end;
                *nl = '\0';
                long pid = strtol(line, &end, 10);
                if (end != line && *end == '\0' && pid > 0 && kill((pid_t)pid, SIGKILL) == 0)
                        count++;
        }
        free(buf);
        return count;
}

int cgroup_list_children(const char *dir, char ***ret_ids, size_t *ret_n)
{
        DIR *d = opendir(dir);
        if (!d) {
                if (errno != ENOENT)
                        return -errno;
                *ret_ids = NULL;
                *ret_n = 0;
                return 0;
        }
        char **ids = NULL;
        size_t n = 0;
        struct dirent *de;
        int r = 0;
        while (r == 0 && (de = readdir(d))) {
                if (de->d_type != DT_DIR || de->d_name[0] == '.')
                        continue;
                char **grown = realloc(ids, (n + 1) * sizeof(*ids));
                if (!grown || !(grown[n] = strdup(de->d_name))) {
                        if (grown)
                                ids = grown;
                        r = -ENOMEM;
                        break;
                }
                ids = grown;
                n++;
        }
        closedir(d);
        if (r < 0) {
                for (size_t i = 0; i < n; i++)
                        free(ids[i]);
                free(ids);
                return r;
        }
        *ret_ids = ids;
        *ret_n = n;
        return 0;
}

int cgroup_find_mount(const char *controller, char *buf, size_t size)
{
        _cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
        if (!f)
                return -errno;
        char line[4096];
        while (fgets(line, sizeof(line), f)) {
                /* id parent maj:min root mountpoint options ... - fstype source superopts */
                char mnt[PATH_MAX], fstype[64], superopts[1024];
                char *sep = strstr(line, " - ");
                if (!sep || sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1 ||
                    sscanf(sep + 3, "%63s %*s %1023s", fstype, superopts) != 2)
                        continue;
                if (!controller) {
                        if (strcmp(fstype, "cgroup2") == 0) {
                                snprintf(buf, size, "%s", mnt);
                                return 0;
                        }
                        continue;
                }
                if (strcmp(fstype, "cgroup") != 0)
                        continue;
                for (char *save = NULL, *tok = strtok_r(superopts, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
                        if (strcmp(tok, controller) == 0) {
                                snprintf(buf, size, "%s", mnt);
                                return 0;
                        }
        }
        return -ENOENT;
}

int cgroup_manager_detect(const char *instance, struct cgroup_manager **ret, char *reason, size_t reason_size)
{
        char v2_reason[256] = "", v1_reason[256] = "";
        _cleanup_free_ struct cgroup_manager *cg = calloc(1, sizeof(*cg));
        if (!cg)
                return -ENOMEM;
        if (cgroup_v2_init(cg, instance, v2_reason, sizeof(v2_reason)) == 0) {
                cg->ops = &cgroup_manager_v2;
                *ret = TAKE_PTR(cg);
                return 0;
        }
        memset(cg, 0, sizeof(*cg));
        if (cgroup_v1_init(cg, instance, v1_reason, sizeof(v1_reason)) == 0) {
                cg->ops = &cgroup_manager_v1;
                *ret = TAKE_PTR(cg);
                return 0;
        }
        snprintf(reason, reason_size, "no usable cgroup hierarchy (v2: %s; v1: %s)", v2_reason, v1_reason);
        return -ENOTSUP;
}
