#include "templates/build_registry.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cleanup.h"
#include "templates/build_sandbox.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
        bool used, cancelled;
        char key[32], sandbox[32];
} reg[64];

static int slot_locked(const char *key, bool add)
{
        int free_slot = -1;
        for (int i = 0; i < (int)ARRAY_SIZE(reg); i++) {
                if (reg[i].used && strcmp(reg[i].key, key) == 0)
                        return i;
                if (!reg[i].used && free_slot < 0)
                        free_slot = i;
        }
        if (!add || free_slot < 0)
                return -1;
        memset(&reg[free_slot], 0, sizeof(reg[free_slot]));
        reg[free_slot].used = true;
        snprintf(reg[free_slot].key, sizeof(reg[free_slot].key), "%s", key);
        return free_slot;
}

void build_registry_set_sandbox(const char *key, const char *id)
{
        pthread_mutex_lock(&lock);
        int i = slot_locked(key, true);
        if (i >= 0)
                snprintf(reg[i].sandbox, sizeof(reg[i].sandbox), "%s", id ? id : "");
        pthread_mutex_unlock(&lock);
}

bool build_registry_cancelled(const char *key)
{
        pthread_mutex_lock(&lock);
        int i = slot_locked(key, false);
        bool c = i >= 0 && reg[i].cancelled;
        pthread_mutex_unlock(&lock);
        return c;
}

int build_registry_cancel(struct spaced_context *ctx, const char *key)
{
        pthread_mutex_lock(&lock);
        int i = slot_locked(key, true);
        if (i >= 0) {
                reg[i].cancelled = true;
                if (reg[i].sandbox[0])
                        build_sandbox_kill(ctx, reg[i].sandbox);
        }
        pthread_mutex_unlock(&lock);
        return i < 0 ? -ENOSPC : 0;
}

void build_registry_leave(const char *key)
{
        pthread_mutex_lock(&lock);
        int i = slot_locked(key, false);
        if (i >= 0)
                reg[i].used = false;
        pthread_mutex_unlock(&lock);
}
