/* The recorded init of a host-process sandbox (namespaces, gvisor), as JSON text in the
 * sandbox's runtime_state, and the check that it is still that process. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "cleanup.h"
#include "runtime/sandbox_host.h"

void init_handle_read(const char *runtime_state, struct init_handle *ret)
{
        memset(ret, 0, sizeof(*ret));
        if (!runtime_state || !runtime_state[0])
                return;
        json_t *o = json_loads(runtime_state, 0, NULL);
        json_int_t pid = json_integer_value(json_object_get(o, "pid"));
        json_int_t start = json_integer_value(json_object_get(o, "pid_start"));
        json_int_t base = json_integer_value(json_object_get(o, "uid_base"));
        json_decref(o);
        if (pid > 0 && pid <= INT32_MAX && start > 0) {
                ret->pid = (int32_t)pid;
                ret->pid_start = (uint64_t)start;
        }
        if (base > 0 && base <= UINT32_MAX)
                ret->uid_base = (uint32_t)base;
}

int init_handle_write(const struct init_handle *h, char *buf, size_t size)
{
        int n = snprintf(buf, size, "{\"pid\":%d,\"pid_start\":%llu,\"uid_base\":%u}", (int)h->pid,
                         (unsigned long long)h->pid_start, (unsigned)h->uid_base);
        return n < 0 || (size_t)n >= size ? -ENOSPC : 0;
}

uint64_t init_handle_start_time(pid_t pid)
{
        char path[64], buf[1024];
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return 0;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        if (n <= 0)
                return 0;
        buf[n] = '\0';
        /* Skip "pid (comm)": comm may hold spaces and parentheses; the last ')' ends it. */
        char *p = strrchr(buf, ')');
        if (!p)
                return 0;
        p += 2; /* now at field 3 (state) */
        if (*p == 'Z' || *p == 'X')
                return 0; /* dead, not yet reaped */
        for (int field = 3; field < 22 && p; field++) {
                p = strchr(p, ' ');
                if (p)
                        p++;
        }
        return p ? strtoull(p, NULL, 10) : 0;
}

bool init_handle_alive(const struct init_handle *h)
{
        return h->pid > 0 && h->pid_start && init_handle_start_time(h->pid) == h->pid_start;
}
