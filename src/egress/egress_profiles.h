/* egress_profiles: the operator's egress profiles by name. Built in: "none" (no network:
 * only lo), "public" (the public internet, nothing private) and "package-registries"
 * (Debian, PyPI, npm, crates.io and Go module hosts over HTTPS, Debian's archive over
 * HTTP too; nothing else). An operator's file
 * (spaced --egress-profiles FILE) adds or replaces others:
 *   {"profiles": {"NAME": {"default": "deny"|"public", "rules": [{"allow"|"deny": RULE}, …]}, …}}
 * (egress_policy.h). "none" cannot be redefined. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* path NULL or "": the built-ins only. Returns a new reference to {NAME: definition} (each
 * definition with its "profile" member set), or NULL with why filled. */
json_t *egress_profiles_load_new(const char *path, char *why, size_t why_size);
/* A profile's definition (borrowed from profiles), NULL if there is none of that name. */
const json_t *egress_profiles_find(const json_t *profiles, const char *name);
bool egress_profile_is_none(const char *name);
