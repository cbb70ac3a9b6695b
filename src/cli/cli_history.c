/* cli_history: `space restore` and `space fork` — taking a sandbox back to one of its
 * snapshots, or branching new sandboxes off one. */
#include <getopt.h>
#include <stdio.h>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "cli/cli_operation.h"
#include "cli/cli_output.h"
#include "cli/cli_request.h"
#include "cli/cli_sandbox_id.h"
#include "cli/cli_usage.h"

/* Only the syntax is checked here; spaced answers a count out of its range (1-16). */
#define CLI_HISTORY_COUNT_MAX (1LL << 20)

static const char history_restore_usage[] =
        "usage: space restore ID SNAP [--no-wait]\n"
        "\n"
        "Puts sandbox ID's filesystem back to snapshot SNAP (one of its own: see\n"
        "'space snapshot ls ID'). A running or paused sandbox is restarted on it (its processes\n"
        "end), a stopped one stays stopped. Waits (up to 600 s) and prints the sandbox's new\n"
        "state; with --no-wait prints the operation id at once.\n";

static const char history_fork_usage[] =
        "usage: space fork ID [--count N] [--snapshot SNAP] [--meta K=V]... [--no-wait]\n"
        "\n"
        "  --count N        how many sandboxes to make (1-16, default 1)\n"
        "  --snapshot SNAP  start them from this snapshot of ID (default: take one now,\n"
        "                   labelled \"fork\")\n"
        "  --meta K=V       metadata of the new sandboxes (repeatable; replaces the parent's,\n"
        "                   which they copy when no --meta is given)\n"
        "  --no-wait        return once the sandboxes are being made\n"
        "\n"
        "The new sandboxes copy ID's template, resources, env and timeout, and run on a copy\n"
        "of the snapshot. Prints their ids, one per line (with --json, the API's answer).\n";

static void cli_history_path(struct http_path *path, const char *id, const char *action)
{
        http_path_init(path, "/v1/sandboxes");
        http_path_segment(path, id);
        http_path_segment(path, action);
}

int cli_history_restore(struct cli *cli, int argc, char **argv)
{
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_json_ json_t *answer = NULL;
        _cleanup_json_ json_t *body = NULL;
        bool no_wait = false;

        int r = cli_args_simple(argc, argv, history_restore_usage, 2, &no_wait);
        if (r != CLI_CONTINUE)
                return r;
        body = json_pack("{s:s}", "snapshot_id", argv[optind + 1]);
        if (!body)
                return cli_usage_error(history_restore_usage, "the snapshot id must be UTF-8");

        if (cli_sandbox_id_resolve(cli, &argv[optind]) < 0)
                return CLI_EXIT_FAILURE;
        cli_history_path(&path, argv[optind], "restore");
        if (cli_operation_submit(cli, "POST", &path, body, !no_wait, &answer) < 0)
                return CLI_EXIT_FAILURE;
        return cli_output_exit(cli_operation_print(cli, answer, !no_wait, "sandbox"));
}

/* The new sandboxes' ids, one per line: from the sandboxes in the answer, else from the
 * operation's result. */
static int cli_history_fork_print(const json_t *answer)
{
        json_t *sandboxes = json_object_get(answer, "sandboxes");
        json_t *ids = cli_output_lookup(answer, "operation.result.sandbox_ids");
        size_t i;
        json_t *item;

        if (json_array_size(sandboxes) > 0) {
                json_array_foreach(sandboxes, i, item) if (!json_is_string(json_object_get(item, "id"))) return -EBADMSG;
                json_array_foreach(sandboxes, i, item) printf("%s\n", json_string_value(json_object_get(item, "id")));
                return 0;
        }
        if (json_array_size(ids) == 0)
                return -EBADMSG;
        json_array_foreach(ids, i, item) if (!json_is_string(item)) return -EBADMSG;
        json_array_foreach(ids, i, item) printf("%s\n", json_string_value(item));
        return 0;
}

int cli_history_fork(struct cli *cli, int argc, char **argv)
{
        enum { OPT_COUNT = 256, OPT_SNAPSHOT, OPT_META, OPT_NO_WAIT };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "count", required_argument, NULL, OPT_COUNT },
                { "snapshot", required_argument, NULL, OPT_SNAPSHOT },
                { "meta", required_argument, NULL, OPT_META },
                { "no-wait", no_argument, NULL, OPT_NO_WAIT },
                {},
        };
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_json_ json_t *answer = NULL;
        _cleanup_json_ json_t *body = json_object();
        _cleanup_json_ json_t *metadata = json_object();
        bool no_wait = false;
        long long count;
        int c;

        if (!body || !metadata)
                return cli_output_exit(-ENOMEM);

        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
                switch (c) {
                case 'h':
                        return cli_usage_print(history_fork_usage);
                case OPT_COUNT:
                        if (cli_args_integer(optarg, 0, CLI_HISTORY_COUNT_MAX, &count) < 0)
                                return cli_usage_error(history_fork_usage, "--count needs a whole number, not '%s'", optarg);
                        if (json_object_set_new(body, "count", json_integer(count)) < 0)
                                return cli_output_exit(-ENOMEM);
                        break;
                case OPT_SNAPSHOT:
                        if (json_object_set_new(body, "snapshot_id", json_string(optarg)) < 0)
                                return cli_usage_error(history_fork_usage, "--snapshot must be UTF-8");
                        break;
                case OPT_META:
                        if (cli_args_pair(metadata, optarg) < 0)
                                return cli_usage_error(history_fork_usage, "--meta needs KEY=VALUE in UTF-8, not '%s'", optarg);
                        break;
                case OPT_NO_WAIT:
                        no_wait = true;
                        break;
                default:
                        return cli_usage_option_error(history_fork_usage, c, argv);
                }
        }
        if (optind >= argc)
                return cli_usage_error(history_fork_usage, "missing sandbox id");
        if (optind + 1 < argc)
                return cli_usage_error(history_fork_usage, "unexpected argument '%s'", argv[optind + 1]);
        /* No --meta: leave metadata out, so the new sandboxes copy the parent's. */
        if (json_object_size(metadata) > 0 && json_object_set(body, "metadata", metadata) < 0)
                return cli_output_exit(-ENOMEM);

        if (cli_sandbox_id_resolve(cli, &argv[optind]) < 0)
                return CLI_EXIT_FAILURE;
        cli_history_path(&path, argv[optind], "fork");
        if (cli_operation_submit(cli, "POST", &path, body, !no_wait, &answer) < 0)
                return CLI_EXIT_FAILURE;
        if (cli->json)
                return cli_output_exit(cli_output_json(answer));
        return cli_output_exit(cli_history_fork_print(answer));
}
