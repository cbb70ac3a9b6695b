/* cli_operation: `space op get|ls` and lifecycle request handling (wait, cancel:
 * cli_operation_wait.c). */
#include "cli/cli_operation.h"

#include <getopt.h>
#include <stdio.h>

#include "cli/cli_args.h"
#include "cli/cli_output.h"
#include "cli/cli_request.h"
#include "cli/cli_usage.h"
#include "cli/cli_verb.h"

static const char operation_usage[] =
        "usage: space op COMMAND [ARGS...]\n"
        "\n"
        "Commands:\n"
        "  get ID                       show one operation\n"
        "  ls [--target ID] [--state S] list operations, newest first\n"
        "  wait [--timeout S] ID        wait for it to end (Ctrl-C leaves it running)\n"
        "  cancel ID                    stop it (a template build)\n";

static const char operation_get_usage[] = "usage: space op get ID\n";

static const char operation_ls_usage[] = "usage: space op ls [--target ID] [--state pending|running|succeeded|failed]\n";

static const struct cli_output_column operation_columns[] = {
        { "ID", "id", CLI_CELL_TEXT, 0 },
        { "KIND", "kind", CLI_CELL_TEXT, 0 },
        { "TARGET", "target", CLI_CELL_TEXT, 0 },
        { "STATE", "state", CLI_CELL_TEXT, 0 },
        { "CREATED", "created_at", CLI_CELL_AGE, 0 },
};

int cli_operation_submit(struct cli *cli, const char *method, struct http_path *path, const json_t *body, bool wait,
                         json_t **ret_answer)
{
        _cleanup_json_ json_t *answer = NULL;
        long status = 0;

        if (wait) {
                char timeout[32];
                snprintf(timeout, sizeof(timeout), "%ld", CLI_OPERATION_WAIT_S);
                http_path_query(path, "wait", "true");
                http_path_query(path, "timeout_s", timeout);
        }

        /* Give spaced the whole wait plus time to answer before giving up on it. */
        long timeout_s = wait ? CLI_OPERATION_WAIT_S + CLI_REQUEST_TIMEOUT_S : CLI_REQUEST_TIMEOUT_S;
        int r = cli_request(cli, method, path, body, timeout_s, &status, &answer);
        if (r < 0)
                return r;

        const char *state = cli_output_string(answer, "operation.state");
        if (wait && status == 202 && state && (cli_streq(state, "pending") || cli_streq(state, "running"))) {
                const char *id = cli_output_string(answer, "operation.id");
                fprintf(stderr, "space: operation %s is still %s (waited up to %ld s); wait for it with 'space op wait %s'\n",
                        id ? id : "?", state, CLI_OPERATION_WAIT_S, id ? id : "ID");
                return -ETIMEDOUT;
        }

        *ret_answer = TAKE_PTR(answer);
        return 0;
}

int cli_operation_print(const struct cli *cli, const json_t *answer, bool wait, const char *resource)
{
        if (cli->json)
                return cli_output_json(answer);

        const char *text;
        if (!wait)
                text = cli_output_string(answer, "operation.id");
        else {
                text = json_string_value(json_object_get(json_object_get(answer, resource), "state"));
                if (!text)
                        text = cli_output_string(answer, "operation.state");
        }
        if (!text)
                return -EBADMSG;
        printf("%s\n", text);
        return 0;
}

static int cli_operation_get(struct cli *cli, int argc, char **argv)
{
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_json_ json_t *answer = NULL;

        int r = cli_args_simple(argc, argv, operation_get_usage, 1, NULL);
        if (r != CLI_CONTINUE)
                return r;

        http_path_init(&path, "/v1/operations");
        http_path_segment(&path, argv[optind]);
        if (cli_request(cli, "GET", &path, NULL, CLI_REQUEST_TIMEOUT_S, NULL, &answer) < 0)
                return CLI_EXIT_FAILURE;

        return cli_output_show(cli->json, answer);
}

static int cli_operation_ls(struct cli *cli, int argc, char **argv)
{
        enum { OPT_TARGET = 256, OPT_STATE };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "target", required_argument, NULL, OPT_TARGET },
                { "state", required_argument, NULL, OPT_STATE },
                {},
        };
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_json_ json_t *answer = NULL;
        int c;

        http_path_init(&path, "/v1/operations");
        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
                switch (c) {
                case 'h':
                        return cli_usage_print(operation_ls_usage);
                case OPT_TARGET:
                        http_path_query(&path, "target", optarg);
                        break;
                case OPT_STATE:
                        http_path_query(&path, "state", optarg);
                        break;
                default:
                        return cli_usage_option_error(operation_ls_usage, c, argv);
                }
        }
        if (optind < argc)
                return cli_usage_error(operation_ls_usage, "unexpected argument '%s'", argv[optind]);

        if (cli_request_list(cli, &path, "operations", &answer) < 0)
                return CLI_EXIT_FAILURE;

        return cli_output_show_list(cli->json, answer, "operations", operation_columns, ARRAY_SIZE(operation_columns));
}

int cli_operation_main(struct cli *cli, int argc, char **argv)
{
        static const struct cli_verb verbs[] = {
                { "get", cli_operation_get },
                { "ls", cli_operation_ls },
                { "wait", cli_operation_wait },
                { "cancel", cli_operation_cancel },
        };
        return cli_verb_dispatch(cli, verbs, ARRAY_SIZE(verbs), argc, argv, operation_usage);
}
