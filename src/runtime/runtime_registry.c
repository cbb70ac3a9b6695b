#include "runtime/runtime_registry.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int runtime_registry_adopt(struct runtime_registry *reg, struct runtime_driver *d)
{
        if (reg->n >= RUNTIME_REGISTRY_MAX)
                return -ENOSPC;
        if (runtime_registry_find(reg, d->ops->name))
                return -EEXIST;
        reg->drivers[reg->n++] = d;
        return 0;
}

int runtime_registry_add(struct runtime_registry *reg, const struct runtime_driver_ops *ops, const struct runtime_config *cfg,
                         struct space_error *err)
{
        if (reg->n >= RUNTIME_REGISTRY_MAX || runtime_registry_find(reg, ops->name))
                return space_error_set(err, SPACE_E_INTERNAL, "runtime %s: %s", ops->name,
                                       reg->n >= RUNTIME_REGISTRY_MAX ? "too many drivers" : "added twice");
        struct runtime_driver *d = calloc(1, sizeof(*d));
        if (!d)
                return space_error_errno(err, ENOMEM, "runtime %s", ops->name);
        d->ops = ops;
        if (ops->init(d, cfg, err) < 0) {
                free(d);
                return -1;
        }
        reg->drivers[reg->n++] = d;
        return 0;
}

void runtime_registry_free(struct runtime_registry *reg)
{
        for (size_t i = 0; i < reg->n; i++) {
                if (reg->drivers[i]->ops->free)
                        reg->drivers[i]->ops->free(reg->drivers[i]);
                free(reg->drivers[i]);
                reg->drivers[i] = NULL;
        }
        reg->n = 0;
}

const struct runtime_driver *runtime_registry_find(const struct runtime_registry *reg, const char *name)
{
        for (size_t i = 0; name && i < reg->n; i++)
                if (strcmp(reg->drivers[i]->ops->name, name) == 0)
                        return reg->drivers[i];
        return NULL;
}

const struct runtime_driver *runtime_registry_default(const struct runtime_registry *reg)
{
        return reg->n ? reg->drivers[0] : NULL;
}

const struct runtime_driver *runtime_registry_for(const struct runtime_registry *reg, const struct sandbox *sb,
                                                  struct space_error *err)
{
        const struct runtime_driver *d = runtime_registry_find(reg, sb->runtime);
        if (!d)
                space_error_set(err, SPACE_E_UNAVAILABLE, "sandbox %s runs on the %s runtime, which this server does not host",
                                sb->id, sb->runtime[0] ? sb->runtime : "(unnamed)");
        return d;
}

const struct runtime_driver *runtime_registry_for_binding(const struct runtime_registry *reg, const json_t *environment,
                                                          struct space_error *err)
{
        json_t *name = json_object_get(environment, "driver");
        if (!name)
                return runtime_registry_default(reg);
        const struct runtime_driver *d = json_is_string(name) ? runtime_registry_find(reg, json_string_value(name)) : NULL;
        if (!d)
                space_error_set(err, SPACE_E_INVALID_REQUEST,
                                "the template is bound to the %s runtime, which this server does not host",
                                json_is_string(name) ? json_string_value(name) : "(invalid)");
        return d;
}

int runtime_registry_agent_connect(const struct runtime_registry *reg, const struct sandbox *sb, int timeout_ms,
                                   struct space_error *err)
{
        const struct runtime_driver *d = runtime_registry_for(reg, sb, err);
        if (!d)
                return -EPROTONOSUPPORT;
        int fd = d->ops->agent_connect(d, sb, timeout_ms);
        if (fd >= 0)
                return fd;
        if (fd == -ENOENT || fd == -ECONNREFUSED || fd == -ECONNRESET || fd == -ETIMEDOUT || fd == -EAGAIN)
                space_error_set(err, SPACE_E_UNAVAILABLE, "the agent of sandbox %s cannot be reached (%s)", sb->id,
                                strerror(-fd));
        else
                space_error_errno(err, fd, "connect to the agent of sandbox %s", sb->id);
        return fd;
}
