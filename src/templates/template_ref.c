#include "templates/template_ref.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spaced/spaced_context.h"

static bool part_ok(const char *s, size_t n)
{
        if (n == 0 || s[0] == '.')
                return false;
        for (size_t i = 0; i < n; i++)
                if (!(isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '.' || s[i] == '-'))
                        return false;
        return true;
}

/* "@sha256:<64 hex>" */
static bool digest_ok(const char *s)
{
        if (strncmp(s, "@sha256:", 8) != 0 || strlen(s) != 8 + 64)
                return false;
        for (const char *p = s + 8; *p; p++)
                if (!isxdigit((unsigned char)*p) || isupper((unsigned char)*p))
                        return false;
        return true;
}

bool template_ref_ok(const char *ref)
{
        if (!ref)
                return false;
        const char *at = strchr(ref, '@');
        if (at) {
                char base[64];
                if ((size_t)(at - ref) >= sizeof(base) || !digest_ok(at))
                        return false;
                snprintf(base, sizeof(base), "%.*s", (int)(at - ref), ref);
                return template_ref_ok(base);
        }
        size_t len = strlen(ref);
        const char *colon = strchr(ref, ':');
        if (len == 0 || len > 63)
                return false;
        if (!colon)
                return part_ok(ref, len);
        return part_ok(ref, (size_t)(colon - ref)) && part_ok(colon + 1, strlen(colon + 1));
}

int template_ref_split(const char *ref, char *name, size_t name_size, char *tag, size_t tag_size)
{
        if (!template_ref_ok(ref) || strchr(ref, '@'))
                return -EINVAL;
        const char *colon = strchr(ref, ':');
        size_t n = colon ? (size_t)(colon - ref) : strlen(ref);
        snprintf(name, name_size, "%.*s", (int)n, ref);
        snprintf(tag, tag_size, "%s", colon ? colon + 1 : "");
        return 0;
}

/* name@sha256:…: the version of name (any tag, or the tag given) whose digest that is. */
static int resolve_digest(struct spaced_context *ctx, const char *ref, struct template_record *ret)
{
        const char *at = strchr(ref, '@');
        char base[64];
        snprintf(base, sizeof(base), "%.*s", (int)(at - ref), ref);
        size_t blen = strlen(base);
        bool tagged = strchr(base, ':') != NULL;
        struct template_record *all = NULL;
        size_t n = 0;
        int r = STORE(ctx, template_list, NULL, NULL, &all, &n);
        if (r < 0)
                return r;
        r = -ENOENT;
        for (size_t i = 0; i < n; i++) {
                const char *name = all[i].name, *digest = json_string_value(json_object_get(all[i].environment, "digest"));
                bool same = strcmp(name, base) == 0 || (!tagged && strncmp(name, base, blen) == 0 && name[blen] == ':');
                if (r == -ENOENT && same && digest && strcmp(digest, at + 1) == 0 && strcmp(all[i].state, "ready") == 0) {
                        *ret = all[i];
                        r = 0;
                        continue;
                }
                template_record_release(&all[i]);
        }
        free(all);
        return r;
}

int template_ref_resolve(struct spaced_context *ctx, const char *ref, struct template_record *ret)
{
        if (!template_ref_ok(ref))
                return -ENOENT;
        if (strchr(ref, '@'))
                return resolve_digest(ctx, ref, ret);
        int r = STORE(ctx, template_get, ref, ret);
        if (r != -ENOENT || strchr(ref, ':'))
                return r;
        char latest[80];
        snprintf(latest, sizeof(latest), "%s:latest", ref);
        return STORE(ctx, template_get, latest, ret);
}
