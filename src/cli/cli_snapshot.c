/* cli_snapshot: `space snapshot create|ls|get|rm` — point-in-time copies of a sandbox.
 * export and import live in cli_transfer.c. */
#include <getopt.h>
#include <stdio.h>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "cli/cli_collection.h"
#include "cli/cli_operation.h"
#include "cli/cli_output.h"
#include "cli/cli_request.h"
#include "cli/cli_sandbox_id.h"
#include "cli/cli_usage.h"
#include "cli/cli_verb.h"

static const char snapshot_usage[] =
        "usage: space snapshot COMMAND [ARGS...]\n"
        "\n"
        "Commands:\n"
        "  create ID [--label L] [--memory] [--no-wait]  snapshot a sandbox, print the snapshot id\n"
        "  ls [ID]                                      list snapshots (of sandbox ID), oldest first\n"
        "  get SNAP                                     show one snapshot\n"
        "  rm SNAP                                      delete a snapshot\n"
        "  export SNAP [--full] [--parent P] [-o FILE]  write it as a btrfs send stream\n"
        "  import [--sandbox ID] [--label L] [--parent P] [-i FILE]\n"
        "                                               add a snapshot from such a stream\n"
        "\n"
        "'space restore' and 'space fork' use snapshots; 'space sandbox create --snapshot SNAP'\n"
        "starts a sandbox from one.\n";

static const char snapshot_create_usage[] =
        "usage: space snapshot create ID [--label L] [--memory] [--no-wait]\n"
        "\n"
        "  --label L   a note to find it by (at most 127 bytes)\n"
        "  --memory    also save the processes' memory (only where 'space capabilities' says\n"
        "              memory_snapshot: true; otherwise spaced refuses with 'unsupported')\n"
        "  --no-wait   return once the snapshot is being taken\n"
        "\n"
        "The sandbox must be running, paused or stopped; a running one is frozen while its\n"
        "filesystem is copied. Prints the new snapshot's id (with --json, the API's answer).\n";

static const char snapshot_ls_usage[] = "usage: space snapshot ls [ID]\n";
static const char snapshot_get_usage[] = "usage: space snapshot get SNAP\n";
static const char snapshot_rm_usage[] =
        "usage: space snapshot rm SNAP\n"
        "\n"
        "Refused while the snapshot is being taken or a restore or fork still needs it.\n";

static const struct cli_output_column snapshot_columns[] = {
        { "ID", "id", CLI_CELL_TEXT, 0 },
        { "SANDBOX", "sandbox_id", CLI_CELL_TEXT, 0 },
        { "STATE", "state", CLI_CELL_TEXT, 0 },
        { "LABEL", "label", CLI_CELL_TEXT, 20 },
        { "PAUSE_MS", "pause_ms", CLI_CELL_TEXT, 0 },
        { "CREATED", "created_at", CLI_CELL_AGE, 0 },
};

static void cli_snapshot_path(struct http_path *path, const char *id)
{
        http_path_init(path, "/v1/snapshots");
        if (id)
                http_path_segment(path, id);
}

static int cli_snapshot_create(struct cli *cli, int argc, char **argv)
{
        enum { OPT_LABEL = 256, OPT_MEMORY, OPT_NO_WAIT };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "label", required_argument, NULL, OPT_LABEL },
                { "memory", no_argument, NULL, OPT_MEMORY },
                { "no-wait", no_argument, NULL, OPT_NO_WAIT },
                {},
        };
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_json_ json_t *answer = NULL;
        _cleanup_json_ json_t *body = json_object();
        bool no_wait = false;
        int c;

        if (!body)
                return cli_output_exit(-ENOMEM);

        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
                switch (c) {
                case 'h':
                        return cli_usage_print(snapshot_create_usage);
                case OPT_LABEL:
                        if (json_object_set_new(body, "label", json_string(optarg)) < 0)
                                return cli_usage_error(snapshot_create_usage, "--label must be UTF-8");
                        break;
                case OPT_MEMORY:
                        if (json_object_set_new(body, "memory", json_true()) < 0)
                                return cli_output_exit(-ENOMEM);
                        break;
                case OPT_NO_WAIT:
                        no_wait = true;
                        break;
                default:
                        return cli_usage_option_error(snapshot_create_usage, c, argv);
                }
        }
        if (optind >= argc)
                return cli_usage_error(snapshot_create_usage, "missing sandbox id");
        if (optind + 1 < argc)
                return cli_usage_error(snapshot_create_usage, "unexpected argument '%s'", argv[optind + 1]);

        if (cli_sandbox_id_resolve(cli, &argv[optind]) < 0)
                return CLI_EXIT_FAILURE;
        http_path_init(&path, "/v1/sandboxes");
        http_path_segment(&path, argv[optind]);
        http_path_segment(&path, "snapshots");
        if (cli_operation_submit(cli, "POST", &path, body, !no_wait, &answer) < 0)
                return CLI_EXIT_FAILURE;
        if (cli->json)
                return cli_output_exit(cli_output_json(answer));

        const char *id = cli_output_string(answer, "snapshot.id");
        if (!id)
                id = cli_output_string(answer, "operation.result.snapshot_id");
        if (!id)
                return cli_output_exit(-EBADMSG);
        printf("%s\n", id);
        return CLI_EXIT_OK;
}

static int cli_snapshot_ls(struct cli *cli, int argc, char **argv)
{
        _cleanup_http_path_ struct http_path path = {};

        int r = cli_args_positional(argc, argv, snapshot_ls_usage, 0, 1, NULL);
        if (r != CLI_CONTINUE)
                return r;
        if (optind < argc) {
                if (cli_sandbox_id_resolve(cli, &argv[optind]) < 0)
                        return CLI_EXIT_FAILURE;
                http_path_init(&path, "/v1/sandboxes");
                http_path_segment(&path, argv[optind]);
                http_path_segment(&path, "snapshots");
        } else
                cli_snapshot_path(&path, NULL);
        return cli_collection_list(cli, &path, "snapshots", snapshot_columns, ARRAY_SIZE(snapshot_columns));
}

static int cli_snapshot_get(struct cli *cli, int argc, char **argv)
{
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_json_ json_t *answer = NULL;

        int r = cli_args_simple(argc, argv, snapshot_get_usage, 1, NULL);
        if (r != CLI_CONTINUE)
                return r;
        cli_snapshot_path(&path, argv[optind]);
        if (cli_request(cli, "GET", &path, NULL, CLI_REQUEST_TIMEOUT_S, NULL, &answer) < 0)
                return CLI_EXIT_FAILURE;
        return cli_output_show(cli->json, answer);
}

static int cli_snapshot_rm(struct cli *cli, int argc, char **argv)
{
        _cleanup_http_path_ struct http_path path = {};

        int r = cli_args_simple(argc, argv, snapshot_rm_usage, 1, NULL);
        if (r != CLI_CONTINUE)
                return r;
        cli_snapshot_path(&path, argv[optind]);
        return cli_collection_delete(cli, &path, argv[optind]);
}

int cli_snapshot_main(struct cli *cli, int argc, char **argv)
{
        static const struct cli_verb verbs[] = {
                { "create", cli_snapshot_create }, { "ls", cli_snapshot_ls },         { "get", cli_snapshot_get },
                { "rm", cli_snapshot_rm },         { "export", cli_transfer_export }, { "import", cli_transfer_import },
        };
        return cli_verb_dispatch(cli, verbs, ARRAY_SIZE(verbs), argc, argv, snapshot_usage);
}
