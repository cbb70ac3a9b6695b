/* cli_cp: `space cp` — one file to or from a sandbox, streamed both ways (nothing is held
 * whole in memory). The file routes are data plane: the CLI opens a session with its API
 * key (POST /v1/sandboxes/{id}/sessions), uses the session's attach token, and revokes it. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli_fd.h"
#include "cli/cli.h"
#include "cli/cli_args.h"
#include "cli/cli_output.h"
#include "cli/cli_request.h"
#include "cli/cli_sandbox_id.h"
#include "cli/cli_session.h"
#include "cli/cli_usage.h"

static const char cp_usage[] =
        "usage: space cp [-p] [--mode MODE] [--owner USER] [--user USER] SRC DST\n"
        "\n"
        "Copies one file between this machine and a sandbox. One of SRC and DST is\n"
        "SANDBOX:/absolute/path, the other a local path or '-' (stdin / stdout).\n"
        "  space cp sb-0123456789abcdef:/etc/os-release ./os-release\n"
        "  space cp build.tar.gz sb-0123456789abcdef:/work/\n"
        "A local DST that is a directory, or a sandbox DST ending in '/', gets SRC's name.\n"
        "A local file is written aside and renamed into place once complete, as a new file\n"
        "(0666 less the umask); an upload replaces the sandbox file atomically.\n"
        "\n"
        "  -p, --parents   upload: create missing directories in the sandbox\n"
        "  -p, --preserve  download: keep the sandbox file's permission bits (rwx only: never\n"
        "                  setuid, setgid or sticky; the owner is always you)\n"
        "  --mode MODE     permission bits of the uploaded file, octal (default: the local\n"
        "                  file's, 0644 from stdin)\n"
        "  --owner USER    owner of the uploaded file (a user of the sandbox)\n"
        "  --user USER     read or write as this user of the sandbox (default root)\n";

struct cp_remote {
        char sandbox[64];
        const char *path;
};

/* "ID:/path" -> remote (0); anything else is local (-1). "./a:b" is always local. */
static int cp_parse_remote(const char *arg, struct cp_remote *ret)
{
        const char *colon = strchr(arg, ':');
        if (!colon || colon == arg || (size_t)(colon - arg) >= sizeof(ret->sandbox) || colon[1] != '/')
                return -1;
        for (const char *p = arg; p < colon; p++)
                if (!(('a' <= *p && *p <= 'z') || ('A' <= *p && *p <= 'Z') || ('0' <= *p && *p <= '9') || strchr("._-", *p)))
                        return -1;
        memcpy(ret->sandbox, arg, (size_t)(colon - arg));
        ret->sandbox[colon - arg] = 0;
        ret->path = colon + 1;
        return 0;
}

/* A copy runs in an attach session (its token is checked when a transfer starts, so a short
 * lifetime is enough whatever the size). */
#define CP_SESSION_TTL_S 300

static int cp_write(void *userdata, const char *data, size_t len)
{
        return cli_fd_write_all(*(int *)userdata, data, len);
}

static ssize_t cp_read(void *userdata, char *buf, size_t max)
{
        return cli_fd_read(*(int *)userdata, buf, max);
}

struct cp_options {
        const char *mode, *owner, *user;
        bool parents;  /* upload */
        bool preserve; /* download */
};

/* The mode a downloaded file gets. The sandbox chooses X-Space-File-Mode, so it is never
 * trusted with more than rwx bits: a setuid-root file chosen by a sandbox must not appear
 * on the host. Without --preserve the file is made as any new file would be. */
static mode_t cp_download_mode(const char *header, bool preserve)
{
        mode_t mask = umask(0);
        umask(mask);
        unsigned long bits = 0666;
        if (preserve && header) {
                char *end;
                errno = 0;
                unsigned long v = strtoul(header, &end, 8);
                if (!errno && end != header && !*end && v <= 07777)
                        return (mode_t)(v & 0777);
        }
        return (mode_t)(bits & ~mask);
}

