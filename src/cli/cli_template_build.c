/* cli_template_build: `space template build -f Spacefile -t NAME:TAG DIR` (tars DIR, uploads
 * it, follows the build log as it is written, then reports the result) and
 * `space template import [--format rootfs|oci] -t NAME:TAG FILE`. */
#include "cli/cli_template_build.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli_build_progress.h"
#include "cli/cli_output.h"
#include "cli/cli_request.h"
#include "cli/cli_usage.h"

static const char build_usage[] =
        "usage: space template build [-f SPACEFILE] -t NAME[:TAG] [--no-follow] DIR\n"
        "       space template build NAME [--no-wait]     (a built-in or preset: debian, python, node)\n"
        "\n"
        "Sends DIR as the build context (a tar) with its Spacefile (DIR/Spacefile unless -f says\n"
        "otherwise) and follows the build log: steps, cache hits, timings, the output of RUN.\n"
        "Exits 0 when the template is built. --no-follow prints the operation id at once.\n";

static const char import_usage[] =
        "usage: space template import [--format rootfs|oci] -t NAME[:TAG] FILE\n"
        "\n"
        "Imports a root filesystem tarball (rootfs, the default) or an image archive (oci: an OCI\n"
        "layout tar as from `skopeo copy ... oci-archive:`, or `docker save` output).\n";

/* Adds one file from disk under the name `name`. */
static int add_file(struct archive *disk, struct archive *out, struct archive_entry *e, const char *name)
{
        archive_entry_set_pathname(e, name);
        if (archive_write_header(out, e) != ARCHIVE_OK)
                return -EIO;
        if (archive_entry_filetype(e) != AE_IFREG || archive_entry_size(e) == 0)
                return 0;
        const char *src = archive_entry_sourcepath(e);
        int fd = open(src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        char buf[65536];
        ssize_t n;
        while ((n = read(fd, buf, sizeof(buf))) > 0)
                if (archive_write_data(out, buf, (size_t)n) != n) {
                        close(fd);
                        return -EIO;
                }
        close(fd);
        (void)disk;
        return n < 0 ? -errno : 0;
}

/* The context as a tar in an unnamed temporary file; extra (the Spacefile from outside DIR)
 * is added as extra_name. Returns the fd, rewound, or -errno. */
static int tar_context(const char *dir, const char *extra, const char *extra_name)
{
        int fd = open("/tmp", O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        struct archive *out = archive_write_new();
        struct archive *disk = archive_read_disk_new();
        archive_write_set_format_pax_restricted(out);
        archive_read_disk_set_symlink_physical(disk);
        archive_read_disk_set_standard_lookup(disk);
        int r = archive_write_open_fd(out, fd) == ARCHIVE_OK && archive_read_disk_open(disk, dir) == ARCHIVE_OK ? 0 : -EIO;
        size_t dlen = strlen(dir);
        while (r == 0) {
                struct archive_entry *e = archive_entry_new();
                int rc = archive_read_next_header2(disk, e);
                if (rc == ARCHIVE_EOF) {
                        archive_entry_free(e);
                        break;
                }
                if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) {
                        fprintf(stderr, "space: reading %s: %s\n", dir, archive_error_string(disk));
                        archive_entry_free(e);
                        r = -EIO;
                        break;
                }
                archive_read_disk_descend(disk);
                const char *p = archive_entry_pathname(e);
                const char *rel = strncmp(p, dir, dlen) == 0 ? p + dlen : p;
                while (*rel == '/')
                        rel++;
                if (*rel)
                        r = add_file(disk, out, e, rel);
                archive_entry_free(e);
        }
        if (r == 0 && extra) {
                struct archive_entry *e = archive_entry_new();
                struct stat st;
                if (stat(extra, &st) < 0 || !S_ISREG(st.st_mode)) {
                        r = -ENOENT;
                } else {
                        archive_entry_copy_stat(e, &st);
                        archive_entry_set_uid(e, 0);
                        archive_entry_set_gid(e, 0);
                        archive_entry_copy_sourcepath(e, extra);
                        r = add_file(disk, out, e, extra_name);
                }
                archive_entry_free(e);
        }
        if (archive_write_close(out) != ARCHIVE_OK && r == 0)
                r = -EIO;
        archive_write_free(out);
        archive_read_free(disk);
        if (r < 0 || lseek(fd, 0, SEEK_SET) < 0) {
                close(fd);
                return r < 0 ? r : -errno;
        }
        return fd;
}

static ssize_t read_fd(void *userdata, char *buf, size_t max)
{
        ssize_t n = read(*(int *)userdata, buf, max);
        return n < 0 ? -errno : n;
}

/* The log goes to stdout (to stderr with --json, where stdout is the answer). */
static int write_log(void *userdata, const char *data, size_t len)
{
        FILE *out = userdata;
        cli_build_progress_clear();
        int r = fwrite(data, 1, len, out) == len && fflush(out) == 0 ? 0 : -EIO;
        cli_build_progress_feed(data, len);
        return r;
}

static long long file_size(int fd)
{
        struct stat st;
        return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? (long long)st.st_size : -1;
}

static int upload(struct cli *cli, struct http_path *path, int fd, const char *content_type, json_t **ret)
{
        struct http_client_stream stream = {
                .content_type = content_type,
                .accept = "application/json",
                .read = read_fd,
                .size = file_size(fd),
                .userdata = &fd,
        };
        int r = cli_request_stream(cli, "POST", path, &stream, NULL, ret);
        if (r == -ECANCELED)
                fprintf(stderr, "space: cannot read the upload: %s\n", strerror(-stream.error));
        return r;
}

static int await_build(struct cli *cli, const char *op_id, const char *name, bool report);

static volatile sig_atomic_t build_interrupted;

static void on_build_signal(int sig)
{
        build_interrupted = sig;
}

/* Ctrl-C (or SIGTERM) while following a build: the build is cancelled, not left running. */
static int cancel_build(struct cli *cli, const char *op_id, int sig)
{
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_json_ json_t *answer = NULL;
        http_path_init(&path, "/v1/operations");
        http_path_segment(&path, op_id);
        http_path_segment(&path, "cancel");
        if (cli_request(cli, "POST", &path, NULL, CLI_REQUEST_TIMEOUT_S, NULL, &answer) < 0)
                fprintf(stderr, "space: the build goes on; stop it with 'space op cancel %s'\n", op_id);
        else
                fprintf(stderr, "space: build cancelled (operation %s)\n", op_id);
        return 128 + sig;
}

/* log_out: where the build's log goes; report: the name (or the JSON) on stdout at the end. */
static int follow(struct cli *cli, const char *op_id, const char *name, FILE *log_out, bool report)
{
        _cleanup_http_path_ struct http_path log = {};
        _cleanup_json_ json_t *ignored = NULL;
        http_path_init(&log, "/v1/templates/builds");
        http_path_segment(&log, op_id);
        http_path_segment(&log, "log");
        http_path_query(&log, "follow", "true");
        struct http_client_stream stream = { .accept = "text/plain", .write = write_log, .size = -1, .userdata = log_out };
        struct sigaction sa = { .sa_handler = on_build_signal }, old_int, old_term;
        build_interrupted = 0;
        stream.interrupted = &build_interrupted;
        sigaction(SIGINT, &sa, &old_int);
        sigaction(SIGTERM, &sa, &old_term);
        if (!cli->json)
                cli_build_progress_start();
        int r = cli_request_stream(cli, "GET", &log, &stream, NULL, &ignored);
        cli_build_progress_stop();
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGTERM, &old_term, NULL);
        if (build_interrupted)
                return cancel_build(cli, op_id, build_interrupted);
        if (r < 0)
                return CLI_EXIT_FAILURE;
        return await_build(cli, op_id, name, report);
}

