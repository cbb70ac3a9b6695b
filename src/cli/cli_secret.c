/* cli_secret: `space secret create|ls|rm|bind|bindings|unbind` — platform-held secrets and
 * where the egress gateway puts them (docs/network.md). A value is read from standard input
 * (never from the command line, which other users of the host can see) and erased after
 * it is sent; the server never shows it again. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "cli/cli_collection.h"
#include "cli/cli_output.h"
#include "cli/cli_request.h"
#include "cli/cli_usage.h"
#include "cli/cli_verb.h"

static const char secret_usage[] =
        "usage: space secret COMMAND [ARGS...]\n"
        "\n"
        "Commands:\n"
        "  create NAME  store a secret; its value is read from standard input (one line)\n"
        "  ls           list the project's secrets (names only: a value is never shown)\n"
        "  rm NAME      delete a secret\n"
        "  bind NAME --destination HOST [--port N] [--header H] [--format bearer|basic|custom]\n"
        "       [--template T] [--method M]... [--sandbox ID]\n"
        "               put the secret on requests to HOST (exact or *.domain)\n"
        "  bindings [--sandbox ID]  list the bindings\n"
        "  unbind ID    delete a binding\n";
static const char secret_create_usage[] = "usage: space secret create NAME < value\n";
static const char secret_ls_usage[] = "usage: space secret ls\n";
static const char secret_rm_usage[] = "usage: space secret rm NAME\n";
static const char secret_bind_usage[] =
        "usage: space secret bind NAME --destination HOST [--port N] [--header H] [--format F] [--template T]\n"
        "                         [--method M]... [--sandbox ID]\n";
static const char secret_bindings_usage[] = "usage: space secret bindings [--sandbox ID]\n";
static const char secret_unbind_usage[] = "usage: space secret unbind ID\n";

static const struct cli_output_column secret_columns[] = {
        { "NAME", "name", CLI_CELL_TEXT, 0 },
        { "PROJECT", "project", CLI_CELL_TEXT, 14 },
        { "CREATED", "created_at", CLI_CELL_AGE, 0 },
};

static const struct cli_output_column binding_columns[] = {
        { "ID", "id", CLI_CELL_TEXT, 0 },
        { "SECRET", "secret", CLI_CELL_TEXT, 0 },
        { "DESTINATION", "destination", CLI_CELL_TEXT, 30 },
        { "HEADER", "header", CLI_CELL_TEXT, 0 },
        { "FORMAT", "format", CLI_CELL_TEXT, 0 },
        { "SANDBOX", "sandbox_id", CLI_CELL_TEXT, 0 },
};

/* The request body holds the value: erased before it is freed. */
static void secret_body_freep(json_t **body)
{
        json_t *value = json_object_get(*body, "value");
        if (json_is_string(value))
                explicit_bzero((char *)json_string_value(value), json_string_length(value));
        json_decref(*body);
}

static int cli_secret_create(struct cli *cli, int argc, char **argv)
{
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_(secret_body_freep) json_t *body = NULL;
        _cleanup_json_ json_t *answer = NULL;
        char value[8194];

        int r = cli_args_simple(argc, argv, secret_create_usage, 1, NULL);
        if (r != CLI_CONTINUE)
                return r;
        size_t len = fread(value, 1, sizeof(value) - 1, stdin);
        value[len] = '\0';
        if (len && value[len - 1] == '\n')
                value[--len] = '\0';
        if (len && value[len - 1] == '\r')
                value[--len] = '\0';
        body = json_pack("{s:s, s:s%}", "name", argv[optind], "value", value, len);
        explicit_bzero(value, sizeof(value));
        if (!body) {
                fputs("space: the name or value is not valid UTF-8\n", stderr);
                return CLI_EXIT_FAILURE;
        }
        http_path_init(&path, "/v1/secrets");
        if (cli_request(cli, "POST", &path, body, CLI_REQUEST_TIMEOUT_S, NULL, &answer) < 0)
                return CLI_EXIT_FAILURE;
        if (cli->json)
                return cli_output_exit(cli_output_json(answer));
        printf("%s\n", cli_output_string(answer, "name") ?: argv[optind]);
        return CLI_EXIT_OK;
}

static int list(struct cli *cli, const char *route, const char *sandbox, const char *key, const struct cli_output_column *columns,
                size_t n_columns)
{
        _cleanup_http_path_ struct http_path path = {};
        http_path_init(&path, route);
        if (sandbox)
                http_path_query(&path, "sandbox_id", sandbox);
        return cli_collection_list(cli, &path, key, columns, n_columns);
}

static int cli_secret_ls(struct cli *cli, int argc, char **argv)
{
        int r = cli_args_simple(argc, argv, secret_ls_usage, 0, NULL);
        return r != CLI_CONTINUE ? r : list(cli, "/v1/secrets", NULL, "secrets", secret_columns, ARRAY_SIZE(secret_columns));
}