static void cp_path(struct http_path *path, const struct cp_remote *remote, const char *remote_path)
{
        http_path_init(path, "/v1/sandboxes");
        http_path_segment(path, remote->sandbox);
        http_path_segment(path, "files");
        http_path_query(path, "path", remote_path);
}

/* SANDBOX:/path -> local (or stdout). */
static int cp_download(struct cli *data, const struct cp_remote *remote, const char *local, const struct cp_options *o)
{
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_json_ json_t *answer = NULL;
        _cleanup_free_ char *target = NULL, *partial = NULL, *base_copy = strdup(remote->path);
        struct stat st;
        int fd = STDOUT_FILENO;

        if (!base_copy)
                return CLI_EXIT_FAILURE;
        cp_path(&path, remote, remote->path);
        if (o->user)
                http_path_query(&path, "user", o->user);
        if (local) {
                if (stat(local, &st) == 0 && S_ISDIR(st.st_mode)) {
                        if (asprintf(&target, "%s/%s", local, basename(base_copy)) < 0)
                                return CLI_EXIT_FAILURE;
                } else if (!(target = strdup(local))) {
                        return CLI_EXIT_FAILURE;
                }
                if (asprintf(&partial, "%s.partial-XXXXXX", target) < 0) {
                        partial = NULL;
                        return CLI_EXIT_FAILURE;
                }
                fd = mkostemp(partial, O_CLOEXEC);
                if (fd < 0) {
                        fprintf(stderr, "space: cannot write %s: %m\n", target);
                        return CLI_EXIT_FAILURE;
                }
        } else if (isatty(STDOUT_FILENO)) {
                return cli_usage_error(cp_usage, "refusing to write a file to a terminal: redirect stdout or give a path");
        }
        struct http_client_stream stream = {
                .accept = "application/octet-stream, application/json", .size = -1, .write = cp_write, .userdata = &fd
        };
        int r = cli_request_stream(data, "GET", &path, &stream, NULL, &answer);
        if (r == -ECANCELED)
                fprintf(stderr, "space: cannot write %s: %s\n", target ? target : "stdout", strerror(-stream.error));
        if (r == 0 && partial) {
                mode_t mode = cp_download_mode(http_client_header(data->http, "X-Space-File-Mode"), o->preserve);
                if (fchmod(fd, mode) < 0 || fsync(fd) < 0 || rename(partial, target) < 0) {
                        fprintf(stderr, "space: cannot write %s: %m\n", target);
                        r = -EIO;
                }
        }
        if (partial) {
                close(fd);
                if (r < 0)
                        (void)unlink(partial);
        }
        return r < 0 ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
}

/* local (or stdin) -> SANDBOX:/path. */
static int cp_upload(struct cli *data, const char *local, const struct cp_remote *remote, const struct cp_options *o)
{
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_json_ json_t *answer = NULL;
        _cleanup_free_ char *remote_path = NULL, *base_copy = local ? strdup(local) : NULL;
        _cleanup_close_ int owned = -1;
        char mode[8] = "";
        struct stat st;
        int fd = STDIN_FILENO;

        if (local) {
                fd = owned = open(local, O_RDONLY | O_CLOEXEC | O_NOCTTY);
                if (fd < 0 || fstat(fd, &st) < 0) {
                        fprintf(stderr, "space: cannot read %s: %m\n", local);
                        return CLI_EXIT_FAILURE;
                }
                if (!S_ISREG(st.st_mode))
                        return cli_usage_error(cp_usage, "%s is not a regular file (space cp copies one file)", local);
                snprintf(mode, sizeof(mode), "%04o", (unsigned)(st.st_mode & 0777));
        } else if (isatty(STDIN_FILENO)) {
                return cli_usage_error(cp_usage, "refusing to read a file from a terminal: redirect stdin or give a path");
        }
        size_t n = strlen(remote->path);
        if (remote->path[n - 1] == '/') {
                if (!local)
                        return cli_usage_error(cp_usage, "from stdin, give the file's name in the sandbox");
                if (!base_copy || asprintf(&remote_path, "%s%s", remote->path, basename(base_copy)) < 0)
                        return CLI_EXIT_FAILURE;
        } else if (!(remote_path = strdup(remote->path))) {
                return CLI_EXIT_FAILURE;
        }
        cp_path(&path, remote, remote_path);
        if (o->mode || mode[0])
                http_path_query(&path, "mode", o->mode ? o->mode : mode);
        if (o->owner)
                http_path_query(&path, "owner", o->owner);
        if (o->user)
                http_path_query(&path, "user", o->user);
        if (o->parents)
                http_path_query(&path, "parents", "true");
        struct http_client_stream stream = { .content_type = "application/octet-stream",
                                             .accept = "application/json",
                                             .read = cp_read,
                                             .size = local ? (long long)st.st_size : -1,
                                             .userdata = &fd };
        int r = cli_request_stream(data, "PUT", &path, &stream, NULL, &answer);
        if (r == -ECANCELED)
                fprintf(stderr, "space: cannot read %s: %s\n", local ? local : "stdin", strerror(-stream.error));
        if (r < 0)
                return CLI_EXIT_FAILURE;
        if (data->json)
                return cli_output_exit(cli_output_json(answer));
        return CLI_EXIT_OK;
}

