#include "cli/cli_collection.h"

#include <stdio.h>

#include "cleanup.h"
#include "cli/cli_request.h"

int cli_collection_list(struct cli *cli, const struct http_path *path, const char *member,
                        const struct cli_output_column *columns, size_t n_columns)
{
        _cleanup_json_ json_t *answer = NULL;
        if (cli_request_list(cli, path, member, &answer) < 0)
                return CLI_EXIT_FAILURE;
        return cli_output_show_list(cli->json, answer, member, columns, n_columns);
}

int cli_collection_delete(struct cli *cli, const struct http_path *path, const char *shown_id)
{
        _cleanup_json_ json_t *answer = NULL;
        if (cli_request(cli, "DELETE", path, NULL, CLI_REQUEST_TIMEOUT_S, NULL, &answer) < 0)
                return CLI_EXIT_FAILURE;
        if (cli->json)
                return cli_output_exit(cli_output_json(answer));
        printf("%s\n", shown_id);
        return CLI_EXIT_OK;
}
