/* cli_operation_wait: `space op wait ID` and `space op cancel ID` — follow an operation to
 * its end (Ctrl-C stops the waiting, not the operation), or ask spaced to stop it. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "cli/cli_operation.h"
#include "cli/cli_output.h"
#include "cli/cli_request.h"
#include "cli/cli_usage.h"

#define OP_WAIT_MAX_S (7 * 86400LL)
#define OP_POLL_FIRST_MS 100
#define OP_POLL_MAX_MS 1000

static const char op_wait_usage[] =
        "usage: space op wait [--timeout S] ID\n"
        "\n"
        "Waits for the operation ID to end and prints its final state; exits 0 if it succeeded,\n"
        "1 if it failed (with its error) or --timeout S passed first. Ctrl-C stops the waiting and\n"
        "leaves the operation running (space op cancel ID stops a build).\n";

static const char op_cancel_usage[] =
        "usage: space op cancel ID\n"
        "\n"
        "Asks spaced to stop the operation ID (a pending or running template build) and prints its\n"
        "state; space op wait ID then follows it to its end.\n";

static volatile sig_atomic_t op_interrupted;

static void op_on_signal(int sig)
{
        op_interrupted = sig;
}

static bool op_ended(const char *state)
{
        return state && !cli_streq(state, "pending") && !cli_streq(state, "running");
}

/* Prints the end: the answer with --json, else the state and, when it failed, why. */
static int op_report(const struct cli *cli, const json_t *op)
{
        const char *state = cli_output_string(op, "state");
        if (cli->json)
                (void)cli_output_json(op);
        else
                printf("%s\n", state);
        if (cli_streq(state, "succeeded"))
                return CLI_EXIT_OK;
        const char *code = cli_output_string(op, "error.code"), *message = cli_output_string(op, "error.message");
        if (message || code)
                fprintf(stderr, "space: %s (%s)\n", message ? message : "the operation failed", code ? code : state);
        return CLI_EXIT_FAILURE;
}

int cli_operation_wait(struct cli *cli, int argc, char **argv)
{
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "timeout", required_argument, NULL, 't' },
                {},
        };
        _cleanup_http_path_ struct http_path path = {};
        long long timeout_s = OP_WAIT_MAX_S;
        int c;

        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
                if (c == 'h')
                        return cli_usage_print(op_wait_usage);
                if (c != 't')
                        return cli_usage_option_error(op_wait_usage, c, argv);
                if (cli_args_integer(optarg, 1, OP_WAIT_MAX_S, &timeout_s) < 0)
                        return cli_usage_error(op_wait_usage, "--timeout needs whole seconds from 1 to %lld", OP_WAIT_MAX_S);
        }
        if (argc - optind != 1)
                return cli_usage_error(op_wait_usage, "give one operation id");
        const char *id = argv[optind];

        struct sigaction sa = { .sa_handler = op_on_signal };
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        http_path_init(&path, "/v1/operations");
        http_path_segment(&path, id);
        struct timespec start;
        clock_gettime(CLOCK_MONOTONIC, &start);
        for (unsigned delay_ms = OP_POLL_FIRST_MS;;) {
                _cleanup_json_ json_t *op = NULL;
                if (cli_request(cli, "GET", &path, NULL, CLI_REQUEST_TIMEOUT_S, NULL, &op) < 0)
                        return CLI_EXIT_FAILURE;
                const char *state = cli_output_string(op, "state");
                if (!state)
                        return cli_output_exit(-EBADMSG);
                if (op_ended(state))
                        return op_report(cli, op);

                struct timespec now, ts = { delay_ms / 1000, (long)(delay_ms % 1000) * 1000000L };
                clock_gettime(CLOCK_MONOTONIC, &now);
                if (now.tv_sec - start.tv_sec >= timeout_s) {
                        fprintf(stderr, "space: operation %s is still %s after %lld s; it goes on (space op wait %s)\n", id,
                                state, timeout_s, id);
                        return CLI_EXIT_FAILURE;
                }
                if (!op_interrupted)
                        nanosleep(&ts, NULL); /* a signal cuts it short */
                if (op_interrupted) {
                        fprintf(stderr, "space: stopped waiting; operation %s goes on (space op wait %s, space op cancel %s)\n",
                                id, id, id);
                        return 128 + op_interrupted;
                }
                delay_ms = delay_ms * 2 > OP_POLL_MAX_MS ? OP_POLL_MAX_MS : delay_ms * 2;
        }
}

int cli_operation_cancel(struct cli *cli, int argc, char **argv)
{
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_json_ json_t *answer = NULL;

        int r = cli_args_simple(argc, argv, op_cancel_usage, 1, NULL);
        if (r != CLI_CONTINUE)
                return r;
        http_path_init(&path, "/v1/operations");
        http_path_segment(&path, argv[optind]);
        http_path_segment(&path, "cancel");
        if (cli_request(cli, "POST", &path, NULL, CLI_REQUEST_TIMEOUT_S, NULL, &answer) < 0)
                return CLI_EXIT_FAILURE;
        if (cli->json)
                return cli_output_exit(cli_output_json(answer));
        const char *state = cli_output_string(answer, "operation.state");
        if (!state)
                return cli_output_exit(-EBADMSG);
        printf("%s\n", state);
        return CLI_EXIT_OK;
}
