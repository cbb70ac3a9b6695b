#include "egress/egress_profiles.h"

#include <stdio.h>
#include <string.h>

#include "egress/egress_policy.h"

bool egress_profile_is_none(const char *name)
{
        return !name || strcmp(name, "none") == 0;
}

static bool name_ok(const char *name)
{
        size_t n = strlen(name);
        return n > 0 && n < 64 && strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789-_") == n;
}

/* The hosts of the package registries: Debian's archive, PyPI, npm, crates.io and Go's
 * module proxy and checksum database. HTTPS only, but for Debian's archive, which apt
 * fetches over HTTP (its packages are signed). */
static const char *const package_registries[] = {
        "deb.debian.org:80",
        "deb.debian.org:443",
        "security.debian.org:80",
        "security.debian.org:443",
        "pypi.org:443",
        "files.pythonhosted.org:443",
        "registry.npmjs.org:443",
        "crates.io:443",
        "index.crates.io:443",
        "static.crates.io:443",
        "proxy.golang.org:443",
        "sum.golang.org:443",
        NULL,
};

static json_t *package_registries_new(void)
{
        json_t *rules = json_array();
        for (size_t i = 0; rules && package_registries[i]; i++)
                if (json_array_append_new(rules, json_pack("{s:s}", "allow", package_registries[i])) < 0) {
                        json_decref(rules);
                        return NULL;
                }
        return rules ? json_pack("{s:s, s:s, s:o}", "profile", "package-registries", "default", "deny", "rules", rules) : NULL;
}

json_t *egress_profiles_load_new(const char *path, char *why, size_t why_size)
{
        json_t *all = json_pack("{s:{s:s}, s:{s:s, s:s, s:[]}, s:o*}", "none", "profile", "none", "public", "profile", "public",
                                "default", "public", "rules", "package-registries", package_registries_new());
        if (all && !json_object_get(all, "package-registries")) {
                json_decref(all);
                all = NULL;
        }
        if (!all || !path || !path[0])
                return all;
        json_error_t jerr;
        json_t *file = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
        const json_t *profiles = json_object_get(file, "profiles");
        const char *name;
        json_t *def;
        if (!file || !json_is_object(profiles)) {
                snprintf(why, why_size, "%s: %s", path, file ? "expected {\"profiles\": {NAME: PROFILE, ...}}" : jerr.text);
                goto fail;
        }
        json_object_foreach((json_t *)profiles, name, def)
        {
                struct egress_policy p;
                char inner[256];
                if (!name_ok(name) || egress_profile_is_none(name)) {
                        snprintf(why, why_size, "%s: profile name \"%.64s\" is not valid (a-z, 0-9, -, _; not none)", path, name);
                        goto fail;
                }
                if (!json_is_object(def) || json_object_get(def, "allow") || json_object_get(def, "deny") ||
                    egress_policy_from_json(def, &p, inner, sizeof(inner)) < 0) {
                        snprintf(why, why_size, "%s: profile %s: %s", path, name,
                                 json_is_object(def) && !json_object_get(def, "allow") && !json_object_get(def, "deny")
                                         ? inner
                                         : "must be {\"default\", \"rules\"}");
                        goto fail;
                }
                egress_policy_release(&p);
                json_t *copy = json_deep_copy(def);
                if (!copy || json_object_set_new(copy, "profile", json_string(name)) < 0 ||
                    json_object_set_new(all, name, copy) < 0) {
                        snprintf(why, why_size, "out of memory");
                        goto fail;
                }
        }
        json_decref(file);
        return all;
fail:
        json_decref(file);
        json_decref(all);
        return NULL;
}

const json_t *egress_profiles_find(const json_t *profiles, const char *name)
{
        return name ? json_object_get(profiles, name) : NULL;
}
