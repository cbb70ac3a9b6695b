/* cli_exec: `space exec` — run a command in a sandbox and behave like it: its stdout on
 * stdout, its stderr on stderr (exact bytes), its exit code. The command is streamed over
 * the data plane (cli_attach.c); with --json it runs through POST …/exec and the one answer
 * is printed. */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>

#include "cli/base64.h"
#include "cli/cli_attach.h"
#include "cli/cli.h"
#include "cli/cli_args.h"
#include "cli/cli_output.h"
#include "cli/cli_request.h"
#include "cli/cli_sandbox_id.h"
#include "cli/cli_usage.h"

/* The schema's cap on "stdin"; spaced's body limit (1 MiB by default, --max-body) is
 * usually lower and answers payload_too_large itself. */
#define CLI_EXEC_STDIN_MAX (64u << 20)
#define CLI_EXEC_TIMEOUT_MAX_S 3600LL
#define CLI_EXEC_DEFAULT_TIMEOUT_S 60LL

static const char exec_usage[] =
        "usage: space exec [-i] [-t] [--env K=V]... [--cwd DIR] [--user U] [--timeout S] ID -- CMD [ARGS...]\n"
        "\n"
        "Runs CMD in the running sandbox ID. Its output is written here byte for byte as it comes\n"
        "and space exits with its exit code (128+N if it died of signal N), when the command ends.\n"
        "SIGINT (Ctrl-C), SIGTERM and SIGHUP sent to space go to the command's process group; a\n"
        "dropped connection is resumed without losing output.\n"
        "\n"
        "  -i, --stdin   stream what this process reads on stdin to the command (EOF closes it)\n"
        "  -t, --tty     run on a pseudo-terminal of this terminal's size (use with -i for an\n"
        "                interactive shell: space exec -it ID -- sh); ignored, with a note,\n"
        "                when stdin is not a terminal\n"
        "  --env K=V     environment variable (repeatable)\n"
        "  --cwd DIR     working directory\n"
        "  --user U      run as this user of the sandbox (name or uid)\n"
        "  --timeout S   kill the command after S seconds (default: none when streamed, 60 with\n"
        "                --json; max 3600 with --json)\n"
        "  --json        run through POST /v1/sandboxes/ID/exec and print its JSON answer\n"
        "                (stdin, if given, must then be UTF-8 text without NUL)\n";

