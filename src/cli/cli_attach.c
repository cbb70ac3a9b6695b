/* cli_attach: `space exec` over the data plane — start a streamed command, copy its output
 * here as it comes (resuming after a dropped connection), feed it stdin, pass Ctrl-C and
 * window size changes on, and exit with its exit code. */
#include "cli/cli_fd.h"
#include "cli/cli_attach.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cli/base64.h"
#include "cli/cli_request.h"
#include "cli/cli_sse.h"
#include "cli/http_client.h"

#define ATTACH_SESSION_TTL_S 604800
#define ATTACH_RECONNECTS 20
#define STDIN_CHUNK 65536

struct attach {
        struct cli *cli;
        struct cli data; /* the same settings, with a client holding the attach token */
        char *token;
        const char *sandbox_id;
        char command_id[64];
        char session_id[64];
        bool tty;
        /* events */
        unsigned long long last_id;
        bool ended;
        int exit_status;
        int write_error;
};

/* A client of the data plane, made per thread (curl handles are not shared). */
static int data_client(struct attach *a, struct cli *ret)
{
        *ret = *a->cli;
        ret->http = NULL;
        return http_client_new(a->cli->url, a->token, &ret->http);
}

static void command_path(struct attach *a, struct http_path *p, const char *leaf, const char *leaf2)
{
        http_path_init(p, "/v1/sandboxes");
        http_path_segment(p, a->sandbox_id);
        http_path_segment(p, "commands");
        if (a->command_id[0])
                http_path_segment(p, a->command_id);
        if (leaf)
                http_path_segment(p, leaf);
        if (leaf2)
                http_path_segment(p, leaf2);
}

static int open_session(struct attach *a)
{
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_json_ json_t *answer = NULL;
        _cleanup_json_ json_t *body = json_pack("{s:i}", "ttl_s", ATTACH_SESSION_TTL_S);
        http_path_init(&path, "/v1/sandboxes");
        http_path_segment(&path, a->sandbox_id);
        http_path_segment(&path, "sessions");
        if (cli_request(a->cli, "POST", &path, body, CLI_REQUEST_TIMEOUT_S, NULL, &answer) < 0)
                return -1;
        const char *token = json_string_value(json_object_get(answer, "attach_token"));
        const char *sid = json_string_value(json_object_get(answer, "session_id"));
        if (!token || !sid) {
                fputs("space: spaced gave no attach token\n", stderr);
                return -1;
        }
        a->token = strdup(token);
        snprintf(a->session_id, sizeof(a->session_id), "%s", sid);
        return a->token ? data_client(a, &a->data) : -ENOMEM;
}

static void close_session(struct attach *a)
{
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_json_ json_t *answer = NULL;
        if (!a->session_id[0])
                return;
        http_path_init(&path, "/v1/sandboxes");
        http_path_segment(&path, a->sandbox_id);
        http_path_segment(&path, "sessions");
        http_path_segment(&path, a->session_id);
        (void)cli_request(a->cli, "DELETE", &path, NULL, CLI_REQUEST_TIMEOUT_S, NULL, &answer);
}


static int on_event(void *userdata, const char *id, const char *event, const char *data, size_t len)
{
        struct attach *a = userdata;
        if (id[0])
                a->last_id = strtoull(id, NULL, 10);
        if (strcmp(event, "exit") == 0) {
                _cleanup_json_ json_t *j = json_loadb(data, len, 0, NULL);
                json_t *code = json_object_get(j, "exit_code");
                a->ended = true;
                if (json_is_integer(code)) {
                        json_int_t v = json_integer_value(code);
                        a->exit_status = v < 0 || v > 255 ? 255 : (int)v;
                        if (json_is_true(json_object_get(j, "timed_out")))
                                fputs("space: the command timed out and was killed\n", stderr);
                } else {
                        const char *msg = json_string_value(json_object_get(j, "message"));
                        fprintf(stderr, "space: the command was lost: %s\n", msg ? msg : "no exit status");
                        a->exit_status = 255;
                }
                return 0;
        }
        if (strcmp(event, "gone") == 0) { /* the log went with its destroyed sandbox */
                _cleanup_json_ json_t *j = json_loadb(data, len, 0, NULL);
                const char *msg = json_string_value(json_object_get(j, "message"));
                fprintf(stderr, "space: %s\n", msg ? msg : "the command's output is gone");
                a->ended = true;
                a->exit_status = 255;
                return 0;
        }
        if (strcmp(event, "dropped") == 0) {
                fputs("space: some output was dropped (it went over spaced's per-command cap)\n", stderr);
                return 0;
        }
        int fd = strcmp(event, "stderr") == 0 ? STDERR_FILENO : STDOUT_FILENO;
        _cleanup_free_ unsigned char *bytes = NULL;
        size_t n = 0;
        /* spaced writes {"data":"<base64>"} exactly: decode it in place; parse anything else. */
        static const char prefix[] = "{\"data\":\"";
        size_t plen = sizeof(prefix) - 1;
        if (len > plen + 2 && memcmp(data, prefix, plen) == 0 && memcmp(data + len - 2, "\"}", 2) == 0) {
                if (base64_decode(data + plen, len - plen - 2, &bytes, &n) < 0)
                        return 0;
        } else {
                _cleanup_json_ json_t *j = json_loadb(data, len, 0, NULL);
                const char *b64 = json_string_value(json_object_get(j, "data"));
                if (!b64 || base64_decode(b64, strlen(b64), &bytes, &n) < 0)
                        return 0;
        }
        int r = cli_fd_write_all(fd, bytes, n);
        if (r < 0)
                a->write_error = r;
        return r;
}

