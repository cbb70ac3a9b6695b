/* cli_verb: a table of named sub-commands and the dispatcher that picks one. */
#pragma once

#include <stddef.h>

#include "cli/cli.h"

struct cli_verb {
        const char *name;
        int (*run)(struct cli *cli, int argc, char **argv);
};

/* Runs the verb named by argv[1] (argv[0] names the command itself) with argv shifted so the
 * verb sees its own name as argv[0]. Handles help and unknown verbs. Returns the exit status. */
int cli_verb_dispatch(struct cli *cli, const struct cli_verb *verbs, size_t n_verbs, int argc, char **argv, const char *usage);
