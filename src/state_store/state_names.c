/* Names of states as they appear in the API and the database, and record destructors. */
#include "state_store/state_store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const sandbox_state_names[] = {
        [SANDBOX_CREATING] = "creating",     [SANDBOX_RUNNING] = "running",     [SANDBOX_PAUSED] = "paused",
        [SANDBOX_STOPPING] = "stopping",     [SANDBOX_STOPPED] = "stopped",     [SANDBOX_STARTING] = "starting",
        [SANDBOX_DESTROYING] = "destroying", [SANDBOX_DESTROYED] = "destroyed", [SANDBOX_FAILED] = "failed",
        [SANDBOX_RESTORING] = "restoring",
};

static const char *const operation_state_names[] = {
        [OPERATION_PENDING] = "pending",
        [OPERATION_RUNNING] = "running",
        [OPERATION_SUCCEEDED] = "succeeded",
        [OPERATION_FAILED] = "failed",
};

static const char *const command_state_names[] = {
        [COMMAND_STARTING] = "starting",
        [COMMAND_RUNNING] = "running",
        [COMMAND_EXITED] = "exited",
        [COMMAND_LOST] = "lost",
        [COMMAND_PENDING_APPROVAL] = "pending_approval",
};

static const char *const approval_state_names[] = {
        [APPROVAL_PENDING] = "pending",
        [APPROVAL_APPROVED] = "approved",
        [APPROVAL_DENIED] = "denied",
        [APPROVAL_EXPIRED] = "expired",
};

#define N_NAMES(a) (sizeof(a) / sizeof((a)[0]))

/* The index of name in names, or -EINVAL. */
static int name_index(const char *const *names, size_t n, const char *name)
{
        for (size_t i = 0; name && i < n; i++)
                if (strcmp(name, names[i]) == 0)
                        return (int)i;
        return -EINVAL;
}

const char *sandbox_state_name(enum sandbox_state s)
{
        return (unsigned)s < _SANDBOX_STATE_MAX ? sandbox_state_names[s] : "unknown";
}

int sandbox_state_from_name(const char *name, enum sandbox_state *ret)
{
        int i = name_index(sandbox_state_names, _SANDBOX_STATE_MAX, name);
        if (i >= 0)
                *ret = (enum sandbox_state)i;
        return i < 0 ? i : 0;
}

const char *operation_state_name(enum operation_state s)
{
        return (unsigned)s < N_NAMES(operation_state_names) ? operation_state_names[s] : "unknown";
}

int operation_state_from_name(const char *name, enum operation_state *ret)
{
        int i = name_index(operation_state_names, N_NAMES(operation_state_names), name);
        if (i >= 0)
                *ret = (enum operation_state)i;
        return i < 0 ? i : 0;
}

const char *command_state_name(enum command_state s)
{
        return (unsigned)s < N_NAMES(command_state_names) ? command_state_names[s] : "unknown";
}

int command_state_from_name(const char *name, enum command_state *ret)
{
        int i = name_index(command_state_names, N_NAMES(command_state_names), name);
        if (i >= 0)
                *ret = (enum command_state)i;
        return i < 0 ? i : 0;
}

void sandbox_release(struct sandbox *s)
{
        if (!s)
                return;
        json_decref(s->environment);
        json_decref(s->env);
        json_decref(s->metadata);
        json_decref(s->rolling);
        json_decref(s->idle);
        json_decref(s->network);
        s->environment = s->env = s->metadata = s->rolling = s->network = s->idle = NULL;
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

void command_record_release(struct command_record *c)
{
        if (!c)
                return;
        json_decref(c->spec);
        c->spec = NULL;
}

void command_record_array_free(struct command_record *arr, size_t n)
{
        for (size_t i = 0; arr && i < n; i++)
                command_record_release(&arr[i]);
        free(arr);
}

void policy_record_release(struct policy_record *p)
{
        if (!p)
                return;
        json_decref(p->document);
        p->document = NULL;
}

void policy_record_array_free(struct policy_record *arr, size_t n)
{
        for (size_t i = 0; arr && i < n; i++)
                policy_record_release(&arr[i]);
        free(arr);
}

const char *approval_state_name(enum approval_state s)
{
        return (unsigned)s < N_NAMES(approval_state_names) ? approval_state_names[s] : "unknown";
}

int approval_state_from_name(const char *name, enum approval_state *ret)
{
        int i = name_index(approval_state_names, N_NAMES(approval_state_names), name);
        if (i >= 0)
                *ret = (enum approval_state)i;
        return i < 0 ? i : 0;
}

void approval_record_release(struct approval_record *a)
{
        if (!a)
                return;
        json_decref(a->request);
        a->request = NULL;
}

void approval_record_array_free(struct approval_record *arr, size_t n)
{
        for (size_t i = 0; arr && i < n; i++)
                approval_record_release(&arr[i]);
        free(arr);
}

void secret_record_release(struct secret_record *s)
{
        if (!s)
                return;
        free(s->sealed);
        s->sealed = NULL;
}

void secret_record_array_free(struct secret_record *arr, size_t n)
{
        for (size_t i = 0; arr && i < n; i++)
                secret_record_release(&arr[i]);
        free(arr);
}

void binding_record_release(struct binding_record *b)
{
        if (!b)
                return;
        json_decref(b->spec);
        b->spec = NULL;
}

void binding_record_array_free(struct binding_record *arr, size_t n)
{
        for (size_t i = 0; arr && i < n; i++)
                binding_record_release(&arr[i]);
        free(arr);
}
