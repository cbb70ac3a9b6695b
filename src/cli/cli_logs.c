/* cli_logs: `space logs [-f] ID CMD` — the output a streamed command wrote, from its start,
 * byte for byte (stdout to stdout, stderr to stderr); with -f, followed to its end. */
#include <getopt.h>
#include <stdio.h>

#include "cli/cli.h"
#include "cli/cli_command_stream.h"
#include "cli/cli_sandbox_id.h"
#include "cli/cli_session.h"
#include "cli/cli_usage.h"

#define LOGS_SESSION_TTL_S 300
#define LOGS_FOLLOW_SESSION_TTL_S 604800

static const char logs_usage[] =
        "usage: space logs [-f] ID CMD\n"
        "\n"
        "Prints what the streamed command CMD (a cmd-... id) of the sandbox ID has written so far,\n"
        "from its start (what spaced still keeps of it), and exits 0. Reading it changes nothing:\n"
        "the command goes on. Signals to space are not passed on (use space attach for that).\n"
        "\n"
        "  -f, --follow  go on printing its output as it comes, until the command ends (a restart\n"
        "                of spaced is ridden out)\n";

int cli_logs_main(struct cli *cli, int argc, char **argv)
{
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "follow", no_argument, NULL, 'f' },
                {},
        };
        struct cli_session session;
        bool follow = false;
        int c;

        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":hf", options, NULL)) != -1) {
                if (c == 'h')
                        return cli_usage_print(logs_usage);
                if (c != 'f')
                        return cli_usage_option_error(logs_usage, c, argv);
                follow = true;
        }
        if (argc - optind != 2)
                return cli_usage_error(logs_usage, "give a sandbox id and a command id");
        if (cli_sandbox_id_resolve(cli, &argv[optind]) < 0)
                return CLI_EXIT_FAILURE;
        int r = cli_session_open(cli, argv[optind], follow ? LOGS_FOLLOW_SESSION_TTL_S : LOGS_SESSION_TTL_S, &session);
        if (r == 0) {
                session.data.retry = follow;
                struct cli_command_stream s = {
                        .data = &session.data,
                        .sandbox_id = argv[optind],
                        .command_id = argv[optind + 1],
                        .until_idle = !follow,
                };
                r = cli_command_stream_follow(&s);
        }
        cli_session_close(&session);
        return r < 0 ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
}