/* Reads all of stdin into body.stdin. -EFBIG: too large; -EILSEQ: not UTF-8; -EINVAL: NUL. */
static int cli_exec_read_stdin(json_t *body)
{
        _cleanup_free_ char *buf = malloc(CLI_EXEC_STDIN_MAX + 1);
        size_t len = 0;

        if (!buf)
                return -ENOMEM;
        for (;;) {
                ssize_t n = read(STDIN_FILENO, buf + len, CLI_EXEC_STDIN_MAX + 1 - len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        break;
                len += (size_t)n;
                if (len > CLI_EXEC_STDIN_MAX)
                        return -EFBIG;
        }

        /* "stdin" is a JSON string: it must be UTF-8, and a NUL ("\u0000") is refused by most
         * JSON parsers, spaced's included. */
        if (memchr(buf, '\0', len))
                return -EINVAL;
        json_t *text = json_stringn(buf, len);
        if (!text)
                return -EILSEQ;
        return json_object_set_new(body, "stdin", text) < 0 ? -ENOMEM : 0;
}

/* Writes answer[member] to f, decoded: base64 was asked for, but follow what spaced says. */
static int cli_exec_write(const json_t *answer, const char *member, FILE *f)
{
        _cleanup_free_ unsigned char *decoded = NULL;
        const char *encoding = json_string_value(json_object_get(answer, "encoding"));
        json_t *encoded = json_object_get(answer, member);
        const void *data;
        size_t len = 0;

        if (json_is_null(encoded) || !encoded)
                return 0;
        if (!json_is_string(encoded))
                return -EBADMSG;
        if (encoding && cli_streq(encoding, "utf8")) {
                data = json_string_value(encoded);
                len = json_string_length(encoded);
        } else {
                int r = base64_decode(json_string_value(encoded), json_string_length(encoded), &decoded, &len);
                if (r < 0)
                        return r == -EINVAL ? -EBADMSG : r;
                data = decoded;
        }
        if (len > 0 && fwrite(data, 1, len, f) != len)
                return -EIO;
        return fflush(f) == 0 ? 0 : -EIO;
}

static void cli_exec_notes(const json_t *answer)
{
        static const struct {
                const char *member;
                const char *note;
        } notes[] = {
                { "timed_out", "the command timed out and was killed" },
                { "oom_killed", "the command ran out of memory and was killed" },
                { "pids_limit_hit", "the command hit the sandbox's process limit" },
                { "truncated", "output was truncated (it went over spaced's per-stream cap)" },
        };

        for (size_t i = 0; i < ARRAY_SIZE(notes); i++)
                if (json_is_true(json_object_get(answer, notes[i].member)))
                        fprintf(stderr, "space: %s\n", notes[i].note);
}

static int cli_exec_exit_status(const json_t *answer)
{
        json_t *code = json_object_get(answer, "exit_code");

        if (!json_is_integer(code)) {
                fputs("space: spaced reported no exit code\n", stderr);
                return CLI_EXIT_FAILURE;
        }
        json_int_t v = json_integer_value(code);
        return v < 0 || v > 255 ? 255 : (int)v;
}

/* Parses the flags into body; leaves ID and CMD at argv[optind]. */
struct cli_exec_flags {
        bool read_stdin;
        bool tty;
        bool streamed;
        const char *user;
};

static int cli_exec_parse(int argc, char **argv, json_t *body, long long *ret_timeout, struct cli_exec_flags *flags)
{
        enum { OPT_ENV = 256, OPT_CWD, OPT_TIMEOUT, OPT_USER };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "env", required_argument, NULL, OPT_ENV },
                { "cwd", required_argument, NULL, OPT_CWD },
                { "timeout", required_argument, NULL, OPT_TIMEOUT },
                { "stdin", no_argument, NULL, 'i' },
                { "tty", no_argument, NULL, 't' },
                { "user", required_argument, NULL, OPT_USER },
                {},
        };
        bool read_stdin = false;
        long long timeout = CLI_EXEC_DEFAULT_TIMEOUT_S;
        long long max_timeout = flags->streamed ? 7 * 86400LL : CLI_EXEC_TIMEOUT_MAX_S;
        int c, r;

        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":hit", options, NULL)) != -1) {
                switch (c) {
                case 'h':
                        return cli_usage_print(exec_usage);
                case 't':
                        flags->tty = true;
                        break;
                case OPT_USER:
                        flags->user = optarg;
                        break;
                case OPT_ENV:
                        if (cli_args_pair(json_object_get(body, "env"), optarg) < 0)
                                return cli_usage_error(exec_usage, "--env needs KEY=VALUE in UTF-8, not '%s'", optarg);
                        break;
                case OPT_CWD:
                        if (json_object_set_new(body, "cwd", json_string(optarg)) < 0)
                                return cli_usage_error(exec_usage, "--cwd must be UTF-8");
                        break;
                case OPT_TIMEOUT:
                        if (cli_args_integer(optarg, 1, max_timeout, &timeout) < 0)
                                return cli_usage_error(exec_usage, "--timeout needs whole seconds from 1 to %lld", max_timeout);
                        if (json_object_set_new(body, "timeout_s", json_integer(timeout)) < 0)
                                return cli_output_exit(-ENOMEM);
                        break;
                case 'i':
                        read_stdin = true;
                        break;
                default:
                        r = cli_usage_option_error(exec_usage, c, argv);
                        fputs("space: put -- between the sandbox id and the command\n", stderr);
                        return r;
                }
        }
        if (argc - optind < 2)
                return cli_usage_error(exec_usage, argc == optind ? "missing sandbox id" : "missing command");

        json_t *cmd = json_object_get(body, "cmd");
        for (int i = optind + 1; i < argc; i++)
                if (json_array_append_new(cmd, json_string(argv[i])) < 0)
                        return cli_usage_error(exec_usage, "command arguments must be UTF-8");
        if (json_object_size(json_object_get(body, "env")) == 0)
                json_object_del(body, "env");

        flags->read_stdin = read_stdin;
        if (flags->user && json_object_set_new(body, "user", json_string(flags->user)) < 0)
                return cli_usage_error(exec_usage, "--user must be UTF-8");
        if (flags->streamed) {
                *ret_timeout = timeout;
                return CLI_CONTINUE;
        }
        if (flags->tty || flags->user)
                return cli_usage_error(exec_usage, "--tty and --user need the streamed path (drop --json)");
        if (read_stdin) {
                r = cli_exec_read_stdin(body);
                if (r == -EFBIG)
                        fprintf(stderr, "space: stdin is larger than %u MiB, the API's limit\n", CLI_EXEC_STDIN_MAX >> 20);
                else if (r == -EILSEQ)
                        fputs("space: stdin is not UTF-8 text (the API takes stdin as a JSON string)\n", stderr);
                else if (r == -EINVAL)
                        fputs("space: stdin contains a NUL byte (the API takes stdin as a JSON string)\n", stderr);
                else if (r < 0)
                        fprintf(stderr, "space: cannot read stdin: %s\n", strerror(-r));
                if (r < 0)
                        return CLI_EXIT_FAILURE;
        }

        *ret_timeout = timeout;
        return CLI_CONTINUE;
}

