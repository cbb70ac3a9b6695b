/* cli_network: `space network get|set|profiles` — a sandbox's egress rules, changed while
 * it runs (docs/network.md), and the profiles of the server — plus the rule lists of
 * `space sandbox create --egress P --allow H --deny H`. */
#include <getopt.h>
#include <stdio.h>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "cli/cli_network.h"
#include "cli/cli_output.h"
#include "cli/cli_request.h"
#include "cli/cli_sandbox_id.h"
#include "cli/cli_usage.h"
#include "cli/cli_verb.h"

static const char network_usage[] =
        "usage: space network COMMAND [ARGS...]\n"
        "\n"
        "Commands:\n"
        "  get ID                          a sandbox's egress profile and its own rules\n"
        "  set ID [--profile P] [--allow H]... [--deny H]...\n"
        "                                  replace its own rules, running or not (they can only\n"
        "                                  narrow its profile; open connections they deny close)\n"
        "  profiles                        the egress profiles of the server\n"
        "\n"
        "A rule H is NAME[:PORT] (pypi.org, *.pypi.org:443) or A.B.C.D[/N][:PORT].\n";
static const char network_get_usage[] = "usage: space network get ID\n";
static const char network_set_usage[] =
        "usage: space network set ID [--profile P] [--allow H]... [--deny H]...\n"
        "\n"
        "The lists given replace the sandbox's; with neither, it has no rules of its own\n"
        "(its profile alone decides). --profile gives it another profile: that needs the\n"
        "permission network.profile (admin), and a stopped sandbox to or from none.\n";
static const char network_profiles_usage[] = "usage: space network profiles\n";

static const struct cli_output_column profile_columns[] = {
        { "NAME", "name", CLI_CELL_TEXT, 0 },
        { "DEFAULT", "default", CLI_CELL_TEXT, 0 },
        { "RULES", "rules", CLI_CELL_TEXT, 80 },
};

int cli_network_rule_add(json_t *network, const char *list, const char *rule)
{
        json_t *l = json_object_get(network, list);
        if (!l) {
                l = json_array();
                if (!l || json_object_set_new(network, list, l) < 0)
                        return -1;
        }
        json_t *s = json_string(rule);
        return s && json_array_append_new(l, s) == 0 ? 0 : -1;
}

static void network_path(struct http_path *path, const char *id)
{
        http_path_init(path, "/v1/sandboxes");
        http_path_segment(path, id);
        http_path_segment(path, "network");
}

static int cli_network_get(struct cli *cli, int argc, char **argv)
{
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_json_ json_t *answer = NULL;

        int r = cli_args_simple(argc, argv, network_get_usage, 1, NULL);
        if (r != CLI_CONTINUE)
                return r;
        if (cli_sandbox_id_resolve(cli, &argv[optind]) < 0)
                return CLI_EXIT_FAILURE;
        network_path(&path, argv[optind]);
        if (cli_request(cli, "GET", &path, NULL, CLI_REQUEST_TIMEOUT_S, NULL, &answer) < 0)
                return CLI_EXIT_FAILURE;
        return cli_output_show(cli->json, answer);
}

static int cli_network_set(struct cli *cli, int argc, char **argv)
{
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "allow", required_argument, NULL, 'a' },
                { "deny", required_argument, NULL, 'd' },
                { "profile", required_argument, NULL, 'p' },
                {},
        };
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_json_ json_t *answer = NULL;
        _cleanup_json_ json_t *body = json_pack("{s:[], s:[]}", "allow", "deny");
        int c;

        if (!body)
                return cli_output_exit(-ENOMEM);
        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
                if (c == 'h')
                        return cli_usage_print(network_set_usage);
                if (c == '?' || c == ':')
                        return cli_usage_option_error(network_set_usage, c, argv);
                if (c == 'p') {
                        if (json_object_set_new(body, "profile", json_string(optarg)) < 0)
                                return cli_usage_error(network_set_usage, "invalid profile '%s' (not UTF-8?)", optarg);
                        continue;
                }
                if (cli_network_rule_add(body, c == 'a' ? "allow" : "deny", optarg) < 0)
                        return cli_usage_error(network_set_usage, "invalid rule '%s' (not UTF-8?)", optarg);
        }
        if (optind + 1 != argc)
                return cli_usage_error(network_set_usage, optind < argc ? "unexpected argument '%s'" : "missing sandbox id",
                                       optind < argc ? argv[optind + 1] : "");
        if (cli_sandbox_id_resolve(cli, &argv[optind]) < 0)
                return CLI_EXIT_FAILURE;
        network_path(&path, argv[optind]);
        if (cli_request(cli, "PUT", &path, body, CLI_REQUEST_TIMEOUT_S, NULL, &answer) < 0)
                return CLI_EXIT_FAILURE;
        return cli_output_show(cli->json, answer);
}

static int cli_network_profiles(struct cli *cli, int argc, char **argv)
{
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_json_ json_t *answer = NULL;

        int r = cli_args_simple(argc, argv, network_profiles_usage, 0, NULL);
        if (r != CLI_CONTINUE)
                return r;
        http_path_init(&path, "/v1/egress-profiles");
        if (cli_request(cli, "GET", &path, NULL, CLI_REQUEST_TIMEOUT_S, NULL, &answer) < 0)
                return CLI_EXIT_FAILURE;
        return cli_output_show_list(cli->json, answer, "profiles", profile_columns, ARRAY_SIZE(profile_columns));
}

int cli_network_main(struct cli *cli, int argc, char **argv)
{
        static const struct cli_verb verbs[] = {
                { "get", cli_network_get },
                { "set", cli_network_set },
                { "profiles", cli_network_profiles },
        };
        return cli_verb_dispatch(cli, verbs, ARRAY_SIZE(verbs), argc, argv, network_usage);
}
