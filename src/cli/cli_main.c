/* cli_main: `space` — global flags, then dispatch to the command. */
#include <curl/curl.h>
#include <getopt.h>
#include <stdio.h>

#include "cli/cli.h"
#include "cli/cli_config.h"
#include "cli/cli_usage.h"
#include "cli/cli_verb.h"
#include "cli/http_client.h"

static const char main_usage[] =
        "usage: space [--url URL] [--key KEY] [--json] COMMAND [ARGS...]\n"
        "\n"
        "The command-line client of spaced.\n"
        "\n"
        "Commands:\n"
        "  health                          is spaced up?\n"
        "  version                         client and server versions\n"
        "  capabilities                    what spaced's runtime can do here\n"
        "  template ls|get|build|rm        templates sandboxes are made from\n"
        "  sandbox create|ls|get|set|stop|start|pause|resume|rm\n"
        "  ps [-q] [-o json|wide] [--filter K=V]  the sandboxes (sandbox ls)\n"
        "  inspect ID...                   sandboxes, snapshots, operations as JSON\n"
        "  exec ID -- CMD [ARGS...]        run a command in a sandbox\n"
        "  logs [-f] ID CMD                a streamed command's output (-f: as it comes)\n"
        "  attach [-i] ID CMD              back at a streamed command's side, to its exit\n"
        "  cp SRC DST                      copy a file to or from a sandbox (ID:/path)\n"
        "  snapshot create|ls|get|rm|export|import\n"
        "                                  point-in-time copies of sandboxes, and moving them\n"
        "  stats [ID...]                   CPU, memory and disk use of running sandboxes\n"
        "  restore ID SNAP                 put a sandbox back to one of its snapshots\n"
        "  fork ID [--count N]             new sandboxes from a snapshot of ID\n"
        "  op get|ls                       operations (lifecycle changes)\n"
        "  key create|ls|rm                API keys (of a project, with a role)\n"
        "  project create|ls               projects: the tenants keys and objects belong to\n"
        "  node ls                         the nodes of the fleet sharing the database (admin)\n"
        "  audit [--since T] [--action A]  the audit log (mutating and refused calls)\n"
        "  policy ls|get|apply|rm|test     policies the platform enforces (docs/governance.md)\n"
        "  approvals ls|approve|deny       commands a policy holds until a person decides\n"
        "  secret create|ls|rm|bind|bindings|unbind  platform-held secrets (docs/network.md)\n"
        "  grant create|ls|rm              a binding on one sandbox for a bounded time\n"
        "  network get|set|profiles        a sandbox's egress rules, the server's egress profiles\n"
        "\n"
        "Flags:\n"
        "  --url URL    spaced's address ($SPACE_URL, default " CLI_CONFIG_DEFAULT_URL
        ");\n"
        "               unix:/PATH for its --unix-socket\n"
        "  --key KEY    API key ($SPACE_API_KEY, else $SPACE_STATE_DIR/admin.key,\n"
        "               default " CLI_CONFIG_DEFAULT_STATE_DIR "/" CLI_CONFIG_KEY_FILE
        ", if readable)\n"
        "  --json       print the API's JSON answers\n"
        "  -h, --help   this help; 'space COMMAND --help' for a command's\n"
        "  --version    print the client version\n"
        "\n"
        "Exit status: 0 success, 1 failure (API, connection), 2 usage error;\n"
        "exec and attach exit with the command's exit code.\n";

static void cli_done(struct cli *cli)
{
        cli->http = http_client_free(cli->http);
        free(cli->url);
        erase_and_free(cli->key_flag);
}