int cli_cp_main(struct cli *cli, int argc, char **argv)
{
        enum { OPT_MODE = 256, OPT_OWNER, OPT_USER, OPT_PARENTS, OPT_PRESERVE };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "parents", no_argument, NULL, OPT_PARENTS },
                { "preserve", no_argument, NULL, OPT_PRESERVE },
                { "mode", required_argument, NULL, OPT_MODE },
                { "owner", required_argument, NULL, OPT_OWNER },
                { "user", required_argument, NULL, OPT_USER },
                {},
        };
        struct cp_options o = { 0 };
        bool short_p = false;
        struct cp_remote src, dst;
        struct cli_session session;
        int c;

        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":hp", options, NULL)) != -1) {
                switch (c) {
                case 'h':
                        return cli_usage_print(cp_usage);
                case 'p':
                        short_p = true;
                        break;
                case OPT_PARENTS:
                        o.parents = true;
                        break;
                case OPT_PRESERVE:
                        o.preserve = true;
                        break;
                case OPT_MODE:
                        o.mode = optarg;
                        break;
                case OPT_OWNER:
                        o.owner = optarg;
                        break;
                case OPT_USER:
                        o.user = optarg;
                        break;
                default:
                        return cli_usage_option_error(cp_usage, c, argv);
                }
        }
        if (argc - optind != 2)
                return cli_usage_error(cp_usage, "give a source and a destination");
        const char *a = argv[optind], *b = argv[optind + 1];
        bool src_remote = cp_parse_remote(a, &src) == 0, dst_remote = cp_parse_remote(b, &dst) == 0;
        if (src_remote == dst_remote)
                return cli_usage_error(cp_usage, "one of SRC and DST must be SANDBOX:/path, the other local");
        if (src_remote && (o.mode || o.owner || o.parents))
                return cli_usage_error(cp_usage, "--mode, --owner and --parents are for uploads");
        if (!src_remote && o.preserve)
                return cli_usage_error(cp_usage, "--preserve is for downloads (an upload takes --mode)");
        /* -p is --preserve one way and --parents the other, as cp and mkdir read it */
        if (short_p && src_remote)
                o.preserve = true;
        else if (short_p)
                o.parents = true;
        struct cp_remote *remote = src_remote ? &src : &dst;
        char *sandbox = remote->sandbox;
        if (cli_sandbox_id_resolve(cli, &sandbox) < 0)
                return CLI_EXIT_FAILURE;
        if (sandbox != remote->sandbox) /* resolved from a prefix */
                snprintf(remote->sandbox, sizeof(remote->sandbox), "%s", sandbox);
        if (cli_session_open(cli, remote->sandbox, CP_SESSION_TTL_S, &session) < 0) {
                cli_session_close(&session);
                return CLI_EXIT_FAILURE;
        }
        int r = src_remote ? cp_download(&session.data, &src, cli_streq(b, "-") ? NULL : b, &o)
                           : cp_upload(&session.data, cli_streq(a, "-") ? NULL : a, &dst, &o);
        cli_session_close(&session);
        return r;
}
