/* cli_attach: being at a streamed command's side — start one (`space exec`) or come back to
 * one (`space attach`): its output here as it comes (cli_command_stream), this stdin to it,
 * Ctrl-C/SIGTERM/SIGHUP and window size changes passed on, and its exit code. */
#include "cli/cli_attach.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "cli/cli_command_stream.h"
#include "cli/cli_output.h"
#include "cli/cli_request.h"
#include "cli/cli_sandbox_id.h"
#include "cli/cli_session.h"
#include "cli/cli_usage.h"
#include "cli/http_client.h"

#define ATTACH_SESSION_TTL_S 604800
#define STDIN_CHUNK 65536

struct attach {
        struct cli_session session;
        struct cli_command_stream stream;
        char command_id[64];
        bool tty;
};

static void command_path(const struct attach *a, struct http_path *p, const char *leaf, const char *leaf2)
{
        http_path_init(p, "/v1/sandboxes");
        http_path_segment(p, a->session.sandbox_id);
        http_path_segment(p, "commands");
        if (a->command_id[0])
                http_path_segment(p, a->command_id);
        if (leaf)
                http_path_segment(p, leaf);
        if (leaf2)
                http_path_segment(p, leaf2);
}

/* ---- stdin, signals, window size: each on its own thread and client ---- */

struct buffer_reader {
        const char *data;
        size_t len, off;
};

static ssize_t buffer_read(void *userdata, char *buf, size_t max)
{
        struct buffer_reader *b = userdata;
        size_t n = b->len - b->off < max ? b->len - b->off : max;
        memcpy(buf, b->data + b->off, n);
        b->off += n;
        return (ssize_t)n;
}

static void buffer_rewind(void *userdata)
{
        ((struct buffer_reader *)userdata)->off = 0;
}

static int post(const struct attach *a, struct cli *c, const char *leaf, const char *leaf2, const json_t *body, const char *raw,
                size_t raw_len)
{
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_json_ json_t *answer = NULL;
        command_path(a, &path, leaf, leaf2);
        if (!raw)
                return cli_request(c, "POST", &path, body, CLI_REQUEST_TIMEOUT_S, NULL, &answer);
        struct buffer_reader b = { raw, raw_len, 0 };
        struct http_client_stream s = { .content_type = "application/octet-stream",
                                        .read = buffer_read,
                                        .rewind = buffer_rewind,
                                        .size = (long long)raw_len,
                                        .userdata = &b };
        return cli_request_stream(c, "POST", &path, &s, NULL, &answer);
}

static void *stdin_main(void *arg)
{
        struct attach *a = arg;
        struct cli c;
        char buf[STDIN_CHUNK];
        cli_session_clone(&a->session, &c);
        for (;;) {
                ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                if (post(a, &c, "stdin", NULL, NULL, buf, (size_t)n) < 0) {
                        /* Not an EOF: closing the command's stdin would pass a cut input off
                         * as whole. It stays open for whoever attaches next. */
                        fprintf(stderr, "space: stdin is no longer passed on; the command's stays open (space attach -i %s %s)\n",
                                a->session.sandbox_id, a->command_id);
                        cli_session_done(&c);
                        return NULL;
                }
        }
        /* EOF (or a read error) closes the command's stdin; on a terminal that is a ^D. */
        (void)post(a, &c, "stdin", "close", NULL, NULL, 0);
        cli_session_done(&c);
        return NULL;
}

static void window_size(unsigned *cols, unsigned *rows)
{
        struct winsize ws = { 0 };
        if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col && ws.ws_row) {
                *cols = ws.ws_col;
                *rows = ws.ws_row;
        } else {
                *cols = 80;
                *rows = 24;
        }
}

static void send_window_size(const struct attach *a, struct cli *c)
{
        unsigned cols, rows;
        window_size(&cols, &rows);
        _cleanup_json_ json_t *body = json_pack("{s:i, s:i}", "cols", cols, "rows", rows);
        (void)post(a, c, "resize", NULL, body, NULL, 0);
}

static void signal_set(sigset_t *set)
{
        sigemptyset(set);
        sigaddset(set, SIGINT);
        sigaddset(set, SIGTERM);
        sigaddset(set, SIGHUP);
        sigaddset(set, SIGWINCH);
}

static void *signal_main(void *arg)
{
        struct attach *a = arg;
        struct cli c;
        sigset_t set;
        signal_set(&set);
        cli_session_clone(&a->session, &c);
        for (int sig; sigwait(&set, &sig) == 0;) {
                if (sig == SIGWINCH) {
                        if (a->tty)
                                send_window_size(a, &c);
                        continue;
                }
                _cleanup_json_ json_t *body = json_pack("{s:i}", "signal", sig);
                (void)post(a, &c, "signal", NULL, body, NULL, 0);
        }
        cli_session_done(&c);
        return NULL;
}

static struct termios saved_termios;
static bool termios_saved;

static void terminal_restore(void)
{
        if (termios_saved)
                tcsetattr(STDIN_FILENO, TCSADRAIN, &saved_termios);
}

static void terminal_raw(void)
{
        struct termios t;
        if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &saved_termios) < 0)
                return;
        termios_saved = true;
        atexit(terminal_restore);
        t = saved_termios;
        cfmakeraw(&t);
        tcsetattr(STDIN_FILENO, TCSADRAIN, &t);
}