/* Polls the build's operation to its end and reports how it ended. */
static int await_build(struct cli *cli, const char *op_id, const char *name, bool report)
{
        _cleanup_http_path_ struct http_path opp = {};
        _cleanup_json_ json_t *op = NULL;
        http_path_init(&opp, "/v1/operations");
        http_path_segment(&opp, op_id);
        for (int i = 0; i < 600; i++) {
                json_decref(op);
                op = NULL;
                if (cli_request(cli, "GET", &opp, NULL, CLI_REQUEST_TIMEOUT_S, NULL, &op) < 0)
                        return CLI_EXIT_FAILURE;
                const char *state = cli_output_string(op, "state");
                if (state && cli_streq(state, "succeeded")) {
                        if (!report)
                                return CLI_EXIT_OK;
                        if (cli->json)
                                return cli_output_exit(cli_output_json(op));
                        printf("%s\n", name);
                        return CLI_EXIT_OK;
                }
                if (state && cli_streq(state, "failed")) {
                        const char *msg = cli_output_string(op, "error.message"), *code = cli_output_string(op, "error.code");
                        fprintf(stderr, "space: build of %s failed: %s (%s)\n", name, msg ? msg : "?", code ? code : "?");
                        return CLI_EXIT_FAILURE;
                }
                nanosleep(&(struct timespec){ .tv_nsec = 100 * 1000 * 1000 }, NULL);
        }
        fprintf(stderr, "space: build %s has not finished; wait for it with 'space op wait %s'\n", op_id, op_id);
        return CLI_EXIT_FAILURE;
}

int cli_template_build_follow(struct cli *cli, const char *op_id, const char *name)
{
        return follow(cli, op_id, name, cli->json ? stderr : stdout, true);
}

int cli_template_build_if_needed(struct cli *cli, const char *name)
{
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_json_ json_t *answer = NULL, *built = NULL;
        long status = 0;
        http_path_init(&path, "/v1/templates");
        http_path_segment(&path, name);
        /* Not found, not allowed, unreachable: the create itself says so. */
        if (cli_request_quiet(cli, "GET", &path, CLI_REQUEST_TIMEOUT_S, &status, &answer) < 0 || status != 200)
                return 0;
        const char *state = cli_output_string(answer, "state");
        if (!state || !(cli_streq(state, "not_built") || cli_streq(state, "failed")))
                return 0;
        fprintf(stderr, "space: template %s is not built yet: building it first\n", name);
        http_path_segment(&path, "build");
        if (cli_request(cli, "POST", &path, NULL, CLI_REQUEST_TIMEOUT_S, NULL, &built) < 0)
                return -1;
        const char *op = cli_output_string(built, "operation.id");
        if (!op)
                return -1;
        return follow(cli, op, name, stderr, false) == CLI_EXIT_OK ? 0 : -1;
}

