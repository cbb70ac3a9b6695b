/* cli_policy: `space policy ls|get|apply|rm|test` — a project's policies (docs/governance.md).
 * apply reads a document and creates the policy of its name, or replaces it (PUT, at the
 * version it read, so a concurrent change is refused rather than overwritten). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "cli/cli_output.h"
#include "cli/cli_request.h"
#include "cli/cli_usage.h"
#include "cli/cli_verb.h"

static const char policy_usage[] =
        "usage: space policy COMMAND [ARGS...]\n"
        "\n"
        "Commands:\n"
        "  ls [--project P]          list the project's policies\n"
        "  get ID|NAME               one policy and its document (JSON)\n"
        "  apply FILE [--project P]  create the policy FILE (JSON, - for stdin) names, or replace it\n"
        "  rm ID|NAME                remove a policy\n"
        "  test ACTION [OPTIONS] [-- ARGV...]\n"
        "                            what the policies would decide (nothing runs)\n"
        "\n"
        "The policy language: docs/governance.md.\n";
static const char policy_ls_usage[] = "usage: space policy ls [--project P]\n";
static const char policy_get_usage[] = "usage: space policy get ID|NAME\n";
static const char policy_apply_usage[] = "usage: space policy apply FILE [--project P]\n";
static const char policy_rm_usage[] = "usage: space policy rm ID|NAME\n";
static const char policy_test_usage[] =
        "usage: space policy test ACTION [--sandbox ID] [--template T] [--user U] [--cwd DIR] [--path P]\n"
        "                         [--count N] [--draft FILE] [--project P] [-- ARGV...]\n"
        "ACTION: command, file.read, file.write, file.delete, sandbox.create, sandbox.fork, snapshot.export.\n"
        "  -- ARGV...     the command line (command)\n"
        "  --draft FILE   decide with this document in place of the stored policy of its name\n"
        "Exits 0 when allowed, 3 when denied.\n";

static const struct cli_output_column policy_columns[] = {
        { "ID", "id", CLI_CELL_TEXT, 0 },
        { "NAME", "name", CLI_CELL_TEXT, 0 },
        { "VERSION", "version", CLI_CELL_TEXT, 0 },
        { "SANDBOX", "sandbox_id", CLI_CELL_TEXT, 0 },
        { "UPDATED", "updated_at", CLI_CELL_AGE, 0 },
};

/* Parses --project P out of argv (the only option of ls and apply). */
static int project_option(int argc, char **argv, const char *usage, const char **ret)
{
        static const struct option options[] = { { "help", no_argument, NULL, 'h' },
                                                 { "project", required_argument, NULL, 'p' },
                                                 {} };
        int c;
        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
                if (c == 'h')
                        return cli_usage_print(usage);
                if (c == 'p')
                        *ret = optarg;
                else
                        return cli_usage_option_error(usage, c, argv);
        }
        return CLI_CONTINUE;
}

static int list_policies(struct cli *cli, const char *project, json_t **ret)
{
        _cleanup_http_path_ struct http_path path = {};
        http_path_init(&path, "/v1/policies");
        if (project)
                http_path_query(&path, "project", project);
        return cli_request(cli, "GET", &path, NULL, CLI_REQUEST_TIMEOUT_S, NULL, ret);
}

/* The policy an argument names: its id (pol-…) or its name in the caller's project. A new reference. */
static json_t *find_policy(struct cli *cli, const char *what, const char *project)
{
        _cleanup_json_ json_t *answer = NULL;
        if (list_policies(cli, project, &answer) < 0)
                return NULL;
        size_t i;
        json_t *p;
        json_array_foreach(json_object_get(answer, "policies"), i, p)
        {
                const char *id = cli_output_string(p, "id"), *name = cli_output_string(p, "name");
                if ((id && strcmp(id, what) == 0) || (name && strcmp(name, what) == 0))
                        return json_incref(p);
        }
        fprintf(stderr, "space: no policy %s\n", what);
        return NULL;
}