/* Signals go to the signal thread: blocked before any thread starts. */
static void block_signals(void)
{
        sigset_t set;
        signal_set(&set);
        pthread_sigmask(SIG_BLOCK, &set, NULL);
}

/* With the command known: terminal, stdin and signal threads, its output to its end. */
static int be_there(struct attach *a, bool interactive)
{
        pthread_t t;

        a->stream = (struct cli_command_stream){ .data = &a->session.data,
                                                 .sandbox_id = a->session.sandbox_id,
                                                 .command_id = a->command_id };
        if (a->tty)
                terminal_raw();
        if (interactive && pthread_create(&t, NULL, stdin_main, a) == 0)
                pthread_detach(t);
        if (pthread_create(&t, NULL, signal_main, a) == 0)
                pthread_detach(t);
        int r = cli_command_stream_follow(&a->stream);
        terminal_restore();
        termios_saved = false;
        return r == 0 ? a->stream.exit_status : CLI_EXIT_FAILURE;
}

static int open_session(struct cli *cli, const char *sandbox_id, struct attach *a)
{
        int r = cli_session_open(cli, sandbox_id, ATTACH_SESSION_TTL_S, &a->session);
        /* From here on a restart of spaced is ridden out (cli_retry.h). */
        a->session.data.retry = true;
        return r;
}

static int start(struct attach *a, json_t *body)
{
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_json_ json_t *answer = NULL;
        command_path(a, &path, NULL, NULL);
        if (cli_request(&a->session.data, "POST", &path, body, CLI_REQUEST_TIMEOUT_S, NULL, &answer) < 0)
                return -1;
        const char *id = json_string_value(json_object_get(answer, "command_id"));
        if (!id) {
                fputs("space: spaced gave no command id\n", stderr);
                return -1;
        }
        snprintf(a->command_id, sizeof(a->command_id), "%s", id);
        return 0;
}

int cli_attach_exec(struct cli *cli, const char *sandbox_id, json_t *body, bool interactive, bool tty)
{
        struct attach a = { .tty = tty };
        int status = CLI_EXIT_FAILURE;

        block_signals();
        if (tty) {
                unsigned cols, rows;
                window_size(&cols, &rows);
                json_object_set_new(body, "tty", json_pack("{s:i, s:i}", "cols", cols, "rows", rows));
        }
        if (interactive)
                json_object_set_new(body, "stdin", json_true());
        if (open_session(cli, sandbox_id, &a) == 0 && start(&a, body) == 0)
                status = be_there(&a, interactive);
        cli_session_close(&a.session);
        return status;
}

static const char attach_usage[] =
        "usage: space attach [-i] ID CMD\n"
        "\n"
        "Comes back to the streamed command CMD (a cmd-... id, as `space exec` prints when it loses\n"
        "spaced) of the sandbox ID: its output from the start, then as it comes, and space exits\n"
        "with its exit code. SIGINT (Ctrl-C), SIGTERM and SIGHUP go to the command's process\n"
        "group; on a command started with -t, this terminal is its terminal.\n"
        "\n"
        "  -i, --stdin   stream this stdin to the command (it was started with -i); EOF closes it\n";

int cli_attach_main(struct cli *cli, int argc, char **argv)
{
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "stdin", no_argument, NULL, 'i' },
                {},
        };
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_json_ json_t *command = NULL;
        struct attach a = { 0 };
        bool interactive = false;
        int c, status = CLI_EXIT_FAILURE;

        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":hi", options, NULL)) != -1) {
                if (c == 'h')
                        return cli_usage_print(attach_usage);
                if (c != 'i')
                        return cli_usage_option_error(attach_usage, c, argv);
                interactive = true;
        }
        if (argc - optind != 2)
                return cli_usage_error(attach_usage, "give a sandbox id and a command id");
        if (cli_sandbox_id_resolve(cli, &argv[optind]) < 0)
                return CLI_EXIT_FAILURE;
        block_signals();
        if (open_session(cli, argv[optind], &a) < 0)
                goto out;
        snprintf(a.command_id, sizeof(a.command_id), "%s", argv[optind + 1]);
        command_path(&a, &path, NULL, NULL);
        if (cli_request(&a.session.data, "GET", &path, NULL, CLI_REQUEST_TIMEOUT_S, NULL, &command) < 0)
                goto out;
        const json_t *spec = json_object_get(command, "spec");
        bool running = json_is_string(json_object_get(command, "state")) &&
                !cli_streq(cli_output_string(command, "state"), "exited") &&
                !cli_streq(cli_output_string(command, "state"), "lost");
        if (interactive && !json_is_true(json_object_get(spec, "stdin"))) {
                fputs("space: the command was not started with -i: its stdin is closed\n", stderr);
                interactive = false;
        }
        a.tty = running && json_is_object(json_object_get(spec, "tty")) && isatty(STDIN_FILENO);
        if (a.tty) /* the terminal is this one now */
                send_window_size(&a, &a.session.data);
        status = be_there(&a, interactive && running);
out:
        cli_session_close(&a.session);
        return status;
}
