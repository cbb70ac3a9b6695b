/* build_env: the environment of a Spacefile build — $VAR / ${VAR} substitution in ENV and
 * WORKDIR values (from the ENV so far, PATH defaulting to the usual one), and the envp of a
 * RUN step. Pure: no I/O. */
#pragma once

#include <jansson.h>

#define BUILD_ENV_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* in with $NAME and ${NAME} replaced by env's values ("" when unset; PATH: the default);
 * a '$' not followed by a name stays. Returns a malloc'd string, NULL when out of memory. */
char *build_env_expand(const json_t *env, const char *in);
/* PATH (default) and HOME=/root for root unless env sets them, then env: "K=V", NULL-ended. */
char **build_env_envp(const json_t *env, const char *user);
void build_env_strv_free(char **v);
