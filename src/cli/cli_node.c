/* cli_node: `space node ls` — the nodes of the fleet (docs/fleet.md; an admin key's business). */
#include <stdio.h>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "cli/cli_output.h"
#include "cli/cli_request.h"
#include "cli/cli_usage.h"
#include "cli/cli_verb.h"

static const char node_usage[] =
        "usage: space node COMMAND [ARGS...]\n"
        "\n"
        "Commands:\n"
        "  ls         list the nodes sharing this server's database, their state and last heartbeat (admin key)\n";
static const char node_ls_usage[] = "usage: space node ls\n";

static const struct cli_output_column node_columns[] = {
        { "ID", "id", CLI_CELL_TEXT, 0 },
        { "STATE", "state", CLI_CELL_TEXT, 0 },
        { "ADDRESS", "address", CLI_CELL_TEXT, 40 },
        { "CAPACITY", "capacity", CLI_CELL_TEXT, 0 },
        { "HEARTBEAT", "heartbeat_at", CLI_CELL_AGE, 0 },
        { "STARTED", "started_at", CLI_CELL_AGE, 0 },
};

static int cli_node_ls(struct cli *cli, int argc, char **argv)
{
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_json_ json_t *answer = NULL;

        int r = cli_args_simple(argc, argv, node_ls_usage, 0, NULL);
        if (r != CLI_CONTINUE)
                return r;
        http_path_init(&path, "/v1/nodes");
        if (cli_request(cli, "GET", &path, NULL, CLI_REQUEST_TIMEOUT_S, NULL, &answer) < 0)
                return CLI_EXIT_FAILURE;
        return cli_output_show_list(cli->json, answer, "nodes", node_columns, ARRAY_SIZE(node_columns));
}

int cli_node_main(struct cli *cli, int argc, char **argv)
{
        static const struct cli_verb verbs[] = {
                { "ls", cli_node_ls },
        };
        return cli_verb_dispatch(cli, verbs, ARRAY_SIZE(verbs), argc, argv, node_usage);
}
