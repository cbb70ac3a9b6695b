/* cli_ps: `space ps` and `space sandbox ls` — the sandboxes, as docker ps and kubectl get
 * show them: a table (-o wide: more columns), ids only (-q), JSON (-o json, --json) or a
 * line per sandbox from a --format template; --filter as well as --state/--meta. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_format.h"
#include "cli/cli_output.h"
#include "cli/cli_request.h"
#include "cli/cli_usage.h"
#include "cli/cli_yaml.h"

static const char ps_usage[] =
        "usage: space ps [-q] [-o json|yaml|wide] [--format TEMPLATE] [--filter K=V[,K=V]]... [--state S] [--meta K=V]...\n"
        "\n"
        "Lists the sandboxes (also: space sandbox ls), newest last.\n"
        "\n"
        "  -q, --quiet          sandbox ids only, one per line\n"
        "  -o, --output FORMAT  json (the API's answer, as --json), yaml (the sandboxes as a\n"
        "                       YAML list), wide (more columns)\n"
        "  --format TEMPLATE    one line per sandbox: {{.id}}, {{.resources.cpus}}, {{json .metadata}},\n"
        "                       \\t for a tab; 'json' for one JSON object per line\n"
        "  --filter K=V         state=S, metadata.K=V (or meta.K=V), template=T, id=PREFIX; several\n"
        "                       filters (repeated or comma-separated) must all match\n"
        "  --state S            the same as --filter state=S\n"
        "  --meta K=V           the same as --filter metadata.K=V\n";

static const struct cli_output_column ps_columns[] = {
        { "ID", "id", CLI_CELL_TEXT, 0 },
        { "STATE", "state", CLI_CELL_TEXT, 0 },
        { "TEMPLATE", "template", CLI_CELL_TEXT, 24 },
        { "CREATED", "created_at", CLI_CELL_AGE, 0 },
};

static const struct cli_output_column ps_wide_columns[] = {
        { "ID", "id", CLI_CELL_TEXT, 0 },
        { "STATE", "state", CLI_CELL_TEXT, 0 },
        { "TEMPLATE", "template", CLI_CELL_TEXT, 24 },
        { "CPUS", "resources.cpus", CLI_CELL_TEXT, 0 },
        { "MEM_MB", "resources.memory_mb", CLI_CELL_TEXT, 0 },
        { "PIDS", "resources.pids", CLI_CELL_TEXT, 0 },
        { "CREATED", "created_at", CLI_CELL_AGE, 0 },
        { "METADATA", "metadata", CLI_CELL_TEXT, 40 },
};

/* What the server cannot filter on: kept here and applied to the list. */
struct ps_local_filter {
        const char *template;
        const char *id_prefix;
};

/* One K=V filter: to the query (state, metadata.K) or kept for the list. */
static int ps_filter_one(struct http_path *path, struct ps_local_filter *local, const char *kv, size_t len)
{
        const char *eq = memchr(kv, '=', len);
        if (!eq || eq == kv)
                return cli_usage_error(ps_usage, "--filter needs KEY=VALUE, not '%.*s'", (int)len, kv);
        _cleanup_free_ char *key = strndup(kv, (size_t)(eq - kv)), *value = strndup(eq + 1, len - (size_t)(eq - kv) - 1);
        if (!key || !value)
                return cli_output_exit(-ENOMEM);
        if (cli_streq(key, "state")) {
                http_path_query(path, "state", value);
        } else if (strncmp(key, "metadata.", 9) == 0 || strncmp(key, "meta.", 5) == 0) {
                _cleanup_free_ char *name = NULL;
                const char *k = strchr(key, '.') + 1;
                if (!*k || asprintf(&name, "metadata.%s", k) < 0)
                        return cli_usage_error(ps_usage, "--filter %s needs a metadata key", key);
                http_path_query(path, name, value);
        } else if (cli_streq(key, "template")) {
                local->template = strstr(kv, "=") + 1;
        } else if (cli_streq(key, "id")) {
                local->id_prefix = strstr(kv, "=") + 1;
        } else {
                return cli_usage_error(ps_usage, "--filter knows state, metadata.K, template and id, not '%s'", key);
        }
        return CLI_CONTINUE;
}

