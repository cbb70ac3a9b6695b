#include "templates/build_env.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *lookup(const json_t *env, const char *name, size_t n)
{
        char key[256];
        if (n >= sizeof(key))
                return "";
        memcpy(key, name, n);
        key[n] = '\0';
        const char *v = json_string_value(json_object_get(env, key));
        if (v)
                return v;
        return strcmp(key, "PATH") == 0 ? BUILD_ENV_DEFAULT_PATH : "";
}

static bool name_start(char c)
{
        return c == '_' || isalpha((unsigned char)c);
}
static bool name_char(char c)
{
        return c == '_' || isalnum((unsigned char)c);
}

char *build_env_expand(const json_t *env, const char *in)
{
        size_t cap = strlen(in) + 1, len = 0;
        char *out = malloc(cap);
        if (!out)
                return NULL;
        for (const char *p = in; *p;) {
                const char *val = NULL;
                size_t skip = 1, vlen = 1;
                if (p[0] == '$' && p[1] == '{') {
                        const char *end = strchr(p + 2, '}');
                        if (end && end > p + 2 && name_start(p[2])) {
                                bool ok = true;
                                for (const char *q = p + 2; q < end; q++)
                                        ok = ok && name_char(*q);
                                if (ok) {
                                        val = lookup(env, p + 2, (size_t)(end - p - 2));
                                        skip = (size_t)(end - p) + 1;
                                }
                        }
                } else if (p[0] == '$' && name_start(p[1])) {
                        size_t n = 1;
                        while (name_char(p[1 + n]))
                                n++;
                        val = lookup(env, p + 1, n);
                        skip = n + 1;
                }
                if (!val)
                        val = p; /* a literal character */
                else
                        vlen = strlen(val);
                if (len + vlen + 1 > cap) {
                        while (len + vlen + 1 > cap)
                                cap *= 2;
                        char *grown = realloc(out, cap);
                        if (!grown) {
                                free(out);
                                return NULL;
                        }
                        out = grown;
                }
                memcpy(out + len, val, vlen);
                len += vlen;
                p += skip;
        }
        out[len] = '\0';
        return out;
}

char **build_env_envp(const json_t *env, const char *user)
{
        size_t n = json_object_size(env) + 3, i = 0;
        char **envp = calloc(n, sizeof(char *));
        if (!envp)
                return NULL;
        bool root = !user || !user[0] || strcmp(user, "root") == 0 || strcmp(user, "0") == 0;
        if (!json_object_get(env, "PATH"))
                envp[i++] = strdup("PATH=" BUILD_ENV_DEFAULT_PATH);
        if (!json_object_get(env, "HOME") && root)
                envp[i++] = strdup("HOME=/root"); /* another user's HOME comes from the agent */
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)env, k, v) if (asprintf(&envp[i++], "%s=%s", k, json_string_value(v)) < 0) envp[i - 1] =
                NULL;
        for (size_t j = 0; j < i; j++)
                if (!envp[j]) {
                        build_env_strv_free(envp);
                        return NULL;
                }
        return envp;
}

void build_env_strv_free(char **v)
{
        for (size_t i = 0; v && v[i]; i++)
                free(v[i]);
        free(v);
}
