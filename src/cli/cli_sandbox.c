/* cli_sandbox: `space sandbox create|get|stop|start|pause|resume|rm` (ls: cli_ps.c, set:
 * cli_settings.c). */
#include <getopt.h>
#include <stdio.h>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "cli/cli_network.h"
#include "cli/cli_operation.h"
#include "cli/cli_output.h"
#include "cli/cli_request.h"
#include "cli/cli_template_build.h"
#include "cli/cli_sandbox_id.h"
#include "cli/cli_usage.h"
#include "cli/cli_verb.h"

#define CLI_SANDBOX_NUMBER_MAX (1LL << 40)

static const char sandbox_usage[] =
        "usage: space sandbox COMMAND [ARGS...]\n"
        "\n"
        "Commands:\n"
        "  create [flags]                       make a sandbox and print its id\n"
        "  ls [-q] [-o json|wide] [--filter K=V]...  list sandboxes (also: space ps)\n"
        "  get ID                               show one sandbox\n"
        "  set ID [flags]                       change its metadata, timeout, rolling snapshots\n"
        "  stop|start|pause|resume ID [--no-wait]\n"
        "  rm ID [--no-wait]                    destroy a sandbox\n"
        "\n"
        "Lifecycle commands wait for their operation (up to 600 s) and print the sandbox's\n"
        "new state; with --no-wait they print the operation id at once.\n";

static const char sandbox_create_usage[] =
        "usage: space sandbox create [flags]\n"
        "\n"
        "  --template T          template to start from (spaced's default: busybox)\n"
        "  --snapshot SNAP       start from snapshot SNAP instead (its filesystem, and the\n"
        "                        template of the sandbox it was taken of)\n"
        "  --cpus N              CPUs, may be fractional (0.01-64)\n"
        "  --memory MB           memory limit in MiB (16-65536)\n"
        "  --pids N              process limit (16-65536)\n"
        "  --disk MB             disk limit in MiB (0 = unlimited)\n"
        "  --env K=V             environment variable for commands (repeatable)\n"
        "  --meta K=V            metadata label (repeatable)\n"
        "  --timeout S           seconds until --on-timeout applies (0 = never)\n"
        "  --on-timeout ACTION   pause, stop or destroy\n"
        "  --egress PROFILE      its egress profile (space network profiles; spaced's\n"
        "                        default: --egress-profile, none unless set)\n"
        "  --allow H, --deny H   its own egress rules, narrowing the profile (repeatable;\n"
        "                        NAME[:PORT], *.NAME, A.B.C.D[/N][:PORT])\n"
        "  --no-wait             return once the sandbox is being made\n"
        "\n"
        "Prints the new sandbox's id (with --json, the API's answer).\n";

static const char sandbox_get_usage[] = "usage: space sandbox get ID\n";
static const char sandbox_lifecycle_usage[] = "usage: space sandbox stop|start|pause|resume|rm ID [--no-wait]\n";

static void cli_sandbox_path(struct http_path *path, const char *id)
{
        http_path_init(path, "/v1/sandboxes");
        if (id)
                http_path_segment(path, id);
}

