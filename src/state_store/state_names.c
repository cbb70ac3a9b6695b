/* Names of states as they appear in the API and the database, and record destructors. */
#include "state_store/state_store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const sandbox_state_names[] = {
        [SANDBOX_CREATING] = "creating",     [SANDBOX_RUNNING] = "running",   [SANDBOX_PAUSED] = "paused",
        [SANDBOX_STOPPING] = "stopping",     [SANDBOX_STOPPED] = "stopped",   [SANDBOX_STARTING] = "starting",
        [SANDBOX_DESTROYING] = "destroying", [SANDBOX_DESTROYED] = "destroyed", [SANDBOX_FAILED] = "failed",
        [SANDBOX_RESTORING] = "restoring",
};

static const char *const operation_state_names[] = {
        [OPERATION_PENDING] = "pending",
        [OPERATION_RUNNING] = "running",
        [OPERATION_SUCCEEDED] = "succeeded",
        [OPERATION_FAILED] = "failed",
};

const char *sandbox_state_name(enum sandbox_state s)
{
        return (unsigned)s < _SANDBOX_STATE_MAX ? sandbox_state_names[s] : "unknown";
}

int sandbox_state_from_name(const char *name, enum sandbox_state *ret)
{
        for (unsigned i = 0; i < _SANDBOX_STATE_MAX; i++)
                if (name && strcmp(name, sandbox_state_names[i]) == 0) {
                        *ret = (enum sandbox_state)i;
                        return 0;
                }
        return -EINVAL;
}

const char *operation_state_name(enum operation_state s)
{
        return (unsigned)s <= OPERATION_FAILED ? operation_state_names[s] : "unknown";
}

int operation_state_from_name(const char *name, enum operation_state *ret)
{
        for (unsigned i = 0; i <= OPERATION_FAILED; i++)
                if (name && strcmp(name, operation_state_names[i]) == 0) {
                        *ret = (enum operation_state)i;
                        return 0;
                }
        return -EINVAL;
}

void sandbox_release(struct sandbox *s)
{
        if (!s)
                return;
        json_decref(s->environment);
        json_decref(s->env);
        json_decref(s->metadata);
        json_decref(s->rolling);
        s->environment = s->env = s->metadata = s->rolling = NULL;
}

void sandbox_array_free(struct sandbox *arr, size_t n)
{
        for (size_t i = 0; arr && i < n; i++)
                sandbox_release(&arr[i]);
        free(arr);
}

void template_record_release(struct template_record *t)
{
        if (!t)
                return;
        json_decref(t->environment);
        t->environment = NULL;
}
