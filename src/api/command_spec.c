/* command_spec: the argv and environment of a command asked for over the API. */
#include "api/command_spec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char **command_spec_envp(const json_t *sandbox_env, const json_t *request_env, bool root_home)
{
        json_t *merged = json_pack("{s:s}", "PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
        if (!merged)
                return NULL;
        if (root_home)
                json_object_set_new(merged, "HOME", json_string("/root"));
        if (sandbox_env)
                json_object_update(merged, (json_t *)sandbox_env);
        if (request_env)
                json_object_update(merged, (json_t *)request_env);
        size_t n = json_object_size(merged), i = 0;
        char **envp = calloc(n + 1, sizeof(char *));
        const char *k;
        json_t *v;
        json_object_foreach(merged, k, v)
        {
                if (!envp)
                        break;
                if (asprintf(&envp[i], "%s=%s", k, json_string_value(v)) < 0) {
                        envp[i] = NULL;
                        break;
                }
                i++;
        }
        json_decref(merged);
        return envp;
}

void command_spec_strv_free(char **v)
{
        for (char **p = v; p && *p; p++)
                free(*p);
        free(v);
}

char **command_spec_argv(const json_t *cmd, const char *shell)
{
        size_t n = cmd ? json_array_size(cmd) : 3;
        char **argv = calloc(n + 1, sizeof(char *));
        if (!argv)
                return NULL;
        if (!cmd) {
                argv[0] = strdup("/bin/sh");
                argv[1] = strdup("-c");
                argv[2] = strdup(shell);
        } else {
                for (size_t i = 0; i < n; i++)
                        argv[i] = strdup(json_string_value(json_array_get(cmd, i)));
        }
        for (size_t i = 0; i < n; i++)
                if (!argv[i]) {
                        command_spec_strv_free(argv);
                        return NULL;
                }
        return argv;
}


void command_spec_template_defaults(const json_t *environment, const char **user, const char **cwd, char *buf, size_t size)
{
        json_t *config = json_object_get(environment, "config");
        const char *tu = json_string_value(json_object_get(config, "user"));
        const char *tw = json_string_value(json_object_get(config, "workdir"));
        if (!*user && tu && *tu) {
                snprintf(buf, size, "%.*s", (int)strcspn(tu, ":"), tu); /* no group */
                *user = buf;
        }
        if (!*cwd && tw && tw[0] == '/')
                *cwd = tw;
}

bool command_spec_user_ok(const char *s)
{
        size_t n = strlen(s);
        if (n == 0 || n > 64 || s[0] == '-')
                return false;
        for (const char *p = s; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || strchr("._-$", *p)))
                        return false;
        return true;
}

bool command_spec_user_is_root(const char *user)
{
        return !user || strcmp(user, "root") == 0 || strcmp(user, "0") == 0;
}