/* Adds one create flag's value to the request body. Returns 0 or CLI_EXIT_USAGE. */
static int cli_sandbox_create_option(json_t *body, int opt, const char *arg)
{
        static const struct {
                int opt;
                const char *flag;
                const char *object; /* NULL: a member of body itself */
                const char *member;
        } numbers[] = {
                { 'm', "memory", "resources", "memory_mb" },
                { 'p', "pids", "resources", "pids" },
                { 'd', "disk", "resources", "disk_mb" },
                { 't', "timeout", NULL, "timeout_s" },
        };
        json_t *target = body;
        const char *member = NULL;
        json_t *value = NULL;
        long long n;
        double cpus;

        switch (opt) {
        case 'c':
                if (cli_args_positive(arg, &cpus) < 0)
                        return cli_usage_error(sandbox_create_usage, "--cpus needs a number > 0, not '%s'", arg);
                target = json_object_get(body, "resources");
                member = "cpus";
                value = json_real(cpus);
                break;
        case 'e':
        case 'M':
                if (cli_args_pair(json_object_get(body, opt == 'e' ? "env" : "metadata"), arg) < 0)
                        return cli_usage_error(sandbox_create_usage, "--%s needs KEY=VALUE in UTF-8, not '%s'",
                                               opt == 'e' ? "env" : "meta", arg);
                return 0;
        case 'T':
        case 'S':
                member = opt == 'T' ? "template" : "snapshot_id";
                value = json_string(arg);
                break;
        case 'E':
        case 'A':
        case 'D':
                target = json_object_get(body, "network");
                if (!target) {
                        target = json_object();
                        if (!target || json_object_set_new(body, "network", target) < 0)
                                return cli_usage_error(sandbox_create_usage, "out of memory");
                }
                if (opt != 'E') {
                        if (cli_network_rule_add(target, opt == 'A' ? "allow" : "deny", arg) < 0)
                                return cli_usage_error(sandbox_create_usage, "invalid rule '%s' (not UTF-8?)", arg);
                        return 0;
                }
                member = "profile";
                value = json_string(arg);
                break;
        case 'o':
                if (!cli_streq(arg, "pause") && !cli_streq(arg, "stop") && !cli_streq(arg, "destroy"))
                        return cli_usage_error(sandbox_create_usage, "--on-timeout is pause, stop or destroy");
                member = "on_timeout";
                value = json_string(arg);
                break;
        default:
                for (size_t i = 0; i < ARRAY_SIZE(numbers); i++) {
                        if (numbers[i].opt != opt)
                                continue;
                        if (cli_args_integer(arg, 0, CLI_SANDBOX_NUMBER_MAX, &n) < 0)
                                return cli_usage_error(sandbox_create_usage, "--%s needs a whole number, not '%s'",
                                                       numbers[i].flag, arg);
                        if (numbers[i].object)
                                target = json_object_get(body, numbers[i].object);
                        member = numbers[i].member;
                        value = json_integer(n);
                }
                break;
        }

        if (!member || !value || json_object_set_new(target, member, value) < 0)
                return cli_usage_error(sandbox_create_usage, "invalid value '%s' (not UTF-8?)", arg);
        return 0;
}

/* Drops the empty objects the parser started with, so spaced applies its defaults. */
static void cli_sandbox_create_trim(json_t *body)
{
        static const char *const objects[] = { "resources", "env", "metadata" };

        for (size_t i = 0; i < ARRAY_SIZE(objects); i++)
                if (json_object_size(json_object_get(body, objects[i])) == 0)
                        json_object_del(body, objects[i]);
}