bool cli_template_build_wants_context(int argc, char **argv)
{
        for (int i = 1; i < argc; i++)
                if (cli_streq(argv[i], "-t") || cli_streq(argv[i], "--tag") || strncmp(argv[i], "--tag=", 6) == 0 ||
                    strncmp(argv[i], "-t", 2) == 0)
                        return true;
        return false;
}

int cli_template_build_context(struct cli *cli, int argc, char **argv)
{
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "file", required_argument, NULL, 'f' },
                { "tag", required_argument, NULL, 't' },
                { "no-follow", no_argument, NULL, 'n' },
                {},
        };
        const char *file = NULL, *tag = NULL;
        bool no_follow = false;
        int c;
        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":hf:t:", options, NULL)) != -1) {
                switch (c) {
                case 'h':
                        return cli_usage_print(build_usage);
                case 'f':
                        file = optarg;
                        break;
                case 't':
                        tag = optarg;
                        break;
                case 'n':
                        no_follow = true;
                        break;
                default:
                        return cli_usage_option_error(build_usage, c, argv);
                }
        }
        if (!tag || optind != argc - 1)
                return cli_usage_error(build_usage, "give -t NAME[:TAG] and one context directory");
        char dir[PATH_MAX], spacefile[PATH_MAX];
        if (!realpath(argv[optind], dir)) {
                fprintf(stderr, "space: %s: %m\n", argv[optind]);
                return CLI_EXIT_FAILURE;
        }
        const char *name_in_tar = "Spacefile", *extra = NULL;
        if (file) {
                if (!realpath(file, spacefile)) {
                        fprintf(stderr, "space: %s: %m\n", file);
                        return CLI_EXIT_FAILURE;
                }
                size_t dlen = strlen(dir);
                if (strncmp(spacefile, dir, dlen) == 0 && spacefile[dlen] == '/') {
                        name_in_tar = spacefile + dlen + 1; /* inside the context already */
                } else {
                        extra = spacefile;
                        name_in_tar = ".space-spacefile";
                }
        }
        _cleanup_close_ int fd = tar_context(dir, extra, name_in_tar);
        if (fd < 0) {
                fprintf(stderr, "space: cannot make a tar of %s: %s\n", dir, strerror(-fd));
                return CLI_EXIT_FAILURE;
        }
        fprintf(stderr, "space: sending a build context of %lld bytes\n", file_size(fd));
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_json_ json_t *answer = NULL;
        http_path_init(&path, "/v1/templates");
        http_path_query(&path, "name", tag);
        http_path_query(&path, "spacefile", name_in_tar);
        if (upload(cli, &path, fd, "application/x-tar", &answer) < 0)
                return CLI_EXIT_FAILURE;
        const char *op = cli_output_string(answer, "operation.id"), *name = cli_output_string(answer, "template.name");
        if (!op)
                return cli_output_exit(-EBADMSG);
        if (no_follow) {
                if (cli->json)
                        return cli_output_exit(cli_output_json(answer));
                printf("%s\n", op);
                return CLI_EXIT_OK;
        }
        return cli_template_build_follow(cli, op, name ? name : tag);
}

int cli_template_import(struct cli *cli, int argc, char **argv)
{
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "tag", required_argument, NULL, 't' },
                { "format", required_argument, NULL, 'F' },
                {},
        };
        const char *tag = NULL, *format = "rootfs";
        int c;
        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":ht:", options, NULL)) != -1) {
                switch (c) {
                case 'h':
                        return cli_usage_print(import_usage);
                case 't':
                        tag = optarg;
                        break;
                case 'F':
                        format = optarg;
                        break;
                default:
                        return cli_usage_option_error(import_usage, c, argv);
                }
        }
        if (!tag || optind != argc - 1)
                return cli_usage_error(import_usage, "give -t NAME[:TAG] and one archive");
        _cleanup_close_ int fd = open(argv[optind], O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
                fprintf(stderr, "space: cannot read %s: %m\n", argv[optind]);
                return CLI_EXIT_FAILURE;
        }
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_json_ json_t *answer = NULL;
        http_path_init(&path, "/v1/templates/import");
        http_path_query(&path, "name", tag);
        http_path_query(&path, "format", format);
        if (upload(cli, &path, fd, "application/x-tar", &answer) < 0)
                return CLI_EXIT_FAILURE;
        if (cli->json)
                return cli_output_exit(cli_output_json(answer));
        const char *name = cli_output_string(answer, "name"), *digest = cli_output_string(answer, "environment.digest");
        printf("%s %s\n", name ? name : tag, digest ? digest : "");
        return CLI_EXIT_OK;
}
