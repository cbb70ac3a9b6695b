/* The namespaces driver's per-sandbox handle, as JSON text in the sandbox's runtime_state. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "runtime/namespaces/ns_driver.h"

void ns_handle_read(const char *runtime_state, struct ns_handle *ret)
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

int ns_handle_write(const struct ns_handle *h, char *buf, size_t size)
{
        int n = snprintf(buf, size, "{\"pid\":%d,\"pid_start\":%llu,\"uid_base\":%u}", (int)h->pid,
                         (unsigned long long)h->pid_start, (unsigned)h->uid_base);
        return n < 0 || (size_t)n >= size ? -ENOSPC : 0;
}