/* Parses the flags before the command. Returns CLI_CONTINUE or an exit status. */
static int cli_parse_globals(struct cli *cli, int argc, char **argv, const char **ret_url)
{
        enum { OPT_URL = 256, OPT_KEY, OPT_JSON, OPT_VERSION };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "url", required_argument, NULL, OPT_URL },
                { "key", required_argument, NULL, OPT_KEY },
                { "json", no_argument, NULL, OPT_JSON },
                { "version", no_argument, NULL, OPT_VERSION },
                {},
        };
        int c;

        optind = 0;
        opterr = 0;
        /* '+': stop at the command; its flags are its own. */
        while ((c = getopt_long(argc, argv, "+:h", options, NULL)) != -1) {
                switch (c) {
                case 'h':
                        return cli_usage_print(main_usage);
                case OPT_VERSION:
                        printf("space %s\n", SPACE_VERSION);
                        return CLI_EXIT_OK;
                case OPT_URL:
                        *ret_url = optarg;
                        break;
                case OPT_KEY:
                        erase_and_free(cli->key_flag);
                        cli->key_flag = strdup(optarg);
                        if (!cli->key_flag) {
                                fputs("space: out of memory\n", stderr);
                                return CLI_EXIT_FAILURE;
                        }
                        /* Keep the key out of /proc/PID/cmdline from here on. */
                        explicit_bzero(optarg, strlen(optarg));
                        break;
                case OPT_JSON:
                        cli->json = true;
                        break;
                default:
                        return cli_usage_option_error(main_usage, c, argv);
                }
        }
        if (optind >= argc) {
                fputs("space: missing command\n", stderr);
                fputs(main_usage, stderr);
                return CLI_EXIT_USAGE;
        }
        return CLI_CONTINUE;
}

/* `--json` is also accepted after the command (`space sandbox ls --json`, as kubectl users
 * type it): take it out of the command's arguments, up to a `--`. */
static void cli_take_trailing_json(struct cli *cli, int first, int *argc, char **argv)
{
        for (int i = first; i < *argc && strcmp(argv[i], "--") != 0;) {
                if (strcmp(argv[i], "--json") != 0) {
                        i++;
                        continue;
                }
                cli->json = true;
                memmove(&argv[i], &argv[i + 1], (size_t)(*argc - i) * sizeof(char *));
                (*argc)--;
        }
}

int main(int argc, char **argv)
{
        static const struct cli_verb verbs[] = {
                { "health", cli_server_health },
                { "version", cli_server_version },
                { "capabilities", cli_server_capabilities },
                { "template", cli_template_main },
                { "sandbox", cli_sandbox_main },
                { "ps", cli_ps_main },
                { "inspect", cli_inspect_main },
                { "stats", cli_stats_main },
                { "exec", cli_exec_main },
                { "cp", cli_cp_main },
                { "logs", cli_logs_main },
                { "attach", cli_attach_main },
                { "snapshot", cli_snapshot_main },
                { "restore", cli_history_restore },
                { "fork", cli_history_fork },
                { "op", cli_operation_main },
                { "operation", cli_operation_main },
                { "key", cli_key_main },
                { "project", cli_project_main },
                { "node", cli_node_main },
                { "audit", cli_audit_main },
                { "policy", cli_policy_main },
                { "approvals", cli_approvals_main },
                { "secret", cli_secret_main },
                { "grant", cli_grant_main },
                { "network", cli_network_main },
        };
        _cleanup_(cli_done) struct cli cli = {};
        const char *url = NULL;

        int r = cli_parse_globals(&cli, argc, argv, &url);
        if (r != CLI_CONTINUE)
                return r;
        cli_take_trailing_json(&cli, optind, &argc, argv);

        r = cli_config_url(url, &cli.url);
        if (r == -EINVAL)
                return cli_usage_error(main_usage, "the spaced URL must start with http://, https:// or unix:/ (a socket path)");
        if (r < 0) {
                fputs("space: out of memory\n", stderr);
                return CLI_EXIT_FAILURE;
        }

        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
                fputs("space: cannot initialise libcurl\n", stderr);
                return CLI_EXIT_FAILURE;
        }

        /* argv[optind - 1] stands in for the program: the dispatcher reads the command at [1]. */
        r = cli_verb_dispatch(&cli, verbs, ARRAY_SIZE(verbs), argc - optind + 1, argv + optind - 1, main_usage);

        cli.http = http_client_free(cli.http);
        curl_global_cleanup();

        if (fflush(stdout) != 0 || ferror(stdout)) {
                fprintf(stderr, "space: cannot write output: %m\n");
                return CLI_EXIT_FAILURE;
        }
        return r;
}
