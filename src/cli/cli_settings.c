/* cli_settings: `space sandbox set` — change a sandbox's metadata, timeout and rolling
 * snapshot policy (PATCH /v1/sandboxes/ID). */
#include <getopt.h>
#include <stdio.h>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "cli/cli_output.h"
#include "cli/cli_request.h"
#include "cli/cli_sandbox_id.h"
#include "cli/cli_usage.h"

/* Only the syntax is checked here; spaced answers values out of its ranges. */
#define CLI_SETTINGS_NUMBER_MAX (1LL << 40)

static const char settings_usage[] =
        "usage: space sandbox set ID [flags]\n"
        "\n"
        "  --meta K=V              metadata label (repeatable); the labels given replace all of\n"
        "                          the sandbox's metadata\n"
        "  --clear-meta            remove all metadata\n"
        "  --timeout S             seconds until --on-timeout applies (0 = never), counted from\n"
        "                          now when the sandbox is running\n"
        "  --on-timeout ACTION     pause, stop or destroy\n"
        "  --rolling-interval S    take a snapshot labelled 'rolling' every S seconds (60-604800)\n"
        "                          while the sandbox runs and its files changed\n"
        "  --rolling-retain S      delete rolling snapshots older than S seconds (default 604800)\n"
        "  --rolling-max-count N   keep at most the newest N rolling snapshots (default 168)\n"
        "  --rolling-memory        rolling snapshots of memory too (where the runtime can)\n"
        "  --no-rolling            remove the rolling snapshot policy\n"
        "\n"
        "The rolling flags replace the whole policy. Settings not named stay as they are.\n"
        "Prints the sandbox (with --json, the API's answer).\n";

enum {
        OPT_META = 256,
        OPT_CLEAR_META,
        OPT_TIMEOUT,
        OPT_ON_TIMEOUT,
        OPT_INTERVAL,
        OPT_RETAIN,
        OPT_MAX_COUNT,
        OPT_MEMORY,
        OPT_NO_ROLLING,
};

/* What the flags asked for, gathered before the body is made. */
struct cli_settings {
        json_t *body;
        json_t *metadata;
        json_t *rolling;
        bool clear_meta;
        bool no_rolling;
};

static void cli_settings_release(struct cli_settings *s)
{
        json_decref(s->body);
        json_decref(s->metadata);
        json_decref(s->rolling);
}

static int cli_settings_number(json_t *target, const char *member, const char *flag, const char *arg)
{
        long long n;

        if (cli_args_integer(arg, 0, CLI_SETTINGS_NUMBER_MAX, &n) < 0)
                return cli_usage_error(settings_usage, "--%s needs a whole number, not '%s'", flag, arg);
        if (json_object_set_new(target, member, json_integer(n)) < 0)
                return cli_output_exit(-ENOMEM);
        return 0;
}

/* Adds one flag to s. Returns 0 or the exit status. */
static int cli_settings_option(struct cli_settings *s, int opt, char **argv)
{
        switch (opt) {
        case OPT_META:
                if (cli_args_pair(s->metadata, optarg) < 0)
                        return cli_usage_error(settings_usage, "--meta needs KEY=VALUE in UTF-8, not '%s'", optarg);
                return 0;
        case OPT_CLEAR_META:
                s->clear_meta = true;
                return 0;
        case OPT_TIMEOUT:
                return cli_settings_number(s->body, "timeout_s", "timeout", optarg);
        case OPT_ON_TIMEOUT:
                if (!cli_streq(optarg, "pause") && !cli_streq(optarg, "stop") && !cli_streq(optarg, "destroy"))
                        return cli_usage_error(settings_usage, "--on-timeout is pause, stop or destroy");
                return json_object_set_new(s->body, "on_timeout", json_string(optarg)) < 0 ? cli_output_exit(-ENOMEM) : 0;
        case OPT_INTERVAL:
                return cli_settings_number(s->rolling, "interval_s", "rolling-interval", optarg);
        case OPT_RETAIN:
                return cli_settings_number(s->rolling, "retain_s", "rolling-retain", optarg);
        case OPT_MAX_COUNT:
                return cli_settings_number(s->rolling, "max_count", "rolling-max-count", optarg);
        case OPT_MEMORY:
                return json_object_set_new(s->rolling, "memory", json_true()) < 0 ? cli_output_exit(-ENOMEM) : 0;
        case OPT_NO_ROLLING:
                s->no_rolling = true;
                return 0;
        default:
                return cli_usage_option_error(settings_usage, opt, argv);
        }
}