int cli_exec_main(struct cli *cli, int argc, char **argv)
{
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_json_ json_t *answer = NULL;
        _cleanup_json_ json_t *body = json_pack("{s:[], s:{}}", "cmd", "env");
        struct cli_exec_flags flags = { .streamed = !cli->json };
        long long timeout = 0;

        if (!body)
                return cli_output_exit(-ENOMEM);
        int r = cli_exec_parse(argc, argv, body, &timeout, &flags);
        if (r != CLI_CONTINUE)
                return r;
        if (cli_sandbox_id_resolve(cli, &argv[optind]) < 0)
                return CLI_EXIT_FAILURE;
        if (flags.tty && !isatty(STDIN_FILENO)) {
                /* A remote terminal fed from a pipe never sees an EOF (a terminal has none:
                 * ^D is a byte) and echoes the input back: run without one, as kubectl does. */
                fputs("space: stdin is not a terminal: running without one (-t ignored)\n", stderr);
                flags.tty = false;
        }
        if (flags.streamed)
                return cli_attach_exec(cli, argv[optind], body, flags.read_stdin, flags.tty);
        if (json_object_set_new(body, "encoding", json_string("base64")) < 0)
                return cli_output_exit(-ENOMEM);

        http_path_init(&path, "/v1/sandboxes");
        http_path_segment(&path, argv[optind]);
        http_path_segment(&path, "exec");
        /* The command may run for its whole timeout; give spaced time to answer after that. */
        if (cli_request(cli, "POST", &path, body, (long)timeout + CLI_REQUEST_TIMEOUT_S, NULL, &answer) < 0)
                return CLI_EXIT_FAILURE;

        if (cli->json) {
                if (cli_output_json(answer) < 0)
                        return cli_output_exit(-EIO);
        } else {
                r = cli_exec_write(answer, "stdout", stdout);
                if (r >= 0)
                        r = cli_exec_write(answer, "stderr", stderr);
                if (r < 0)
                        return cli_output_exit(r);
                cli_exec_notes(answer);
        }
        return cli_exec_exit_status(answer);
}
