/* cli_template_build: building templates from a Spacefile and a context directory, and
 * importing them from archives (see cli_template_build.c). */
#pragma once

#include <stdbool.h>

#include "cli/cli.h"

/* True when `template build` was given -t: a Spacefile build rather than a built-in's. */
bool cli_template_build_wants_context(int argc, char **argv);
int cli_template_build_context(struct cli *cli, int argc, char **argv);
int cli_template_import(struct cli *cli, int argc, char **argv);

/* Follows the log of the build op_id to its end (GET /v1/templates/builds/OP/log), then
 * reports how it ended: the name on success, the error and exit 1 on failure. */
int cli_template_build_follow(struct cli *cli, const char *op_id, const char *name);