static int remove_one(struct cli *cli, const char *route, const char *id)
{
        _cleanup_http_path_ struct http_path path = {};
        http_path_init(&path, route);
        http_path_segment(&path, id);
        return cli_collection_delete(cli, &path, id);
}

static int cli_secret_rm(struct cli *cli, int argc, char **argv)
{
        int r = cli_args_simple(argc, argv, secret_rm_usage, 1, NULL);
        return r != CLI_CONTINUE ? r : remove_one(cli, "/v1/secrets", argv[optind]);
}

static int cli_secret_unbind(struct cli *cli, int argc, char **argv)
{
        int r = cli_args_simple(argc, argv, secret_unbind_usage, 1, NULL);
        return r != CLI_CONTINUE ? r : remove_one(cli, "/v1/credential-bindings", argv[optind]);
}

static int cli_secret_bindings(struct cli *cli, int argc, char **argv)
{
        static const struct option options[] = { { "help", no_argument, NULL, 'h' },
                                                 { "sandbox", required_argument, NULL, 's' },
                                                 {} };
        const char *sandbox = NULL;
        int c;
        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
                if (c == 'h')
                        return cli_usage_print(secret_bindings_usage);
                if (c != 's')
                        return cli_usage_option_error(secret_bindings_usage, c, argv);
                sandbox = optarg;
        }
        if (optind < argc)
                return cli_usage_error(secret_bindings_usage, "unexpected argument '%s'", argv[optind]);
        return list(cli, "/v1/credential-bindings", sandbox, "bindings", binding_columns, ARRAY_SIZE(binding_columns));
}

static int cli_secret_bind(struct cli *cli, int argc, char **argv)
{
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_json_ json_t *answer = NULL;
        _cleanup_json_ json_t *body = json_object(), *methods = json_array();
        enum { OPT_DEST = 1000, OPT_PORT, OPT_HEADER, OPT_FORMAT, OPT_TEMPLATE, OPT_METHOD, OPT_SANDBOX };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "destination", required_argument, NULL, OPT_DEST },
                { "port", required_argument, NULL, OPT_PORT },
                { "header", required_argument, NULL, OPT_HEADER },
                { "format", required_argument, NULL, OPT_FORMAT },
                { "template", required_argument, NULL, OPT_TEMPLATE },
                { "method", required_argument, NULL, OPT_METHOD },
                { "sandbox", required_argument, NULL, OPT_SANDBOX },
                {},
        };
        static const char *const fields[] = { [OPT_DEST - 1000] = "destination",
                                              [OPT_HEADER - 1000] = "header",
                                              [OPT_FORMAT - 1000] = "format",
                                              [OPT_TEMPLATE - 1000] = "template",
                                              [OPT_SANDBOX - 1000] = "sandbox_id" };
        long long port;
        int c;
        if (!body || !methods)
                return CLI_EXIT_FAILURE;
        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
                switch (c) {
                case 'h':
                        return cli_usage_print(secret_bind_usage);
                case OPT_PORT:
                        if (cli_args_integer(optarg, 1, 65535, &port) < 0)
                                return cli_usage_error(secret_bind_usage, "--port takes 1 to 65535, not '%s'", optarg);
                        json_object_set_new(body, "port", json_integer(port));
                        break;
                case OPT_METHOD:
                        json_array_append_new(methods, json_string(optarg));
                        break;
                case OPT_DEST:
                case OPT_HEADER:
                case OPT_FORMAT:
                case OPT_TEMPLATE:
                case OPT_SANDBOX:
                        json_object_set_new(body, fields[c - 1000], json_string(optarg));
                        break;
                default:
                        return cli_usage_option_error(secret_bind_usage, c, argv);
                }
        }
        if (optind >= argc)
                return cli_usage_error(secret_bind_usage, "missing secret name");
        if (optind + 1 < argc)
                return cli_usage_error(secret_bind_usage, "unexpected argument '%s'", argv[optind + 1]);
        json_object_set_new(body, "secret", json_string(argv[optind]));
        if (json_array_size(methods))
                json_object_set(body, "methods", methods);
        http_path_init(&path, "/v1/credential-bindings");
        if (cli_request(cli, "POST", &path, body, CLI_REQUEST_TIMEOUT_S, NULL, &answer) < 0)
                return CLI_EXIT_FAILURE;
        if (cli->json)
                return cli_output_exit(cli_output_json(answer));
        printf("%s\n", cli_output_string(answer, "id") ?: "-");
        return CLI_EXIT_OK;
}

int cli_secret_main(struct cli *cli, int argc, char **argv)
{
        static const struct cli_verb verbs[] = {
                { "create", cli_secret_create },
                { "ls", cli_secret_ls },
                { "rm", cli_secret_rm },
                { "bind", cli_secret_bind },
                { "bindings", cli_secret_bindings },
                { "unbind", cli_secret_unbind },
        };
        return cli_verb_dispatch(cli, verbs, ARRAY_SIZE(verbs), argc, argv, secret_usage);
}
