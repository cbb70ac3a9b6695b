/* The compiled policies of each project, behind one mutex (held for a lookup or a swap,
 * never for a compilation or a match). Sets are reference-counted so a check in progress
 * keeps the set it started with while a change replaces it. */
#include "policy/policy_cache.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CACHE_SLOTS 256 /* projects kept; past that the oldest slot is reused */

struct policy_cache {
        pthread_mutex_t lock;
        uint64_t generation;
        struct policy_set *slots[CACHE_SLOTS];
        size_t next; /* the slot reused when none is free */
};

static pthread_mutex_t refs_lock = PTHREAD_MUTEX_INITIALIZER;

struct policy_set *policy_set_new(const char *project_id)
{
        struct policy_set *s = calloc(1, sizeof(*s));
        if (!s)
                return NULL;
        snprintf(s->project_id, sizeof(s->project_id), "%s", project_id);
        s->refs = 1;
        return s;
}

int policy_set_add(struct policy_set *s, struct policy *p)
{
        struct policy **items = realloc(s->items, (s->n + 1) * sizeof(*items));
        if (!items)
                return -ENOMEM;
        s->items = items;
        s->items[s->n++] = p;
        return 0;
}

static struct policy_set *set_ref(struct policy_set *s)
{
        pthread_mutex_lock(&refs_lock);
        s->refs++;
        pthread_mutex_unlock(&refs_lock);
        return s;
}

void policy_set_unref(struct policy_set *s)
{
        if (!s)
                return;
        pthread_mutex_lock(&refs_lock);
        int left = --s->refs;
        pthread_mutex_unlock(&refs_lock);
        if (left > 0)
                return;
        for (size_t i = 0; i < s->n; i++)
                policy_free(s->items[i]);
        free(s->items);
        free(s);
}

int policy_cache_new(struct policy_cache **ret)
{
        struct policy_cache *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        pthread_mutex_init(&c->lock, NULL);
        *ret = c;
        return 0;
}

void policy_cache_free(struct policy_cache *c)
{
        if (!c)
                return;
        for (size_t i = 0; i < CACHE_SLOTS; i++)
                policy_set_unref(c->slots[i]);
        pthread_mutex_destroy(&c->lock);
        free(c);
}

struct policy_set *policy_cache_get(struct policy_cache *c, const char *project_id)
{
        if (!c)
                return NULL;
        struct policy_set *found = NULL;
        pthread_mutex_lock(&c->lock);
        for (size_t i = 0; i < CACHE_SLOTS && !found; i++)
                if (c->slots[i] && strcmp(c->slots[i]->project_id, project_id) == 0)
                        found = set_ref(c->slots[i]);
        pthread_mutex_unlock(&c->lock);
        return found;
}

uint64_t policy_cache_generation(struct policy_cache *c)
{
        if (!c)
                return 0;
        pthread_mutex_lock(&c->lock);
        uint64_t g = c->generation;
        pthread_mutex_unlock(&c->lock);
        return g;
}

void policy_cache_put(struct policy_cache *c, struct policy_set *s, uint64_t generation)
{
        if (!c || !s)
                return;
        struct policy_set *old = NULL;
        pthread_mutex_lock(&c->lock);
        if (c->generation == generation) {
                size_t slot = CACHE_SLOTS;
                for (size_t i = 0; i < CACHE_SLOTS && slot == CACHE_SLOTS; i++)
                        if (c->slots[i] && strcmp(c->slots[i]->project_id, s->project_id) == 0)
                                slot = i;
                for (size_t i = 0; i < CACHE_SLOTS && slot == CACHE_SLOTS; i++)
                        if (!c->slots[i])
                                slot = i;
                if (slot == CACHE_SLOTS) {
                        slot = c->next;
                        c->next = (c->next + 1) % CACHE_SLOTS;
                }
                old = c->slots[slot];
                c->slots[slot] = set_ref(s);
        }
        pthread_mutex_unlock(&c->lock);
        policy_set_unref(old);
}

void policy_cache_forget(struct policy_cache *c, const char *project_id)
{
        if (!c)
                return;
        struct policy_set *dropped[CACHE_SLOTS] = { 0 };
        pthread_mutex_lock(&c->lock);
        c->generation++;
        for (size_t i = 0; i < CACHE_SLOTS; i++)
                if (c->slots[i] && (!project_id || strcmp(c->slots[i]->project_id, project_id) == 0)) {
                        dropped[i] = c->slots[i];
                        c->slots[i] = NULL;
                }
        pthread_mutex_unlock(&c->lock);
        for (size_t i = 0; i < CACHE_SLOTS; i++)
                policy_set_unref(dropped[i]);
}
