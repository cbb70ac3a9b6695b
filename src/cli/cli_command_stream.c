#include "cli/cli_command_stream.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/base64.h"
#include "cli/cli_fd.h"
#include "cli/cli_request.h"
#include "cli/http_client.h"

/* A stream that ends with neither an exit nor a new event this many times in a row is not
 * coming back (spaced ends streams as it stops: those come back with new events). */
#define CLI_COMMAND_STREAM_EMPTY_MAX 50
#define CLI_COMMAND_STREAM_PAUSE_NS 200000000L

static void say_message(const char *data, size_t len, const char *fallback)
{
        _cleanup_json_ json_t *j = json_loadb(data, len, 0, NULL);
        const char *msg = json_string_value(json_object_get(j, "message"));
        fprintf(stderr, "space: %s\n", msg ? msg : fallback);
}

static int on_exit_event(struct cli_command_stream *s, const char *data, size_t len)
{
        _cleanup_json_ json_t *j = json_loadb(data, len, 0, NULL);
        json_t *code = json_object_get(j, "exit_code");

        s->ended = true;
        if (json_is_integer(code)) {
                json_int_t v = json_integer_value(code);
                s->exit_status = v < 0 || v > 255 ? 255 : (int)v;
                if (json_is_true(json_object_get(j, "timed_out")))
                        fputs("space: the command timed out and was killed\n", stderr);
                return 0;
        }
        const char *msg = json_string_value(json_object_get(j, "message"));
        fprintf(stderr, "space: the command was lost: %s\n", msg ? msg : "no exit status");
        s->exit_status = 255;
        return 0;
}

static int on_event(void *userdata, const char *id, const char *event, const char *data, size_t len)
{
        struct cli_command_stream *s = userdata;

        if (id[0])
                snprintf(s->last_id, sizeof(s->last_id), "%s", id);
        if (strcmp(event, "exit") == 0)
                return on_exit_event(s, data, len);
        if (strcmp(event, "gone") == 0) { /* the log went with its destroyed sandbox */
                say_message(data, len, "the command's output is gone");
                s->ended = true;
                s->exit_status = 255;
                return 0;
        }
        if (strcmp(event, "approval_requested") == 0) { /* held by a policy (docs/governance.md) */
                _cleanup_json_ json_t *j = json_loadb(data, len, 0, NULL);
                fprintf(stderr, "space: waiting for approval %s: %s\n",
                        json_string_value(json_object_get(j, "approval_id")) ?: "?",
                        json_string_value(json_object_get(j, "reason")) ?: "a policy holds this command");
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
                s->write_error = r;
        return r;
}

static int stream_write(void *userdata, const char *data, size_t len)
{
        struct cli_command_stream *s = userdata;
        int r = cli_sse_feed(&s->sse, data, len);
        if (r < 0)
                return r;
        /* Stop at the exit, or (until_idle) at a keepalive: everything written so far is out. */
        return s->ended || (s->until_idle && s->sse.comments > 0) ? -ECANCELED : 0;
}

/* Before a new try: a partly received event is dropped (it comes again after last_id). */
static void stream_rewind(void *userdata)
{
        struct cli_command_stream *s = userdata;
        cli_sse_release(&s->sse);
        cli_sse_init(&s->sse, on_event, s);
}

void cli_command_stream_reattach_hint(const char *sandbox_id, const char *command_id)
{
        fprintf(stderr,
                "space: the command %s goes on in the sandbox; reattach with: space attach %s %s\n"
                "space: (or follow its output with: space logs -f %s %s)\n",
                command_id, sandbox_id, command_id, sandbox_id, command_id);
}

/* One GET of the events from after last_id (cli_request retries it while spaced is away).
 * 1: we stopped it (the exit came, or the stream went idle with until_idle); 0: spaced ended
 * it without the exit; -errno: failed, said on stderr. */
static int follow_once(struct cli_command_stream *s)
{
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_json_ json_t *answer = NULL;

        http_path_init(&path, "/v1/sandboxes");
        http_path_segment(&path, s->sandbox_id);
        http_path_segment(&path, "commands");
        http_path_segment(&path, s->command_id);
        http_path_segment(&path, "events");
        if (s->until_idle)
                http_path_query(&path, "keepalive_s", "1");
        struct http_client_stream stream = {
                .accept = "text/event-stream",
                .write = stream_write,
                .rewind = stream_rewind,
                .userdata = s,
                .last_event_id = s->last_id,
        };
        cli_sse_init(&s->sse, on_event, s);
        int r = cli_request_stream(s->data, "GET", &path, &stream, NULL, &answer);
        cli_sse_release(&s->sse);
        if (r == -ECANCELED && stream.error == -ECANCELED)
                return 1;
        if (r == -ECANCELED) {
                fprintf(stderr, "space: cannot write the output: %s\n", strerror(-stream.error));
                return stream.error;
        }
        return r;
}

int cli_command_stream_follow(struct cli_command_stream *s)
{
        for (int empty = 0;;) {
                char before[sizeof(s->last_id)];
                memcpy(before, s->last_id, sizeof(before));
                int r = follow_once(s);
                if (r == 1 || (r == 0 && s->ended))
                        return 0;
                if (r < 0) {
                        if (!s->write_error) /* cli_request said why; the command goes on */
                                cli_command_stream_reattach_hint(s->sandbox_id, s->command_id);
                        return r;
                }
                /* The stream ended without the exit: spaced is stopping (the next try waits
                 * for it to be back), or the session ended (the next try says so). */
                empty = strcmp(before, s->last_id) == 0 ? empty + 1 : 0;
                if (empty >= CLI_COMMAND_STREAM_EMPTY_MAX) {
                        fputs("space: spaced keeps ending the command's stream\n", stderr);
                        cli_command_stream_reattach_hint(s->sandbox_id, s->command_id);
                        return -ECONNRESET;
                }
                struct timespec ts = { 0, CLI_COMMAND_STREAM_PAUSE_NS };
                nanosleep(&ts, NULL);
        }
}
