/* cli_grant: `space grant create|ls|rm` — just-in-time access: a credential binding put on
 * one sandbox for a bounded time (docs/network.md, "Grants"). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "cli/cli_collection.h"
#include "cli/cli_output.h"
#include "cli/cli_request.h"
#include "cli/cli_usage.h"
#include "cli/cli_verb.h"

static const char grant_usage[] =
        "usage: space grant COMMAND [ARGS...]\n"
        "\n"
        "Commands:\n"
        "  create SANDBOX BINDING --ttl DURATION  put the binding on the sandbox until it expires\n"
        "  ls SANDBOX                             the sandbox's grants that have not expired\n"
        "  rm SANDBOX GRANT                       revoke a grant now\n";
static const char grant_create_usage[] = "usage: space grant create SANDBOX BINDING --ttl DURATION (N[smhd], up to 7d)\n";
static const char grant_ls_usage[] = "usage: space grant ls SANDBOX\n";
static const char grant_rm_usage[] = "usage: space grant rm SANDBOX GRANT\n";

static const struct cli_output_column grant_columns[] = {
        { "ID", "id", CLI_CELL_TEXT, 0 },
        { "BINDING", "binding", CLI_CELL_TEXT, 0 },
        { "SECRET", "secret", CLI_CELL_TEXT, 0 },
        { "EXPIRES", "expires_at", CLI_CELL_AGE, 0 },
        { "CREATED", "created_at", CLI_CELL_AGE, 0 },
};

static void grants_path(struct http_path *path, const char *sandbox)
{
        http_path_init(path, "/v1/sandboxes");
        http_path_segment(path, sandbox);
        http_path_segment(path, "grants");
}

static int cli_grant_create(struct cli *cli, int argc, char **argv)
{
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_json_ json_t *answer = NULL, *body = NULL;
        static const struct option options[] = { { "help", no_argument, NULL, 'h' },
                                                 { "ttl", required_argument, NULL, 't' },
                                                 {} };
        long long ttl = 0;
        int c;
        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
                if (c == 'h')
                        return cli_usage_print(grant_create_usage);
                if (c != 't')
                        return cli_usage_option_error(grant_create_usage, c, argv);
                if (cli_args_duration(optarg, 7LL * 86400, &ttl) < 0 || ttl < 1)
                        return cli_usage_error(grant_create_usage, "--ttl takes N[smhd] up to 7d, not '%s'", optarg);
        }
        if (argc - optind != 2)
                return cli_usage_error(grant_create_usage, "give the sandbox and the binding");
        if (!ttl)
                return cli_usage_error(grant_create_usage, "--ttl is required");
        body = json_pack("{s:s, s:I}", "binding", argv[optind + 1], "ttl_s", (json_int_t)ttl);
        if (!body)
                return CLI_EXIT_FAILURE;
        grants_path(&path, argv[optind]);
        if (cli_request(cli, "POST", &path, body, CLI_REQUEST_TIMEOUT_S, NULL, &answer) < 0)
                return CLI_EXIT_FAILURE;
        if (cli->json)
                return cli_output_exit(cli_output_json(answer));
        printf("%s\n", cli_output_string(answer, "id") ?: "-");
        return CLI_EXIT_OK;
}

static int cli_grant_ls(struct cli *cli, int argc, char **argv)
{
        _cleanup_http_path_ struct http_path path = {};
        int r = cli_args_simple(argc, argv, grant_ls_usage, 1, NULL);
        if (r != CLI_CONTINUE)
                return r;
        grants_path(&path, argv[optind]);
        return cli_collection_list(cli, &path, "grants", grant_columns, ARRAY_SIZE(grant_columns));
}

static int cli_grant_rm(struct cli *cli, int argc, char **argv)
{
        _cleanup_http_path_ struct http_path path = {};
        int r = cli_args_simple(argc, argv, grant_rm_usage, 2, NULL);
        if (r != CLI_CONTINUE)
                return r;
        grants_path(&path, argv[optind]);
        http_path_segment(&path, argv[optind + 1]);
        return cli_collection_delete(cli, &path, argv[optind + 1]);
}

int cli_grant_main(struct cli *cli, int argc, char **argv)
{
        static const struct cli_verb verbs[] = {
                { "create", cli_grant_create },
                { "ls", cli_grant_ls },
                { "rm", cli_grant_rm },
        };
        return cli_verb_dispatch(cli, verbs, ARRAY_SIZE(verbs), argc, argv, grant_usage);
}
