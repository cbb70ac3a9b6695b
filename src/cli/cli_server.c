/* cli_server: `space health`, `space version` and `space capabilities` — questions about
 * spaced itself. */
#include <stdio.h>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "cli/cli_output.h"
#include "cli/cli_request.h"

static const char server_health_usage[] =
        "usage: space health\n"
        "\n"
        "Asks spaced whether it is up (needs no API key). Prints its status, e.g. \"ok\".\n";

static const char server_version_usage[] =
        "usage: space version\n"
        "\n"
        "Prints the versions of this client and of spaced, with spaced's runtime and cgroup mode.\n";

static const char server_capabilities_usage[] =
        "usage: space capabilities\n"
        "\n"
        "Prints spaced's runtime and what it can do on this host: pause, filesystem_snapshot,\n"
        "memory_snapshot (for 'space snapshot create --memory'), restore, fork.\n";

static int cli_server_get(struct cli *cli, const char *route, json_t **ret_answer)
{
        _cleanup_http_path_ struct http_path path = {};

        http_path_init(&path, route);
        return cli_request(cli, "GET", &path, NULL, CLI_REQUEST_TIMEOUT_S, NULL, ret_answer);
}

int cli_server_health(struct cli *cli, int argc, char **argv)
{
        _cleanup_json_ json_t *answer = NULL;

        int r = cli_args_simple(argc, argv, server_health_usage, 0, NULL);
        if (r != CLI_CONTINUE)
                return r;
        if (cli_server_get(cli, "/v1/health", &answer) < 0)
                return CLI_EXIT_FAILURE;
        if (cli->json)
                return cli_output_exit(cli_output_json(answer));

        const char *status = cli_output_string(answer, "status");
        if (!status)
                return cli_output_exit(-EBADMSG);
        printf("%s\n", status);
        return CLI_EXIT_OK;
}

int cli_server_version(struct cli *cli, int argc, char **argv)
{
        _cleanup_json_ json_t *answer = NULL;
        _cleanup_json_ json_t *shown = NULL;

        int r = cli_args_simple(argc, argv, server_version_usage, 0, NULL);
        if (r != CLI_CONTINUE)
                return r;
        if (cli_server_get(cli, "/v1/version", &answer) < 0)
                return CLI_EXIT_FAILURE;
        if (cli->json)
                return cli_output_exit(cli_output_json(answer));
        if (!json_is_object(answer))
                return cli_output_exit(-EBADMSG);

        /* client, server, then whatever else spaced reports (api, runtime, cgroup, ...). */
        shown = json_pack("{s:s, s:O?}", "client", SPACE_VERSION, "server", json_object_get(answer, "version"));
        if (!shown)
                return cli_output_exit(-ENOMEM);
        const char *key;
        json_t *value;
        json_object_foreach(answer, key, value) if (!cli_streq(key, "version") &&
                                                    json_object_set(shown, key, value) < 0) return cli_output_exit(-ENOMEM);
        return cli_output_exit(cli_output_object(shown));
}

int cli_server_capabilities(struct cli *cli, int argc, char **argv)
{
        _cleanup_json_ json_t *answer = NULL;

        int r = cli_args_simple(argc, argv, server_capabilities_usage, 0, NULL);
        if (r != CLI_CONTINUE)
                return r;
        if (cli_server_get(cli, "/v1/capabilities", &answer) < 0)
                return CLI_EXIT_FAILURE;
        return cli_output_show(cli->json, answer);
}
