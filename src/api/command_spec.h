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