static int cli_policy_ls(struct cli *cli, int argc, char **argv)
{
        const char *project = NULL;
        _cleanup_json_ json_t *answer = NULL;
        int r = project_option(argc, argv, policy_ls_usage, &project);
        if (r != CLI_CONTINUE)
                return r;
        if (optind < argc)
                return cli_usage_error(policy_ls_usage, "unexpected argument '%s'", argv[optind]);
        if (list_policies(cli, project, &answer) < 0)
                return CLI_EXIT_FAILURE;
        return cli_output_show_list(cli->json, answer, "policies", policy_columns, ARRAY_SIZE(policy_columns));
}

static int cli_policy_get(struct cli *cli, int argc, char **argv)
{
        int r = cli_args_simple(argc, argv, policy_get_usage, 1, NULL);
        if (r != CLI_CONTINUE)
                return r;
        _cleanup_json_ json_t *p = find_policy(cli, argv[optind], NULL);
        return p ? cli_output_exit(cli_output_json(p)) : CLI_EXIT_FAILURE;
}

static json_t *read_document(const char *file)
{
        json_error_t jerr;
        json_t *doc = strcmp(file, "-") == 0 ? json_loadf(stdin, 0, &jerr) : json_load_file(file, 0, &jerr);
        if (!doc)
                fprintf(stderr, "space: %s: line %d: %s\n", file, jerr.line, jerr.text);
        return doc;
}

static int cli_policy_apply(struct cli *cli, int argc, char **argv)
{
        const char *project = NULL;
        int r = project_option(argc, argv, policy_apply_usage, &project);
        if (r != CLI_CONTINUE)
                return r;
        if (optind + 1 != argc)
                return cli_usage_error(policy_apply_usage, "give one FILE");
        _cleanup_json_ json_t *doc = read_document(argv[optind]), *answer = NULL, *list = NULL;
        if (!doc)
                return CLI_EXIT_FAILURE;
        const char *name = cli_output_string(doc, "name");
        json_t *existing = NULL;
        if (name && list_policies(cli, project, &list) == 0) {
                size_t i;
                json_t *p;
                json_array_foreach(json_object_get(list, "policies"), i, p)
                {
                        const char *n = cli_output_string(p, "name");
                        if (n && strcmp(n, name) == 0)
                                existing = p;
                }
        }
        _cleanup_http_path_ struct http_path path = {};
        if (existing) {
                char version[24];
                snprintf(version, sizeof(version), "%lld", (long long)json_integer_value(json_object_get(existing, "version")));
                http_path_init(&path, "/v1/policies");
                http_path_segment(&path, cli_output_string(existing, "id"));
                http_path_query(&path, "if_version", version);
        } else {
                http_path_init(&path, "/v1/policies");
                if (project)
                        http_path_query(&path, "project", project);
        }
        if (cli_request(cli, existing ? "PUT" : "POST", &path, doc, CLI_REQUEST_TIMEOUT_S, NULL, &answer) < 0)
                return CLI_EXIT_FAILURE;
        if (cli->json)
                return cli_output_exit(cli_output_json(answer));
        printf("%s %s (version %lld)\n", cli_output_string(answer, "id"), existing ? "replaced" : "created",
               (long long)json_integer_value(json_object_get(answer, "version")));
        return CLI_EXIT_OK;
}

static int cli_policy_rm(struct cli *cli, int argc, char **argv)
{
        int r = cli_args_simple(argc, argv, policy_rm_usage, 1, NULL);
        if (r != CLI_CONTINUE)
                return r;
        _cleanup_json_ json_t *p = find_policy(cli, argv[optind], NULL), *answer = NULL;
        if (!p)
                return CLI_EXIT_FAILURE;
        _cleanup_http_path_ struct http_path path = {};
        http_path_init(&path, "/v1/policies");
        http_path_segment(&path, cli_output_string(p, "id"));
        if (cli_request(cli, "DELETE", &path, NULL, CLI_REQUEST_TIMEOUT_S, NULL, &answer) < 0)
                return CLI_EXIT_FAILURE;
        return CLI_EXIT_OK;
}

