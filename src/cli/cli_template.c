/* cli_template: `space template ls|get|build|rm`. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "cli/cli_collection.h"
#include "cli/cli_operation.h"
#include "cli/cli_output.h"
#include "cli/cli_request.h"
#include "cli/cli_template_build.h"
#include "cli/cli_usage.h"
#include "cli/cli_verb.h"

static const char template_usage[] =
        "usage: space template COMMAND [ARGS...]\n"
        "\n"
        "Commands:\n"
        "  ls                      list templates\n"
        "  get NAME                show one template\n"
        "  build NAME [--no-wait]  build a built-in or preset template (busybox, debian, python, node)\n"
        "  build [-f SPACEFILE] -t NAME[:TAG] DIR\n"
        "                          build a template from a Spacefile and a context directory\n"
        "  import [--format rootfs|oci] -t NAME[:TAG] FILE\n"
        "                          import a rootfs tarball or an image archive\n"
        "  rm [-f] NAME[:TAG]      delete a template (asks, or needs -f, while sandboxes use it)\n"
        "  prune                   delete the layer cache of Spacefile builds\n";

static const char template_ls_usage[] = "usage: space template ls\n";
static const char template_get_usage[] = "usage: space template get NAME\n";
static const char template_build_usage[] =
        "usage: space template build NAME [--no-wait]\n"
        "       space template build [-f SPACEFILE] -t NAME[:TAG] [--no-follow] DIR\n"
        "\n"
        "The first form builds a built-in or preset template (busybox, debian, python, node);\n"
        "the second a template from a Spacefile and a context directory, following its log.\n"
        "The build's log is shown as it is written (a preset's steps, debootstrap's output for\n"
        "debian), then the template's name (exit 1 if it fails); Ctrl-C cancels the build.\n"
        "--no-wait prints the operation id at once.\n";
static const char template_rm_usage[] =
        "usage: space template rm [-f|--force] NAME[:TAG]\n"
        "  -f, --force  delete it even when sandboxes or other templates' builds use it\n"
        "               (they keep working; a terminal is asked instead)\n";

static const struct cli_output_column template_columns[] = {
        { "NAME", "name", CLI_CELL_TEXT, 0 },
        { "STATE", "state", CLI_CELL_TEXT, 0 },
        { "BASE", "environment.base", CLI_CELL_TEXT, 32 },
        { "DIGEST", "environment.digest", CLI_CELL_DIGEST, 0 },
        { "CREATED", "environment.created_at", CLI_CELL_AGE, 0 },
};

static void cli_template_path(struct http_path *path, const char *name)
{
        http_path_init(path, "/v1/templates");
        if (name)
                http_path_segment(path, name);
}

static int cli_template_ls(struct cli *cli, int argc, char **argv)
{
        _cleanup_http_path_ struct http_path path = {};

        int r = cli_args_simple(argc, argv, template_ls_usage, 0, NULL);
        if (r != CLI_CONTINUE)
                return r;
        cli_template_path(&path, NULL);
        return cli_collection_list(cli, &path, "templates", template_columns, ARRAY_SIZE(template_columns));
}

static int cli_template_get(struct cli *cli, int argc, char **argv)
{
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_json_ json_t *answer = NULL;

        int r = cli_args_simple(argc, argv, template_get_usage, 1, NULL);
        if (r != CLI_CONTINUE)
                return r;
        cli_template_path(&path, argv[optind]);
        if (cli_request(cli, "GET", &path, NULL, CLI_REQUEST_TIMEOUT_S, NULL, &answer) < 0)
                return CLI_EXIT_FAILURE;
        return cli_output_show(cli->json, answer);
}

static int cli_template_build(struct cli *cli, int argc, char **argv)
{
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_json_ json_t *answer = NULL;
        bool no_wait = false;

        if (cli_template_build_wants_context(argc, argv))
                return cli_template_build_context(cli, argc, argv);
        int r = cli_args_simple(argc, argv, template_build_usage, 1, &no_wait);
        if (r != CLI_CONTINUE)
                return r;
        cli_template_path(&path, argv[optind]);
        http_path_segment(&path, "build");
        /* Every build has a log to follow: a preset's steps, or the built-ins' builders
         * (debootstrap's output for debian). */
        bool follow = !no_wait;
        if (cli_operation_submit(cli, "POST", &path, NULL, !no_wait && !follow, &answer) < 0)
                return CLI_EXIT_FAILURE;
        if (follow) {
                const char *op = cli_output_string(answer, "operation.id");
                if (!op)
                        return cli_output_exit(-EBADMSG);
                return cli_template_build_follow(cli, op, argv[optind]);
        }
        return cli_output_exit(cli_operation_print(cli, answer, !no_wait, "template"));
}

