/* cli_project: `space project create|ls` — projects (tenants; an admin key's business). */
#include <stdio.h>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "cli/cli_collection.h"
#include "cli/cli_output.h"
#include "cli/cli_request.h"
#include "cli/cli_usage.h"
#include "cli/cli_verb.h"

static const char project_usage[] =
        "usage: space project COMMAND [ARGS...]\n"
        "\n"
        "Commands:\n"
        "  create ID  make a project: 1-31 of [a-z0-9-] (admin key)\n"
        "  ls         list projects (admin key)\n"
        "\n"
        "Keys of a project: space key create NAME --project ID --role ROLE\n";
static const char project_create_usage[] = "usage: space project create ID\n";
static const char project_ls_usage[] = "usage: space project ls\n";

static const struct cli_output_column project_columns[] = {
        { "ID", "id", CLI_CELL_TEXT, 0 },
        { "CREATED", "created_at", CLI_CELL_AGE, 0 },
};

static int cli_project_create(struct cli *cli, int argc, char **argv)
{
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_json_ json_t *body = NULL, *answer = NULL;

        int r = cli_args_simple(argc, argv, project_create_usage, 1, NULL);
        if (r != CLI_CONTINUE)
                return r;
        body = json_pack("{s:s}", "id", argv[optind]);
        if (!body) {
                fputs("space: the project id is not valid UTF-8\n", stderr);
                return CLI_EXIT_FAILURE;
        }
        http_path_init(&path, "/v1/projects");
        if (cli_request(cli, "POST", &path, body, CLI_REQUEST_TIMEOUT_S, NULL, &answer) < 0)
                return CLI_EXIT_FAILURE;
        if (cli->json)
                return cli_output_exit(cli_output_json(answer));
        const char *id = cli_output_string(answer, "id");
        printf("%s\n", id ? id : argv[optind]);
        return CLI_EXIT_OK;
}

static int cli_project_ls(struct cli *cli, int argc, char **argv)
{
        _cleanup_http_path_ struct http_path path = {};

        int r = cli_args_simple(argc, argv, project_ls_usage, 0, NULL);
        if (r != CLI_CONTINUE)
                return r;
        http_path_init(&path, "/v1/projects");
        return cli_collection_list(cli, &path, "projects", project_columns, ARRAY_SIZE(project_columns));
}

int cli_project_main(struct cli *cli, int argc, char **argv)
{
        static const struct cli_verb verbs[] = {
                { "create", cli_project_create },
                { "ls", cli_project_ls },
        };
        return cli_verb_dispatch(cli, verbs, ARRAY_SIZE(verbs), argc, argv, project_usage);
}
