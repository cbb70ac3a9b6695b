/* runtime_registry: the driver instances one spaced hosts, by name. A sandbox records the
 * name of its driver (sb->runtime, from its template's environment binding at create); every
 * call on a sandbox goes to that instance. The first driver added is the default one: new
 * templates are bound to it. */
#pragma once

#include <stddef.h>

#include "runtime/runtime_driver.h"

#define RUNTIME_REGISTRY_MAX 8

struct runtime_registry {
        struct runtime_driver *drivers[RUNTIME_REGISTRY_MAX];
        size_t n;
};

/* Makes an instance of ops, runs its init with cfg and adds it. -1 with err filled. */
int runtime_registry_add(struct runtime_registry *reg, const struct runtime_driver_ops *ops, const struct runtime_config *cfg,
                         struct space_error *err);
/* Adds an instance made elsewhere (tests: a fake driver); the registry frees it. */
int runtime_registry_adopt(struct runtime_registry *reg, struct runtime_driver *d);
void runtime_registry_free(struct runtime_registry *reg);

/* The instance named name, or NULL. */
const struct runtime_driver *runtime_registry_find(const struct runtime_registry *reg, const char *name);
/* The default instance (the first added), or NULL when there is none. */
const struct runtime_driver *runtime_registry_default(const struct runtime_registry *reg);
/* The driver of sb (sb->runtime), or NULL with err set (SPACE_E_UNAVAILABLE: this server
 * cannot serve it now; one hosting that runtime can) when this daemon hosts no driver of
 * that name. */
const struct runtime_driver *runtime_registry_for(const struct runtime_registry *reg, const struct sandbox *sb,
                                                  struct space_error *err);
/* The driver a template's environment binding names ("driver"; absent: the default), or
 * NULL with err set (SPACE_E_INVALID_REQUEST) for a name this daemon does not host. */
const struct runtime_driver *runtime_registry_for_binding(const struct runtime_registry *reg, const json_t *environment,
                                                          struct space_error *err);
/* A connected stream to sb's agent (runtime_driver_ops.agent_connect), or -errno with err
 * set for the API caller: SPACE_E_UNAVAILABLE when the agent cannot be reached (it is not
 * running, or gone), and -EPROTONOSUPPORT for a runtime this daemon does not host. Callers with their own mapping of the errno may use it instead. */
int runtime_registry_agent_connect(const struct runtime_registry *reg, const struct sandbox *sb, int timeout_ms,
                                   struct space_error *err);
