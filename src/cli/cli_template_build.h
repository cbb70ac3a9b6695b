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

/* Before a create of it: a template that is not built yet (not_built, or failed) is built,
 * its log and progress on stderr. 0 when there is nothing to build (ready, building, or
 * not one this caller may see: the create says why), or when the build succeeded; -1 when
 * it failed (reported). */
int cli_template_build_if_needed(struct cli *cli, const char *name);
