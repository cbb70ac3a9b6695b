/* cli_operation: the operations a lifecycle request starts — `space op` and the shared
 * wait-or-not handling of lifecycle verbs (sandbox create/stop/..., template build). */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "cli/cli.h"
#include "cli/http_path.h"

/* How long a lifecycle verb asks spaced to wait (the API's maximum). */
#define CLI_OPERATION_WAIT_S 600L

/* Sends a lifecycle request. With wait, adds ?wait=true&timeout_s=CLI_OPERATION_WAIT_S and
 * treats an operation still running when the wait ends as a failure. Returns 0 and the answer
 * ({"operation": ..., <resource>: ...}), or -errno after printing why. */
int cli_operation_submit(struct cli *cli, const char *method, struct http_path *path, const json_t *body, bool wait,
                         json_t **ret_answer);

/* Prints a lifecycle answer: the JSON with --json; else the operation id without wait, or
 * the state of answer[resource] after the wait (the operation's state if that is missing). */
int cli_operation_print(const struct cli *cli, const json_t *answer, bool wait, const char *resource);

/* `space op wait ID` and `space op cancel ID` (cli_operation_wait.c). */
int cli_operation_wait(struct cli *cli, int argc, char **argv);
int cli_operation_cancel(struct cli *cli, int argc, char **argv);
