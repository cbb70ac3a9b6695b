/* policy_cache: each project's compiled policies, kept in the daemon so that the check on
 * an exec costs a lookup and a match, not a store read and a compilation.
 *
 * src/service/policy_service.c fills it on a miss (policy_cache_generation() before reading
 * the store, policy_cache_put() after) and empties it on every change it makes
 * (policy_cache_forget()): a set read before a change is not kept, because the change
 * moved the generation. One daemon per store: a change written by another process is not
 * seen (docs/governance.md). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "policy/policy.h"

/* A project's policies, compiled, shared by readers (policy_set_unref). */
struct policy_set {
        char project_id[32];
        struct policy **items; /* project-wide first, then sandbox-narrowed; each by creation */
        size_t n;
        int refs;
};

struct policy_set *policy_set_new(const char *project_id);
/* Appends p (owned by the set from then on). -ENOMEM. */
int policy_set_add(struct policy_set *s, struct policy *p);
void policy_set_unref(struct policy_set *s);

struct policy_cache;

int policy_cache_new(struct policy_cache **ret);
void policy_cache_free(struct policy_cache *c);
/* The project's set (a new reference), or NULL when not cached. cache NULL: NULL. */
struct policy_set *policy_cache_get(struct policy_cache *c, const char *project_id);
uint64_t policy_cache_generation(struct policy_cache *c);
/* Keeps s (takes a reference) unless the cache changed since generation was read. */
void policy_cache_put(struct policy_cache *c, struct policy_set *s, uint64_t generation);
/* Drops the project's set (all projects' when project_id is NULL). */
void policy_cache_forget(struct policy_cache *c, const char *project_id);
