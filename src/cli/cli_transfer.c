/* cli_transfer: `space snapshot export|import` — a snapshot as a btrfs send stream, to keep
 * it or move it to another spaced. Both directions stream: the stream is never held whole. */
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli_fd.h"
#include "cli/cli.h"
#include "cli/cli_output.h"
#include "cli/cli_request.h"
#include "cli/cli_text.h"
#include "cli/cli_usage.h"

#define CLI_TRANSFER_MEDIA_TYPE "application/vnd.btrfs.send-stream"

static const char export_usage[] =
        "usage: space snapshot export SNAP [--full] [--parent P] [-o FILE]\n"
        "\n"
        "Writes snapshot SNAP as a btrfs send stream, for 'space snapshot import'.\n"
        "By default the stream is incremental against SNAP's parent snapshot when spaced still\n"
        "has it: only what changed travels, and the stream can only be imported where that\n"
        "parent is (it is named on stderr).\n"
        "\n"
        "  --full       a stream that stands alone\n"
        "  --parent P   incremental against snapshot P instead (a ready snapshot on spaced)\n"
        "  -o FILE      write to FILE (mode 0600; written aside and renamed to FILE once the\n"
        "               whole stream has arrived, so a failed export leaves no FILE behind);\n"
        "               default stdout, which must not be a terminal\n";

static const char import_usage[] =
        "usage: space snapshot import [--sandbox ID] [--label L] [--parent P] [-i FILE]\n"
        "\n"
        "Sends a stream made by 'space snapshot export' to spaced, which adds the snapshot it\n"
        "holds, under the same id. Prints the snapshot's id (with --json, the API's answer).\n"
        "\n"
        "  --sandbox ID  join sandbox ID (only for an incremental stream whose parent P is\n"
        "                a snapshot of ID)\n"
        "  --label L     its label (default \"imported\", at most 127 bytes)\n"
        "  --parent P    the parent an incremental export named: the stream is applied to\n"
        "                it, which must be on spaced already\n"
        "  -i FILE       read FILE; default stdin, which must not be a terminal\n";

/* Where an export goes: stdout or a device (written in place), or a regular file, written as
 * FILE.partial-XXXXXX and renamed to FILE once complete. */
struct cli_transfer_output {
        int fd;
        const char *path; /* NULL: stdout */
        char *partial;    /* the file being written; NULL when writing in place */
};

/* The partial file a signal must remove, while there is one. */
static char *volatile cli_transfer_partial;

static void cli_transfer_on_signal(int sig)
{
        char *partial = cli_transfer_partial;

        if (partial)
                (void)unlink(partial);
        raise(sig); /* SA_RESETHAND: now with the default action */
}