/* A terminal is asked; anything else is a no. */
static bool confirm(const char *question)
{
        if (!isatty(STDIN_FILENO) || !isatty(STDERR_FILENO))
                return false;
        fprintf(stderr, "%s [y/N] ", question);
        fflush(stderr);
        char line[16];
        return fgets(line, sizeof(line), stdin) && (line[0] == 'y' || line[0] == 'Y');
}

static int cli_template_rm(struct cli *cli, int argc, char **argv)
{
        enum { OPT_FORCE = 0x100 };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "force", no_argument, NULL, OPT_FORCE },
                {},
        };
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_json_ json_t *answer = NULL;
        bool force = false;
        int c;

        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":hf", options, NULL)) != -1) {
                switch (c) {
                case 'h':
                        return cli_usage_print(template_rm_usage);
                case 'f':
                case OPT_FORCE:
                        force = true;
                        break;
                default:
                        return cli_usage_option_error(template_rm_usage, c, argv);
                }
        }
        if (optind >= argc)
                return cli_usage_error(template_rm_usage, "missing template name");
        if (optind + 1 < argc)
                return cli_usage_error(template_rm_usage, "unexpected argument '%s'", argv[optind + 1]);
        cli_template_path(&path, argv[optind]);
        if (force)
                http_path_query(&path, "force", "true");
        long status = 0;
        if (cli_request(cli, "DELETE", &path, NULL, CLI_REQUEST_TIMEOUT_S, &status, &answer) < 0) {
                /* In use (the line above names what uses it): a terminal is asked once. */
                if (force || status != 409 || !confirm("delete it anyway?"))
                        return CLI_EXIT_FAILURE;
                http_path_query(&path, "force", "true");
                if (cli_request(cli, "DELETE", &path, NULL, CLI_REQUEST_TIMEOUT_S, NULL, &answer) < 0)
                        return CLI_EXIT_FAILURE;
        }
        if (cli->json)
                return cli_output_exit(cli_output_json(answer));
        printf("%s\n", argv[optind]);
        return CLI_EXIT_OK;
}

static const char template_prune_usage[] = "usage: space template prune\n";

static int cli_template_prune(struct cli *cli, int argc, char **argv)
{
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_json_ json_t *answer = NULL;

        int r = cli_args_simple(argc, argv, template_prune_usage, 0, NULL);
        if (r != CLI_CONTINUE)
                return r;
        http_path_init(&path, "/v1/templates/layers/prune");
        if (cli_request(cli, "POST", &path, NULL, CLI_REQUEST_TIMEOUT_S, NULL, &answer) < 0)
                return CLI_EXIT_FAILURE;
        return cli_output_show(cli->json, answer);
}

int cli_template_main(struct cli *cli, int argc, char **argv)
{
        static const struct cli_verb verbs[] = {
                { "ls", cli_template_ls },         { "get", cli_template_get },     { "build", cli_template_build },
                { "import", cli_template_import }, { "prune", cli_template_prune }, { "rm", cli_template_rm },
        };
        return cli_verb_dispatch(cli, verbs, ARRAY_SIZE(verbs), argc, argv, template_usage);
}
