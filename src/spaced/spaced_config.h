/* spaced_config: defaults, then a config file (key = value, same names as the flags),
 * then SPACE_* environment variables, then flags. */
#pragma once

#include "spaced/spaced_context.h"

/* Returns 0, 1 when the program should exit 0 (--help, --version), or -1 after printing
 * a usage error. */
int spaced_config_load(struct spaced_config *cfg, int argc, char **argv);