static void cli_transfer_catch_signals(void)
{
        static const int signals[] = { SIGINT, SIGTERM, SIGHUP };
        struct sigaction sa = { .sa_handler = cli_transfer_on_signal, .sa_flags = SA_RESETHAND | SA_NODEFER };

        struct sigaction old;

        /* A signal ignored by whoever started us (nohup) stays ignored. */
        for (size_t i = 0; i < ARRAY_SIZE(signals); i++)
                if (sigaction(signals[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
                        (void)sigaction(signals[i], &sa, NULL);
}

static void cli_transfer_output_release(struct cli_transfer_output *out)
{
        if (out->partial) {
                cli_transfer_partial = NULL;
                (void)unlink(out->partial);
                free(out->partial);
                out->partial = NULL;
        }
        if (out->fd > STDERR_FILENO)
                close(out->fd);
        out->fd = -1;
}

static int cli_transfer_output_open(struct cli_transfer_output *out, const char *path)
{
        struct stat st;

        *out = (struct cli_transfer_output){ .fd = -1, .path = path };
        if (!path) {
                out->fd = STDOUT_FILENO;
                return 0;
        }
        if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
                out->fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
                return out->fd < 0 ? -errno : 0;
        }
        if (asprintf(&out->partial, "%s.partial-XXXXXX", path) < 0) {
                out->partial = NULL;
                return -ENOMEM;
        }
        out->fd = mkostemp(out->partial, O_CLOEXEC);
        if (out->fd < 0) {
                int r = -errno;
                free(TAKE_PTR(out->partial));
                return r;
        }
        cli_transfer_partial = out->partial;
        cli_transfer_catch_signals();
        return 0;
}

/* The stream has all arrived: make FILE hold it. */
static int cli_transfer_output_commit(struct cli_transfer_output *out)
{
        if (!out->partial)
                return 0;
        if (fsync(out->fd) < 0 || close(TAKE_FD(out->fd)) < 0 || rename(out->partial, out->path) < 0)
                return -errno;
        cli_transfer_partial = NULL;
        free(TAKE_PTR(out->partial));
        return 0;
}

static int cli_transfer_write(void *userdata, const char *data, size_t len)
{
        struct cli_transfer_output *out = userdata;

        return cli_fd_write_all(out->fd, data, len);
}

static ssize_t cli_transfer_read(void *userdata, char *buf, size_t max)
{
        return cli_fd_read(*(int *)userdata, buf, max);
}

/* An incremental stream is of no use without its parent: say which it is. */
static void cli_transfer_note_parent(const struct cli *cli)
{
        _cleanup_free_ char *parent = NULL;
        const char *value = http_client_header(cli->http, "X-Space-Parent-Snapshot-Id");

        if (!value || cli_text_sanitize(value, &parent) < 0)
                return;
        fprintf(stderr, "space: the stream is incremental: import it where snapshot %s is, with --parent %s\n", parent, parent);
}

static int cli_transfer_export_run(struct cli *cli, const struct http_path *path, struct cli_transfer_output *out)
{
        _cleanup_json_ json_t *answer = NULL;
        struct http_client_stream stream = {
                .accept = CLI_TRANSFER_MEDIA_TYPE ", application/json",
                .size = -1,
                .write = cli_transfer_write,
                .userdata = out,
        };
        const char *target = out->path ? out->path : "stdout";

        int r = cli_request_stream(cli, "GET", path, &stream, NULL, &answer);
        if (r == -ECANCELED) {
                fprintf(stderr, "space: cannot write to %s: %s\n", target, strerror(-stream.error));
                return CLI_EXIT_FAILURE;
        }
        if (r < 0)
                return CLI_EXIT_FAILURE;
        if ((r = cli_transfer_output_commit(out)) < 0) {
                fprintf(stderr, "space: cannot write to %s: %s\n", target, strerror(-r));
                return CLI_EXIT_FAILURE;
        }
        cli_transfer_note_parent(cli);
        return CLI_EXIT_OK;
}

int cli_transfer_export(struct cli *cli, int argc, char **argv)
{
        enum { OPT_FULL = 256, OPT_PARENT };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "full", no_argument, NULL, OPT_FULL },
                { "parent", required_argument, NULL, OPT_PARENT },
                { "output", required_argument, NULL, 'o' },
                {},
        };
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_(cli_transfer_output_release) struct cli_transfer_output out = { .fd = -1 };
        const char *parent = NULL, *file = NULL;
        bool full = false;
        int c;

        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":ho:", options, NULL)) != -1) {
                switch (c) {
                case 'h':
                        return cli_usage_print(export_usage);
                case OPT_FULL:
                        full = true;
                        break;
                case OPT_PARENT:
                        parent = optarg;
                        break;
                case 'o':
                        file = cli_streq(optarg, "-") ? NULL : optarg;
                        break;
                default:
                        return cli_usage_option_error(export_usage, c, argv);
                }
        }
        if (optind >= argc)
                return cli_usage_error(export_usage, "missing snapshot id");
        if (optind + 1 < argc)
                return cli_usage_error(export_usage, "unexpected argument '%s'", argv[optind + 1]);
        if (full && parent)
                return cli_usage_error(export_usage, "give --full or --parent, not both");
        if (!file && isatty(STDOUT_FILENO))
                return cli_usage_error(export_usage,
                                       "refusing to write a binary stream to a terminal: "
                                       "use -o FILE or redirect stdout");

        http_path_init(&path, "/v1/snapshots");
        http_path_segment(&path, argv[optind]);
        http_path_segment(&path, "export");
        if (full)
                http_path_query(&path, "full", "true");
        if (parent)
                http_path_query(&path, "parent", parent);

        int r = cli_transfer_output_open(&out, file);
        if (r < 0) {
                fprintf(stderr, "space: cannot write to %s: %s\n", file, strerror(-r));
                return CLI_EXIT_FAILURE;
        }
        if (isatty(out.fd))
                return cli_usage_error(export_usage, "refusing to write a binary stream to a terminal");
        return cli_transfer_export_run(cli, &path, &out);
}

