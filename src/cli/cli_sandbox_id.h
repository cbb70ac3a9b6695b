/* cli_sandbox_id: a sandbox named by the start of its id, as docker and git take ids —
 * "3f2a" or "sb-3f2a" for the one sandbox whose id starts so. A whole id (sb- and 16 hex
 * digits), or anything that is not hex, is taken as it is, without a request. */
#pragma once

#include "cli/cli.h"

/* Replaces *arg by the whole id (a string that lives until the process ends). Says why on
 * stderr and returns -ENOENT (no sandbox starts so) or -EEXIST (several do), or the
 * listing's -errno. */
int cli_sandbox_id_resolve(struct cli *cli, char **arg);
