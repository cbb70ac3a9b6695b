/* cli_inspect: `space inspect [--type T] ID...` — objects as JSON, as docker inspect shows
 * them: a JSON array with one object per ID, whatever --json says. The kind comes from the
 * id (sb-, snap-, op-; a sandbox id may be shortened) unless --type says it (template
 * takes a NAME[:TAG]). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_output.h"
#include "cli/cli_request.h"
#include "cli/cli_sandbox_id.h"
#include "cli/cli_usage.h"

static const char inspect_usage[] =
        "usage: space inspect [--type sandbox|snapshot|operation|template] ID...\n"
        "\n"
        "Prints a JSON array with one object per ID, as the API gives them: sandboxes (sb-..., or\n"
        "the start of one's id), snapshots (snap-...), operations (op-...), templates (--type\n"
        "template NAME[:TAG]). Exit status 1 if any of them is not found (the others are printed).\n";

static const struct {
        const char *type;
        const char *prefix;
        const char *collection;
} inspect_kinds[] = {
        { "snapshot", "snap-", "/v1/snapshots" },
        { "operation", "op-", "/v1/operations" },
        { "template", NULL, "/v1/templates" },
        { "sandbox", "sb-", "/v1/sandboxes" }, /* the default: last */
};

static size_t inspect_kind(const char *type, const char *id)
{
        size_t last = ARRAY_SIZE(inspect_kinds) - 1;
        for (size_t k = 0; k < ARRAY_SIZE(inspect_kinds); k++) {
                if (type && cli_streq(type, inspect_kinds[k].type))
                        return k;
                if (!type && inspect_kinds[k].prefix &&
                    strncmp(id, inspect_kinds[k].prefix, strlen(inspect_kinds[k].prefix)) == 0)
                        return k;
        }
        return type ? ARRAY_SIZE(inspect_kinds) : last;
}

int cli_inspect_main(struct cli *cli, int argc, char **argv)
{
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "type", required_argument, NULL, 'T' },
                {},
        };
        _cleanup_json_ json_t *all = json_array();
        const char *type = NULL;
        int c, status = CLI_EXIT_OK;

        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
                if (c == 'h')
                        return cli_usage_print(inspect_usage);
                if (c != 'T')
                        return cli_usage_option_error(inspect_usage, c, argv);
                type = optarg;
        }
        if (optind >= argc)
                return cli_usage_error(inspect_usage, "give at least one id");
        if (type && inspect_kind(type, "") == ARRAY_SIZE(inspect_kinds))
                return cli_usage_error(inspect_usage, "--type is sandbox, snapshot, operation or template, not '%s'", type);
        if (!all)
                return cli_output_exit(-ENOMEM);
        for (int i = optind; i < argc; i++) {
                _cleanup_http_path_ struct http_path path = {};
                _cleanup_json_ json_t *answer = NULL;
                size_t k = inspect_kind(type, argv[i]);
                if (k == ARRAY_SIZE(inspect_kinds) - 1 && cli_sandbox_id_resolve(cli, &argv[i]) < 0) {
                        status = CLI_EXIT_FAILURE;
                        continue;
                }
                http_path_init(&path, inspect_kinds[k].collection);
                http_path_segment(&path, argv[i]);
                if (cli_request(cli, "GET", &path, NULL, CLI_REQUEST_TIMEOUT_S, NULL, &answer) < 0) {
                        status = CLI_EXIT_FAILURE;
                        continue;
                }
                if (json_array_append(all, answer) < 0)
                        return cli_output_exit(-ENOMEM);
        }
        int r = cli_output_exit(cli_output_json(all));
        return r != CLI_EXIT_OK ? r : status;
}