static int cli_sandbox_create(struct cli *cli, int argc, char **argv)
{
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "template", required_argument, NULL, 'T' },
                { "snapshot", required_argument, NULL, 'S' },
                { "cpus", required_argument, NULL, 'c' },
                { "memory", required_argument, NULL, 'm' },
                { "pids", required_argument, NULL, 'p' },
                { "disk", required_argument, NULL, 'd' },
                { "env", required_argument, NULL, 'e' },
                { "meta", required_argument, NULL, 'M' },
                { "timeout", required_argument, NULL, 't' },
                { "on-timeout", required_argument, NULL, 'o' },
                { "egress", required_argument, NULL, 'E' },
                { "allow", required_argument, NULL, 'A' },
                { "deny", required_argument, NULL, 'D' },
                { "no-wait", no_argument, NULL, 'W' },
                {},
        };
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_json_ json_t *answer = NULL;
        _cleanup_json_ json_t *body = json_pack("{s:{}, s:{}, s:{}}", "resources", "env", "metadata");
        bool no_wait = false;
        int c;

        if (!body)
                return cli_output_exit(-ENOMEM);

        optind = 0;
        opterr = 0;
        /* Only --help has a short form; the others are long options (vals are internal). */
        while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
                if (c == 'h')
                        return cli_usage_print(sandbox_create_usage);
                if (c == 'W') {
                        no_wait = true;
                        continue;
                }
                if (c == '?' || c == ':')
                        return cli_usage_option_error(sandbox_create_usage, c, argv);
                if (cli_sandbox_create_option(body, c, optarg) != 0)
                        return CLI_EXIT_USAGE;
        }
        if (optind < argc)
                return cli_usage_error(sandbox_create_usage, "unexpected argument '%s'", argv[optind]);
        if (json_object_get(body, "template") && json_object_get(body, "snapshot_id"))
                return cli_usage_error(sandbox_create_usage, "give --template or --snapshot, not both");
        cli_sandbox_create_trim(body);
        /* A preset (or debian) not built yet is built first, rather than the create failing. */
        const char *template = json_string_value(json_object_get(body, "template"));
        if (template && !no_wait && cli_template_build_if_needed(cli, template) < 0)
                return CLI_EXIT_FAILURE;

        cli_sandbox_path(&path, NULL);
        if (cli_operation_submit(cli, "POST", &path, body, !no_wait, &answer) < 0)
                return CLI_EXIT_FAILURE;
        if (cli->json)
                return cli_output_exit(cli_output_json(answer));

        const char *id = cli_output_string(answer, "sandbox.id");
        if (!id)
                id = cli_output_string(answer, "operation.target");
        if (!id)
                return cli_output_exit(-EBADMSG);
        printf("%s\n", id);
        return CLI_EXIT_OK;
}

static int cli_sandbox_get(struct cli *cli, int argc, char **argv)
{
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_json_ json_t *answer = NULL;

        int r = cli_args_simple(argc, argv, sandbox_get_usage, 1, NULL);
        if (r != CLI_CONTINUE)
                return r;
        if (cli_sandbox_id_resolve(cli, &argv[optind]) < 0)
                return CLI_EXIT_FAILURE;
        cli_sandbox_path(&path, argv[optind]);
        if (cli_request(cli, "GET", &path, NULL, CLI_REQUEST_TIMEOUT_S, NULL, &answer) < 0)
                return CLI_EXIT_FAILURE;
        return cli_output_show(cli->json, answer);
}

/* stop, start, pause, resume (POST .../{verb}) and rm (DELETE): argv[0] is the verb. */
static int cli_sandbox_lifecycle(struct cli *cli, int argc, char **argv)
{
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_json_ json_t *answer = NULL;
        bool no_wait = false;
        bool rm = cli_streq(argv[0], "rm");
        const char *verb = argv[0];

        int r = cli_args_simple(argc, argv, sandbox_lifecycle_usage, 1, &no_wait);
        if (r != CLI_CONTINUE)
                return r;
        if (cli_sandbox_id_resolve(cli, &argv[optind]) < 0)
                return CLI_EXIT_FAILURE;
        cli_sandbox_path(&path, argv[optind]);
        if (!rm)
                http_path_segment(&path, verb);
        if (cli_operation_submit(cli, rm ? "DELETE" : "POST", &path, NULL, !no_wait, &answer) < 0)
                return CLI_EXIT_FAILURE;
        return cli_output_exit(cli_operation_print(cli, answer, !no_wait, "sandbox"));
}

int cli_sandbox_main(struct cli *cli, int argc, char **argv)
{
        static const struct cli_verb verbs[] = {
                { "create", cli_sandbox_create },   { "ls", cli_ps_main },
                { "get", cli_sandbox_get },         { "set", cli_settings_set },
                { "stop", cli_sandbox_lifecycle },  { "start", cli_sandbox_lifecycle },
                { "pause", cli_sandbox_lifecycle }, { "resume", cli_sandbox_lifecycle },
                { "rm", cli_sandbox_lifecycle },
        };
        return cli_verb_dispatch(cli, verbs, ARRAY_SIZE(verbs), argc, argv, sandbox_usage);
}
