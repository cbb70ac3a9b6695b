/* cli: one invocation of the space command — the global settings every verb shares, and
 * the entry point of each top-level command.
 *
 * Verb functions take (cli, argc, argv) with argv[0] naming the verb and return the process
 * exit status: CLI_EXIT_OK, CLI_EXIT_FAILURE (the API or the transport failed; the reason is
 * already on stderr), CLI_EXIT_USAGE, or — for exec — the remote command's exit code.
 * Argument parsers return CLI_CONTINUE when the verb should go on. */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "cleanup.h"

enum {
        CLI_CONTINUE = -1,
        CLI_EXIT_OK = 0,
        CLI_EXIT_FAILURE = 1,
        CLI_EXIT_USAGE = 2,
};

struct http_client;

struct cli {
        char *url;                /* base URL of spaced, without a trailing '/' */
        char *key_flag;           /* --key value; a secret, wiped on exit */
        bool json;                /* --json: print the API's answer as JSON */
        bool have_key;            /* an API key was found (for the 401 hint) */
        bool retry;               /* ride out a restart of spaced (cli_retry.h) */
        struct http_client *http; /* made on the first request */
};

static inline bool cli_streq(const char *a, const char *b)
{
        return strcmp(a, b) == 0;
}

int cli_server_health(struct cli *cli, int argc, char **argv);
int cli_server_version(struct cli *cli, int argc, char **argv);
int cli_template_main(struct cli *cli, int argc, char **argv);
int cli_sandbox_main(struct cli *cli, int argc, char **argv);
int cli_exec_main(struct cli *cli, int argc, char **argv);
int cli_operation_main(struct cli *cli, int argc, char **argv);
int cli_key_main(struct cli *cli, int argc, char **argv);
int cli_project_main(struct cli *cli, int argc, char **argv);
int cli_node_main(struct cli *cli, int argc, char **argv);
int cli_audit_main(struct cli *cli, int argc, char **argv);
int cli_policy_main(struct cli *cli, int argc, char **argv);
int cli_secret_main(struct cli *cli, int argc, char **argv);
int cli_grant_main(struct cli *cli, int argc, char **argv);
int cli_approvals_main(struct cli *cli, int argc, char **argv);
int cli_network_main(struct cli *cli, int argc, char **argv);
int cli_snapshot_main(struct cli *cli, int argc, char **argv);
int cli_transfer_export(struct cli *cli, int argc, char **argv);
int cli_transfer_import(struct cli *cli, int argc, char **argv);
int cli_settings_set(struct cli *cli, int argc, char **argv);
int cli_history_restore(struct cli *cli, int argc, char **argv);
int cli_history_fork(struct cli *cli, int argc, char **argv);
int cli_server_capabilities(struct cli *cli, int argc, char **argv);
int cli_cp_main(struct cli *cli, int argc, char **argv);
int cli_logs_main(struct cli *cli, int argc, char **argv);
int cli_ps_main(struct cli *cli, int argc, char **argv);
int cli_inspect_main(struct cli *cli, int argc, char **argv);
int cli_stats_main(struct cli *cli, int argc, char **argv);
int cli_attach_main(struct cli *cli, int argc, char **argv);