static int stream_write(void *userdata, const char *data, size_t len)
{
        return cli_sse_feed(userdata, data, len);
}

/* Follows the events to the exit, resuming after the last id seen when cut off. */
static int follow(struct attach *a)
{
        struct cli_sse sse;
        for (int attempt = 0; !a->ended && attempt <= ATTACH_RECONNECTS; attempt++) {
                _cleanup_http_path_ struct http_path path = {};
                _cleanup_json_ json_t *answer = NULL;
                char after[32];
                command_path(a, &path, "events", NULL);
                snprintf(after, sizeof(after), "%llu", a->last_id);
                http_path_query(&path, "after", after);
                cli_sse_init(&sse, on_event, a);
                struct http_client_stream stream = { .accept = "text/event-stream", .write = stream_write, .userdata = &sse };
                long status = 0;
                int r = http_client_transfer(a->data.http, "GET", http_path_string(&path), &stream, &status, &answer);
                cli_sse_release(&sse);
                if (a->write_error)
                        return a->write_error;
                if (r == 0 && (status < 200 || status > 299)) {
                        cli_request_report(&a->data, status, answer);
                        return -EPROTO;
                }
                if (!a->ended) {
                        struct timespec ts = { 0, 200000000L };
                        nanosleep(&ts, NULL);
                }
        }
        if (!a->ended)
                fputs("space: lost the connection to spaced; the command goes on in the sandbox\n", stderr);
        return a->ended ? 0 : -ECONNRESET;
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

static int post(struct attach *a, struct cli *c, const char *leaf, const char *leaf2, const json_t *body, const char *raw,
                size_t raw_len)
{
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_json_ json_t *answer = NULL;
        command_path(a, &path, leaf, leaf2);
        if (!raw)
                return cli_request(c, "POST", &path, body, CLI_REQUEST_TIMEOUT_S, NULL, &answer);
        struct buffer_reader b = { raw, raw_len, 0 };
        struct http_client_stream s = {
                .content_type = "application/octet-stream", .read = buffer_read, .size = (long long)raw_len, .userdata = &b
        };
        return cli_request_stream(c, "POST", &path, &s, NULL, &answer);
}

static void *stdin_main(void *arg)
{
        struct attach *a = arg;
        struct cli c;
        char buf[STDIN_CHUNK];
        if (data_client(a, &c) < 0)
                return NULL;
        for (;;) {
                ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                if (post(a, &c, "stdin", NULL, NULL, buf, (size_t)n) < 0)
                        break;
        }
        /* EOF (or a read error) closes the command's stdin; on a terminal that is a ^D. */
        (void)post(a, &c, "stdin", "close", NULL, NULL, 0);
        http_client_free(c.http);
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

static void *signal_main(void *arg)
{
        struct attach *a = arg;
        struct cli c;
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGINT);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGHUP);
        sigaddset(&set, SIGWINCH);
        if (data_client(a, &c) < 0)
                return NULL;
        for (int sig; sigwait(&set, &sig) == 0;) {
                _cleanup_json_ json_t *body = NULL;
                if (sig == SIGWINCH) {
                        unsigned cols, rows;
                        if (!a->tty)
                                continue;
                        window_size(&cols, &rows);
                        body = json_pack("{s:i, s:i}", "cols", cols, "rows", rows);
                        (void)post(a, &c, "resize", NULL, body, NULL, 0);
                        continue;
                }
                body = json_pack("{s:i}", "signal", sig);
                (void)post(a, &c, "signal", NULL, body, NULL, 0);
        }
        http_client_free(c.http);
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

static int start(struct attach *a, json_t *body)
{
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_json_ json_t *answer = NULL;
        command_path(a, &path, NULL, NULL);
        if (cli_request(&a->data, "POST", &path, body, CLI_REQUEST_TIMEOUT_S, NULL, &answer) < 0)
                return -1;
        const char *id = json_string_value(json_object_get(answer, "command_id"));
        if (!id)
                return -1;
        snprintf(a->command_id, sizeof(a->command_id), "%s", id);
        return 0;
}

int cli_attach_exec(struct cli *cli, const char *sandbox_id, json_t *body, bool interactive, bool tty)
{
        struct attach a = { .cli = cli, .sandbox_id = sandbox_id, .tty = tty };
        int status = CLI_EXIT_FAILURE;
        pthread_t t;

        /* Signals go to the signal thread; block them before any thread starts. */
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGINT);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGHUP);
        sigaddset(&set, SIGWINCH);
        pthread_sigmask(SIG_BLOCK, &set, NULL);

        if (tty) {
                unsigned cols, rows;
                window_size(&cols, &rows);
                json_object_set_new(body, "tty", json_pack("{s:i, s:i}", "cols", cols, "rows", rows));
        }
        if (interactive)
                json_object_set_new(body, "stdin", json_true());
        if (open_session(&a) < 0 || start(&a, body) < 0)
                goto out;
        if (tty)
                terminal_raw();
        if (interactive && pthread_create(&t, NULL, stdin_main, &a) == 0)
                pthread_detach(t);
        if (pthread_create(&t, NULL, signal_main, &a) == 0)
                pthread_detach(t);
        int r = follow(&a);
        terminal_restore();
        termios_saved = false;
        if (r == 0)
                status = a.exit_status;
out:
        close_session(&a);
        http_client_free(a.data.http);
        if (a.token) {
                explicit_bzero(a.token, strlen(a.token));
                free(a.token);
        }
        return status;
}