/* Puts metadata and the rolling policy into the body. Returns 0 or the exit status. */
static int cli_settings_finish(struct cli_settings *s)
{
        if (s->clear_meta && json_object_size(s->metadata) > 0)
                return cli_usage_error(settings_usage, "give --meta or --clear-meta, not both");
        if (s->no_rolling && json_object_size(s->rolling) > 0)
                return cli_usage_error(settings_usage, "give --no-rolling or --rolling-* flags, not both");
        if (json_object_size(s->rolling) > 0 && !json_object_get(s->rolling, "interval_s"))
                return cli_usage_error(settings_usage, "the --rolling-* flags need --rolling-interval");

        if ((s->clear_meta || json_object_size(s->metadata) > 0) && json_object_set(s->body, "metadata", s->metadata) < 0)
                return cli_output_exit(-ENOMEM);
        if (s->no_rolling && json_object_set_new(s->body, "rolling_snapshots", json_null()) < 0)
                return cli_output_exit(-ENOMEM);
        if (json_object_size(s->rolling) > 0 && json_object_set(s->body, "rolling_snapshots", s->rolling) < 0)
                return cli_output_exit(-ENOMEM);
        if (json_object_size(s->body) == 0)
                return cli_usage_error(settings_usage, "nothing to change");
        return 0;
}

int cli_settings_set(struct cli *cli, int argc, char **argv)
{
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "meta", required_argument, NULL, OPT_META },
                { "clear-meta", no_argument, NULL, OPT_CLEAR_META },
                { "timeout", required_argument, NULL, OPT_TIMEOUT },
                { "on-timeout", required_argument, NULL, OPT_ON_TIMEOUT },
                { "rolling-interval", required_argument, NULL, OPT_INTERVAL },
                { "rolling-retain", required_argument, NULL, OPT_RETAIN },
                { "rolling-max-count", required_argument, NULL, OPT_MAX_COUNT },
                { "rolling-memory", no_argument, NULL, OPT_MEMORY },
                { "no-rolling", no_argument, NULL, OPT_NO_ROLLING },
                {},
        };
        _cleanup_(cli_settings_release) struct cli_settings s = {
                .body = json_object(),
                .metadata = json_object(),
                .rolling = json_object(),
        };
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_json_ json_t *answer = NULL;
        int c, r;

        if (!s.body || !s.metadata || !s.rolling)
                return cli_output_exit(-ENOMEM);

        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
                if (c == 'h')
                        return cli_usage_print(settings_usage);
                if ((r = cli_settings_option(&s, c, argv)) != 0)
                        return r;
        }
        if (optind >= argc)
                return cli_usage_error(settings_usage, "missing sandbox id");
        if (optind + 1 < argc)
                return cli_usage_error(settings_usage, "unexpected argument '%s'", argv[optind + 1]);
        if ((r = cli_settings_finish(&s)) != 0)
                return r;

        if (cli_sandbox_id_resolve(cli, &argv[optind]) < 0)
                return CLI_EXIT_FAILURE;
        http_path_init(&path, "/v1/sandboxes");
        http_path_segment(&path, argv[optind]);
        if (cli_request(cli, "PATCH", &path, s.body, CLI_REQUEST_TIMEOUT_S, NULL, &answer) < 0)
                return CLI_EXIT_FAILURE;
        return cli_output_show(cli->json, answer);
}