/* Comma-separated filters. The local ones point into arg (the argv string, cut at commas). */
static int ps_filter(struct http_path *path, struct ps_local_filter *local, char *arg)
{
        for (char *save = NULL, *kv = strtok_r(arg, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
                int r = ps_filter_one(path, local, kv, strlen(kv));
                if (r != CLI_CONTINUE)
                        return r;
        }
        return CLI_CONTINUE;
}

static bool ps_match(const json_t *sb, const struct ps_local_filter *f)
{
        const char *id = cli_output_string(sb, "id"), *template = cli_output_string(sb, "template");
        if (f->id_prefix) {
                /* a prefix may leave out "sb-" */
                if (strncmp(f->id_prefix, "sb-", 3) != 0 && id && strncmp(id, "sb-", 3) == 0)
                        id += 3;
                if (!id || strncmp(id, f->id_prefix, strlen(f->id_prefix)) != 0)
                        return false;
        }
        return !f->template || (template && cli_streq(template, f->template));
}

struct ps_flags {
        bool quiet, wide, json, yaml;
        const char *format;
};

static int ps_print(json_t *answer, const struct ps_flags *o)
{
        json_t *list = json_object_get(answer, "sandboxes");
        size_t i;
        json_t *item;

        if (o->json)
                return cli_output_exit(cli_output_json(answer));
        if (o->yaml)
                return cli_output_exit(cli_yaml_print(stdout, list));
        if (o->format)
                return cli_output_exit(cli_format_print(o->format, list));
        if (o->quiet) {
                json_array_foreach(list, i, item)
                        printf("%s\n", cli_output_string(item, "id") ? cli_output_string(item, "id") : "-");
                return CLI_EXIT_OK;
        }
        if (o->wide)
                return cli_output_exit(cli_output_list(list, ps_wide_columns, ARRAY_SIZE(ps_wide_columns)));
        return cli_output_exit(cli_output_list(list, ps_columns, ARRAY_SIZE(ps_columns)));
}

int cli_ps_main(struct cli *cli, int argc, char **argv)
{
        enum { OPT_STATE = 256, OPT_META, OPT_FILTER, OPT_FORMAT };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "quiet", no_argument, NULL, 'q' },
                { "output", required_argument, NULL, 'o' },
                { "format", required_argument, NULL, OPT_FORMAT },
                { "filter", required_argument, NULL, OPT_FILTER },
                { "state", required_argument, NULL, OPT_STATE },
                { "meta", required_argument, NULL, OPT_META },
                {},
        };
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_json_ json_t *answer = NULL;
        struct ps_local_filter local = { 0 };
        struct ps_flags o = { .json = cli->json };
        _cleanup_free_ char *meta = NULL;
        int c, r;

        http_path_init(&path, "/v1/sandboxes");
        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":hqo:", options, NULL)) != -1) {
                switch (c) {
                case 'h':
                        return cli_usage_print(ps_usage);
                case 'q':
                        o.quiet = true;
                        break;
                case 'o':
                        if (cli_streq(optarg, "json"))
                                o.json = true;
                        else if (cli_streq(optarg, "wide"))
                                o.wide = true;
                        else if (cli_streq(optarg, "yaml"))
                                o.yaml = true;
                        else
                                return cli_usage_error(ps_usage, "-o is json, yaml or wide, not '%s'", optarg);
                        break;
                case OPT_FORMAT:
                        if (cli_format_check(optarg) < 0)
                                return cli_usage_error(ps_usage, "--format: bad template '%s'", optarg);
                        o.format = optarg;
                        break;
                case OPT_STATE:
                        http_path_query(&path, "state", optarg);
                        break;
                case OPT_META:
                        if (!strchr(optarg, '=') || optarg[0] == '=')
                                return cli_usage_error(ps_usage, "--meta needs KEY=VALUE, not '%s'", optarg);
                        free(meta);
                        meta = NULL;
                        if (asprintf(&meta, "metadata.%s", optarg) < 0)
                                return cli_output_exit(-ENOMEM);
                        if ((r = ps_filter_one(&path, &local, meta, strlen(meta))) != CLI_CONTINUE)
                                return r;
                        break;
                case OPT_FILTER:
                        if ((r = ps_filter(&path, &local, optarg)) != CLI_CONTINUE)
                                return r;
                        break;
                default:
                        return cli_usage_option_error(ps_usage, c, argv);
                }
        }
        if (optind < argc)
                return cli_usage_error(ps_usage, "unexpected argument '%s'", argv[optind]);
        if (o.quiet + o.wide + (o.format != NULL) + o.json > 1)
                return cli_usage_error(ps_usage, "give one of -q, -o, --format, --json");

        if (cli_request_list(cli, &path, "sandboxes", &answer) < 0)
                return CLI_EXIT_FAILURE;
        json_t *list = json_object_get(answer, "sandboxes");
        if (!json_is_array(list))
                return cli_output_exit(-EBADMSG);
        for (size_t i = json_array_size(list); i-- > 0;)
                if (!ps_match(json_array_get(list, i), &local))
                        json_array_remove(list, i);
        return ps_print(answer, &o);
}
