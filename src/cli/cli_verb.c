/* cli_verb: dispatch to a sub-command by name. */
#include "cli/cli_verb.h"

#include "cli/cli_usage.h"

int cli_verb_dispatch(struct cli *cli, const struct cli_verb *verbs, size_t n_verbs, int argc, char **argv, const char *usage)
{
        if (argc < 2)
                return cli_usage_error(usage, "missing command");

        const char *name = argv[1];
        if (cli_streq(name, "-h") || cli_streq(name, "--help") || cli_streq(name, "help"))
                return cli_usage_print(usage);

        for (size_t i = 0; i < n_verbs; i++)
                if (cli_streq(verbs[i].name, name))
                        return verbs[i].run(cli, argc - 1, argv + 1);

        return cli_usage_error(usage, "unknown command '%s'", name);
}