/* The length of what is left to read of fd when it is a regular file, else -1. */
static long long cli_transfer_input_size(int fd)
{
        struct stat st;

        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return -1;
        off_t pos = lseek(fd, 0, SEEK_CUR);
        return pos >= 0 && pos <= st.st_size ? (long long)(st.st_size - pos) : -1;
}

static int cli_transfer_import_run(struct cli *cli, const struct http_path *path, int fd, const char *file)
{
        _cleanup_json_ json_t *answer = NULL;
        struct http_client_stream stream = {
                .content_type = CLI_TRANSFER_MEDIA_TYPE,
                .accept = "application/json",
                .read = cli_transfer_read,
                .size = cli_transfer_input_size(fd),
                .userdata = &fd,
        };

        int r = cli_request_stream(cli, "POST", path, &stream, NULL, &answer);
        if (r == -ECANCELED) {
                fprintf(stderr, "space: cannot read %s: %s\n", file ? file : "stdin", strerror(-stream.error));
                return CLI_EXIT_FAILURE;
        }
        if (r < 0)
                return CLI_EXIT_FAILURE;
        if (cli->json)
                return cli_output_exit(cli_output_json(answer));
        const char *id = cli_output_string(answer, "id");
        if (!id)
                return cli_output_exit(-EBADMSG);
        printf("%s\n", id);
        return CLI_EXIT_OK;
}

int cli_transfer_import(struct cli *cli, int argc, char **argv)
{
        enum { OPT_SANDBOX = 256, OPT_LABEL, OPT_PARENT };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "sandbox", required_argument, NULL, OPT_SANDBOX },
                { "label", required_argument, NULL, OPT_LABEL },
                { "parent", required_argument, NULL, OPT_PARENT },
                { "input", required_argument, NULL, 'i' },
                {},
        };
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_close_ int owned_fd = -1;
        const char *file = NULL;
        int c;

        http_path_init(&path, "/v1/snapshots/import");
        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":hi:", options, NULL)) != -1) {
                switch (c) {
                case 'h':
                        return cli_usage_print(import_usage);
                case OPT_SANDBOX:
                        http_path_query(&path, "sandbox_id", optarg);
                        break;
                case OPT_LABEL: {
                        /* As for 'snapshot create': labels are JSON strings. */
                        _cleanup_json_ json_t *label = json_string(optarg);
                        if (!label)
                                return cli_usage_error(import_usage, "--label must be UTF-8");
                        http_path_query(&path, "label", optarg);
                        break;
                }
                case OPT_PARENT:
                        http_path_query(&path, "parent_snapshot_id", optarg);
                        break;
                case 'i':
                        file = cli_streq(optarg, "-") ? NULL : optarg;
                        break;
                default:
                        return cli_usage_option_error(import_usage, c, argv);
                }
        }
        if (optind < argc)
                return cli_usage_error(import_usage, "unexpected argument '%s'", argv[optind]);

        int fd = STDIN_FILENO;
        if (file) {
                fd = owned_fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
                if (fd < 0) {
                        fprintf(stderr, "space: cannot read %s: %m\n", file);
                        return CLI_EXIT_FAILURE;
                }
        }
        if (isatty(fd))
                return cli_usage_error(import_usage,
                                       "refusing to read a stream from a terminal: "
                                       "use -i FILE or redirect stdin");
        return cli_transfer_import_run(cli, &path, fd, file);
}
