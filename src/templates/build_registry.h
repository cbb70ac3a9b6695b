/* build_registry: the builds running in this process, for cancellation. A build is keyed by
 * its operation id (a preset built for another build's FROM runs under that build's key);
 * it names the build sandbox its current step runs in, so that a cancel can kill it.
 * A cancel that comes before the step's sandbox has started is not lost: the step looks
 * again once its sandbox runs (build_sandbox_run), and the built-in builders look between
 * their commands and while one runs. */
#pragma once

#include <stdbool.h>

struct spaced_context;

/* The step of build key now runs in sandbox id (NULL: in none). */
void build_registry_set_sandbox(const char *key, const char *id);
bool build_registry_cancelled(const char *key);
/* Marks build key cancelled and kills its step's sandbox, if one runs. 0, or -ENOSPC when
 * too many builds are registered to note it. */
int build_registry_cancel(struct spaced_context *ctx, const char *key);
/* The build is over: its entry goes. */
void build_registry_leave(const char *key);