static int cli_policy_test(struct cli *cli, int argc, char **argv)
{
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },           { "sandbox", required_argument, NULL, 's' },
                { "template", required_argument, NULL, 't' }, { "user", required_argument, NULL, 'u' },
                { "cwd", required_argument, NULL, 'c' },      { "path", required_argument, NULL, 'P' },
                { "count", required_argument, NULL, 'n' },    { "draft", required_argument, NULL, 'd' },
                { "project", required_argument, NULL, 'p' },  {},
        };
        static const struct {
                int opt;
                const char *key;
        } fields[] = { { 's', "sandbox_id" }, { 't', "template" }, { 'u', "user" }, { 'c', "cwd" }, { 'P', "path" } };
        _cleanup_json_ json_t *rq = json_object(), *body = json_object(), *answer = NULL;
        if (!rq || !body)
                return CLI_EXIT_FAILURE;
        int c;
        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, "+:h", options, NULL)) != -1) {
                if (c == 'h')
                        return cli_usage_print(policy_test_usage);
                bool done = false;
                for (size_t i = 0; i < ARRAY_SIZE(fields) && !done; i++)
                        if (fields[i].opt == c) {
                                json_object_set_new(rq, fields[i].key, json_string(optarg));
                                done = true;
                        }
                if (done)
                        continue;
                if (c == 'n') {
                        char *end;
                        long long n = strtoll(optarg, &end, 10);
                        if (*optarg < '0' || *optarg > '9' || *end)
                                return cli_usage_error(policy_test_usage, "--count wants a number");
                        json_object_set_new(rq, "count", json_integer(n));
                } else if (c == 'd') {
                        json_t *draft = read_document(optarg);
                        if (!draft)
                                return CLI_EXIT_FAILURE;
                        json_object_set_new(body, "policy", draft);
                } else if (c == 'p') {
                        json_object_set_new(body, "project", json_string(optarg));
                } else {
                        return cli_usage_option_error(policy_test_usage, c, argv);
                }
        }
        if (optind >= argc)
                return cli_usage_error(policy_test_usage, "give an ACTION");
        json_object_set_new(rq, "action", json_string(argv[optind++]));
        if (optind < argc && strcmp(argv[optind], "--") == 0)
                optind++;
        if (optind < argc) {
                json_t *words = json_array();
                for (int i = optind; i < argc; i++)
                        json_array_append_new(words, json_string(argv[i]));
                json_object_set_new(rq, "argv", words);
        }
        json_object_set(body, "request", rq);
        _cleanup_http_path_ struct http_path path = {};
        http_path_init(&path, "/v1/policies/test");
        if (cli_request(cli, "POST", &path, body, CLI_REQUEST_TIMEOUT_S, NULL, &answer) < 0)
                return CLI_EXIT_FAILURE;
        const char *decision = cli_output_string(answer, "decision");
        bool denied = decision && strcmp(decision, "deny") == 0;
        if (cli->json) {
                int r = cli_output_exit(cli_output_json(answer));
                return r == CLI_EXIT_OK && denied ? 3 : r;
        }
        printf("%s: %s\n", decision ? decision : "?", cli_output_string(answer, "message"));
        return denied ? 3 : CLI_EXIT_OK;
}

int cli_policy_main(struct cli *cli, int argc, char **argv)
{
        static const struct cli_verb verbs[] = {
                { "ls", cli_policy_ls }, { "get", cli_policy_get },   { "apply", cli_policy_apply },
                { "rm", cli_policy_rm }, { "test", cli_policy_test },
        };
        return cli_verb_dispatch(cli, verbs, ARRAY_SIZE(verbs), argc, argv, policy_usage);
}
