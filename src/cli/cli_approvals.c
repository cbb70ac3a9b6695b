/* cli_approvals: `space approvals ls|approve|deny` — commands a require_approval rule holds
 * until a person decides (docs/governance.md). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "cli/cli_output.h"
#include "cli/cli_request.h"
#include "cli/cli_usage.h"
#include "cli/cli_verb.h"

static const char approvals_usage[] =
        "usage: space approvals COMMAND [ARGS...]\n"
        "\n"
        "Commands:\n"
        "  ls [--state S] [--all] [--project P]  held commands (pending unless --state or --all)\n"
        "  approve ID [-m COMMENT]              run the held command as it was asked\n"
        "  deny ID [-m COMMENT]                 refuse it (it ends lost: approval_denied)\n"
        "\n"
        "Deciding needs approval.write, and another key than the one that asked (docs/governance.md).\n";
static const char approvals_ls_usage[] =
        "usage: space approvals ls [--state pending|approved|denied|expired] [--all] [--project P]\n";
static const char approvals_decide_usage[] = "usage: space approvals approve|deny ID [-m COMMENT]\n";

static const struct cli_output_column approval_columns[] = {
        { "ID", "id", CLI_CELL_TEXT, 0 },
        { "STATE", "state", CLI_CELL_TEXT, 0 },
        { "SANDBOX", "sandbox_id", CLI_CELL_TEXT, 0 },
        { "COMMAND", "command.argv", CLI_CELL_TEXT, 0 },
        { "RULE", "rule_id", CLI_CELL_TEXT, 0 },
        { "ASKED BY", "requested_by", CLI_CELL_TEXT, 0 },
        { "CREATED", "created_at", CLI_CELL_AGE, 0 },
};

static int cli_approvals_ls(struct cli *cli, int argc, char **argv)
{
        static const struct option options[] = { { "help", no_argument, NULL, 'h' },
                                                 { "state", required_argument, NULL, 's' },
                                                 { "all", no_argument, NULL, 'a' },
                                                 { "project", required_argument, NULL, 'p' },
                                                 {} };
        const char *state = "pending", *project = NULL;
        int c;
        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
                if (c == 'h')
                        return cli_usage_print(approvals_ls_usage);
                if (c == 's')
                        state = optarg;
                else if (c == 'a')
                        state = NULL;
                else if (c == 'p')
                        project = optarg;
                else
                        return cli_usage_option_error(approvals_ls_usage, c, argv);
        }
        if (optind < argc)
                return cli_usage_error(approvals_ls_usage, "unexpected argument '%s'", argv[optind]);
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_json_ json_t *answer = NULL;
        http_path_init(&path, "/v1/approvals");
        if (state)
                http_path_query(&path, "state", state);
        if (project)
                http_path_query(&path, "project", project);
        http_path_query(&path, "limit", "1000");
        if (cli_request(cli, "GET", &path, NULL, CLI_REQUEST_TIMEOUT_S, NULL, &answer) < 0)
                return CLI_EXIT_FAILURE;
        return cli_output_show_list(cli->json, answer, "approvals", approval_columns, ARRAY_SIZE(approval_columns));
}

static int decide(struct cli *cli, int argc, char **argv, const char *verb)
{
        static const struct option options[] = { { "help", no_argument, NULL, 'h' },
                                                 { "message", required_argument, NULL, 'm' },
                                                 {} };
        const char *comment = NULL;
        int c;
        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":hm:", options, NULL)) != -1) {
                if (c == 'h')
                        return cli_usage_print(approvals_decide_usage);
                if (c == 'm')
                        comment = optarg;
                else
                        return cli_usage_option_error(approvals_decide_usage, c, argv);
        }
        if (optind + 1 != argc)
                return cli_usage_error(approvals_decide_usage, "give one approval ID");
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_json_ json_t *body = json_object(), *answer = NULL;
        if (!body)
                return CLI_EXIT_FAILURE;
        if (comment)
                json_object_set_new(body, "comment", json_string(comment));
        http_path_init(&path, "/v1/approvals");
        http_path_segment(&path, argv[optind]);
        http_path_segment(&path, verb);
        if (cli_request(cli, "POST", &path, body, CLI_REQUEST_TIMEOUT_S, NULL, &answer) < 0)
                return CLI_EXIT_FAILURE;
        if (cli->json)
                return cli_output_exit(cli_output_json(answer));
        printf("%s %s: command %s\n", cli_output_string(answer, "id"), cli_output_string(answer, "state"),
               cli_output_string(answer, "command_id"));
        return CLI_EXIT_OK;
}

static int cli_approvals_approve(struct cli *cli, int argc, char **argv)
{
        return decide(cli, argc, argv, "approve");
}

static int cli_approvals_deny(struct cli *cli, int argc, char **argv)
{
        return decide(cli, argc, argv, "deny");
}

int cli_approvals_main(struct cli *cli, int argc, char **argv)
{
        static const struct cli_verb verbs[] = {
                { "ls", cli_approvals_ls },
                { "approve", cli_approvals_approve },
                { "deny", cli_approvals_deny },
        };
        return cli_verb_dispatch(cli, verbs, ARRAY_SIZE(verbs), argc, argv, approvals_usage);
}
