/* cli_key: `space key create|ls|rm` — API keys, each of a project and with a role
 * (docs/tenancy.md). A new key's secret is shown once, here. */
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

static const char key_usage[] =
        "usage: space key COMMAND [ARGS...]\n"
        "\n"
        "Commands:\n"
        "  create NAME  make an API key and print its secret (shown only this once);\n"
        "               --project, --role, --permission, --expires scope it;\n"
        "               --e2b prints it in the form E2B SDKs take (e2b_ + the same digits)\n"
        "  ls           list API keys (never their secrets)\n"
        "  rm ID        revoke an API key\n";

static const char key_create_usage[] =
        "usage: space key create [--project P] [--role R] [--permission PERM]... [--expires DURATION] [--e2b] NAME\n"
        "  --project P        the key's project (default: the calling key's)\n"
        "  --role R           admin, owner, developer or viewer (default: the calling key's)\n"
        "  --permission PERM  only this permission of the role (repeat for more), e.g. sandbox.read\n"
        "  --expires DURATION refused after this long: N[smhd], e.g. 30d (default: the calling key's expiry)\n"
        "  --e2b  print the secret as e2b_<40 hex digits>: the same key, in the form the E2B SDK's\n"
        "         E2B_API_KEY takes (spaced's --e2b-listen front door accepts both forms)\n";
static const char key_ls_usage[] = "usage: space key ls\n";
static const char key_rm_usage[] = "usage: space key rm ID\n";

static const struct cli_output_column key_columns[] = {
        { "ID", "id", CLI_CELL_TEXT, 0 },
        { "NAME", "name", CLI_CELL_TEXT, 18 },
        { "PROJECT", "project", CLI_CELL_TEXT, 14 },
        { "ROLE", "role", CLI_CELL_TEXT, 0 },
        { "CREATED", "created_at", CLI_CELL_AGE, 0 },
        { "EXPIRES", "expires_at", CLI_CELL_AGE, 0 },
        { "LAST USED", "last_used_at", CLI_CELL_AGE, 0 },
};

/* The answer to create holds the new secret: wipe it before it is freed. */
static void cli_key_answer_freep(json_t **answer)
{
        json_t *secret = json_object_get(*answer, "secret");

        if (json_is_string(secret))
                explicit_bzero((char *)json_string_value(secret), json_string_length(secret));
        json_decref(*answer);
}

/* "space_<hex>" -> "e2b_<hex>" in place (the E2B form names the same key). */
static void cli_key_to_e2b_form(json_t *answer)
{
        json_t *secret = json_object_get(answer, "secret");
        const char *s = json_string_value(secret);
        if (!s || strncmp(s, "space_", 6) != 0)
                return;
        char form[160];
        snprintf(form, sizeof(form), "e2b_%s", s + 6);
        explicit_bzero((char *)s, strlen(s));
        json_string_set(secret, form);
        explicit_bzero(form, sizeof(form));
}

static int cli_key_print_created(const json_t *answer)
{
        static const char *const fields[][2] = {
                { "id", "id:" },
                { "name", "name:" },
                { "project", "project:" },
                { "role", "role:" },
                { "secret", "secret:" },
                { "created_at", "created_at:" },
                { "expires_at", "expires_at:" },
        };

        if (!json_is_string(json_object_get(answer, "secret")))
                return -EBADMSG;
        for (size_t i = 0; i < ARRAY_SIZE(fields); i++) {
                const char *value = cli_output_string(answer, fields[i][0]);
                printf("%-13s%s\n", fields[i][1], value ? value : "-");
        }
        return 0;
}

