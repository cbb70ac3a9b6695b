#include "templates/template_ref.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
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

bool template_ref_ok(const char *ref)
{
        if (!ref)
                return false;
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
        if (!template_ref_ok(ref))
                return -EINVAL;
        const char *colon = strchr(ref, ':');
        size_t n = colon ? (size_t)(colon - ref) : strlen(ref);
        snprintf(name, name_size, "%.*s", (int)n, ref);
        snprintf(tag, tag_size, "%s", colon ? colon + 1 : "");
        return 0;
}

int template_ref_resolve(struct spaced_context *ctx, const char *ref, struct template_record *ret)
{
        if (!template_ref_ok(ref))
                return -ENOENT;
        int r = STORE(ctx, template_get, ref, ret);
        if (r != -ENOENT || strchr(ref, ':'))
                return r;
        char latest[80];
        snprintf(latest, sizeof(latest), "%s:latest", ref);
        return STORE(ctx, template_get, latest, ret);
}
