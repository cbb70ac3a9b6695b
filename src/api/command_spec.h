/* command_spec: turning a request's {cmd | shell, env} into argv and envp. */
#pragma once

#include <jansson.h>
#include <stdbool.h>

/* cmd (an array of strings) as is, or ["/bin/sh", "-c", shell]. NULL when out of memory. */
char **command_spec_argv(const json_t *cmd, const char *shell);
/* PATH (and HOME=/root when root_home), then the sandbox's env, then the request's: later
 * wins. "K=V" strings, NULL-terminated; NULL when out of memory. */
char **command_spec_envp(const json_t *sandbox_env, const json_t *request_env, bool root_home);
void command_spec_strv_free(char **v);
/* The template's defaults (environment.config) for what the request left out: *user
 * (its USER without a group, copied into buf) and *cwd (its absolute WORKDIR). */
void command_spec_template_defaults(const json_t *environment, const char **user, const char **cwd, char *buf, size_t size);
/* A name or uid as the sandbox's /etc/passwd may have it. */
bool command_spec_user_ok(const char *s);
/* Whether user means root (NULL, "root" or "0"). */
bool command_spec_user_is_root(const char *user);