static int cli_key_create(struct cli *cli, int argc, char **argv)
{
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_json_ json_t *body = NULL;
        _cleanup_(cli_key_answer_freep) json_t *answer = NULL;

        _cleanup_json_ json_t *scope = json_object(), *permissions = json_array();
        enum { OPT_E2B = 1000, OPT_PROJECT, OPT_ROLE, OPT_PERMISSION, OPT_EXPIRES };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "e2b", no_argument, NULL, OPT_E2B },
                { "project", required_argument, NULL, OPT_PROJECT },
                { "role", required_argument, NULL, OPT_ROLE },
                { "permission", required_argument, NULL, OPT_PERMISSION },
                { "expires", required_argument, NULL, OPT_EXPIRES },
                {},
        };
        bool e2b_form = false;
        long long expires_s;
        int r, c;

        if (!scope || !permissions)
                return CLI_EXIT_FAILURE;

        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
                switch (c) {
                case 'h':
                        return cli_usage_print(key_create_usage);
                case OPT_E2B:
                        e2b_form = true;
                        break;
                case OPT_PROJECT:
                        json_object_set_new(scope, "project", json_string(optarg));
                        break;
                case OPT_ROLE:
                        json_object_set_new(scope, "role", json_string(optarg));
                        break;
                case OPT_PERMISSION:
                        json_array_append_new(permissions, json_string(optarg));
                        break;
                case OPT_EXPIRES:
                        if (cli_args_duration(optarg, 10LL * 365 * 86400, &expires_s) < 0)
                                return cli_usage_error(key_create_usage, "--expires takes N[smhd] up to 10 years, not '%s'",
                                                       optarg);
                        json_object_set_new(scope, "expires_in_s", json_integer(expires_s));
                        break;
                default:
                        return cli_usage_option_error(key_create_usage, c, argv);
                }
        }
        if (optind >= argc)
                return cli_usage_error(key_create_usage, "missing key name");
        if (optind + 1 < argc)
                return cli_usage_error(key_create_usage, "unexpected argument '%s'", argv[optind + 1]);
        body = json_pack("{s:s}", "name", argv[optind]);
        if (body && json_array_size(permissions) > 0)
                json_object_set(scope, "permissions", permissions);
        if (body)
                json_object_update(body, scope);
        if (!body) {
                fputs("space: the key name is not valid UTF-8\n", stderr);
                return CLI_EXIT_FAILURE;
        }

        http_path_init(&path, "/v1/keys");
        if (cli_request(cli, "POST", &path, body, CLI_REQUEST_TIMEOUT_S, NULL, &answer) < 0)
                return CLI_EXIT_FAILURE;
        if (e2b_form)
                cli_key_to_e2b_form(answer);
        if (cli->json)
                return cli_output_exit(cli_output_json(answer));

        r = cli_key_print_created(answer);
        if (r >= 0)
                fputs("space: store the secret now; it cannot be shown again\n", stderr);
        return cli_output_exit(r);
}

static int cli_key_ls(struct cli *cli, int argc, char **argv)
{
        _cleanup_http_path_ struct http_path path = {};

        int r = cli_args_simple(argc, argv, key_ls_usage, 0, NULL);
        if (r != CLI_CONTINUE)
                return r;
        http_path_init(&path, "/v1/keys");
        return cli_collection_list(cli, &path, "keys", key_columns, ARRAY_SIZE(key_columns));
}

static int cli_key_rm(struct cli *cli, int argc, char **argv)
{
        _cleanup_http_path_ struct http_path path = {};

        int r = cli_args_simple(argc, argv, key_rm_usage, 1, NULL);
        if (r != CLI_CONTINUE)
                return r;
        http_path_init(&path, "/v1/keys");
        http_path_segment(&path, argv[optind]);
        return cli_collection_delete(cli, &path, argv[optind]);
}

int cli_key_main(struct cli *cli, int argc, char **argv)
{
        static const struct cli_verb verbs[] = {
                { "create", cli_key_create },
                { "ls", cli_key_ls },
                { "rm", cli_key_rm },
        };
        return cli_verb_dispatch(cli, verbs, ARRAY_SIZE(verbs), argc, argv, key_usage);
}
