/* cli_request: API calls and their error messages. The HTTP client is made on first use so
 * that --help and usage errors never touch the key. */
#include "cli/cli_request.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_config.h"
#include "cli/cli_retry.h"
#include "cli/cli_text.h"
#include "cli/http_client.h"

static void cli_request_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void cli_request_say(const char *fmt, ...)
{
        _cleanup_free_ char *raw = NULL;
        _cleanup_free_ char *clean = NULL;
        va_list ap;

        va_start(ap, fmt);
        int n = vasprintf(&raw, fmt, ap);
        va_end(ap);
        if (n < 0 || cli_text_sanitize(raw, &clean) < 0) {
                fputs("space: out of memory\n", stderr);
                return;
        }
        fprintf(stderr, "space: %s\n", clean);
}

static int cli_request_connect(struct cli *cli)
{
        _cleanup_erase_ char *key = NULL;
        _cleanup_free_ char *path = NULL;

        if (cli->http)
                return 0;

        int r = cli_config_key(cli->key_flag, &key);
        if (r == -EINVAL) {
                cli_request_say("the API key contains whitespace or control characters");
                return r;
        }
        if (r < 0) {
                (void)cli_config_key_path(&path);
                cli_request_say("cannot read the API key from %s: %s", path ? path : "?", strerror(-r));
                return r;
        }
        cli->have_key = key != NULL;

        r = http_client_new(cli->url, key, &cli->http);
        if (r < 0)
                cli_request_say("cannot set up the HTTP client: %s", strerror(-r));
        return r;
}

static void cli_request_transport_error(const struct cli *cli, int r)
{
        const char *why = http_client_error(cli->http);

        switch (r) {
        case -EHOSTUNREACH:
                cli_request_say("cannot reach spaced at %s: %s", cli->url, why);
                break;
        case -ETIMEDOUT:
                cli_request_say("spaced at %s did not answer in time: %s", cli->url, why);
                break;
        case -ECONNRESET:
                cli_request_say("spaced at %s cut the answer short: %s", cli->url, why);
                break;
        case -EBADMSG:
        case -EFBIG:
                cli_request_say("bad answer from spaced at %s: %s", cli->url, why);
                break;
        case -ENOMEM:
                cli_request_say("out of memory");
                break;
        default:
                cli_request_say("request to spaced at %s failed: %s", cli->url, *why ? why : strerror(-r));
                break;
        }
}

void cli_request_report(const struct cli *cli, long status, const json_t *answer)
{
        const char *code = json_string_value(json_object_get(json_object_get(answer, "error"), "code"));
        const char *message = json_string_value(json_object_get(json_object_get(answer, "error"), "message"));

        if (message && code)
                cli_request_say("%s (%s)", message, code);
        else if (message || code)
                cli_request_say("%s", message ? message : code);
        else
                cli_request_say("spaced answered HTTP %ld", status);

        if (status == 401 && !cli->have_key) {
                _cleanup_free_ char *path = NULL;
                (void)cli_config_key_path(&path);
                cli_request_say("no API key: use --key or SPACE_API_KEY, or run as a user who can read %s",
                                path ? path : CLI_CONFIG_DEFAULT_STATE_DIR "/" CLI_CONFIG_KEY_FILE);
        }
}

/* Checks the path and makes the client. */
static int cli_request_prepare(struct cli *cli, const struct http_path *path)
{
        int r = http_path_error(path);
        if (r < 0) {
                cli_request_say(r == -EINVAL ? "a name or id is empty" : "out of memory");
                return r;
        }
        return cli_request_connect(cli);
}

/* Reports a failed transfer or a non-2xx answer; hands the answer on otherwise. */
static int cli_request_finish(struct cli *cli, int r, long status, json_t *answer, long *ret_status, json_t **ret_body,
                              bool quiet)
{
        _cleanup_json_ json_t *owned = answer;

        if (r == -ECANCELED)
                return r;
        if (r < 0) {
                if (!quiet)
                        cli_request_transport_error(cli, r);
                return r;
        }
        if (status < 200 || status > 299) {
                if (ret_status)
                        *ret_status = status;
                if (!quiet)
                        cli_request_report(cli, status, answer);
                return -EPROTO;
        }
        if (ret_status)
                *ret_status = status;
        *ret_body = TAKE_PTR(owned);
        return 0;
}

/* With cli->retry, a failure a restart of spaced explains is tried again (cli_retry.h). */
static bool cli_request_again(const struct cli *cli, struct cli_retry *retry, int r, long status, json_t **answer,
                              bool repeatable)
{
        if (!cli->retry || !cli_retry_transient(r, status, repeatable) || !cli_retry_pause(retry, cli))
                return false;
        json_decref(*answer);
        *answer = NULL;
        return true;
}

int cli_request(struct cli *cli, const char *method, const struct http_path *path, const json_t *body, long timeout_s,
                long *ret_status, json_t **ret_body)
{
        struct cli_retry retry;
        json_t *answer = NULL;
        long status = 0;

        int r = cli_request_prepare(cli, path);
        if (r < 0)
                return r;
        cli_retry_init(&retry);
        do
                r = http_client_request(cli->http, method, http_path_string(path), body, timeout_s, &status, &answer);
        while (cli_request_again(cli, &retry, r, status, &answer, strcmp(method, "GET") == 0));
        return cli_request_finish(cli, r, status, answer, ret_status, ret_body, false);
}

int cli_request_quiet(struct cli *cli, const char *method, const struct http_path *path, long timeout_s, long *ret_status,
                      json_t **ret_body)
{
        json_t *answer = NULL;
        long status = 0;
        int r = cli_request_prepare(cli, path);
        if (r < 0)
                return r;
        r = http_client_request(cli->http, method, http_path_string(path), NULL, timeout_s, &status, &answer);
        return cli_request_finish(cli, r, status, answer, ret_status, ret_body, true);
}

int cli_request_stream(struct cli *cli, const char *method, const struct http_path *path, struct http_client_stream *stream,
                       long *ret_status, json_t **ret_body)
{
        struct cli_retry retry;
        json_t *answer = NULL;
        long status = 0;

        int r = cli_request_prepare(cli, path);
        if (r < 0)
                return r;
        cli_retry_init(&retry);
        for (;;) {
                r = http_client_transfer(cli->http, method, http_path_string(path), stream, &status, &answer);
                /* Only a stream that can be rewound (its body, what it received) is sent again. */
                if (!stream->rewind || !cli_request_again(cli, &retry, r, status, &answer, strcmp(method, "GET") == 0))
                        break;
                stream->rewind(stream->userdata);
        }
        return cli_request_finish(cli, r, status, answer, ret_status, ret_body, false);
}

int cli_request_list(struct cli *cli, const struct http_path *path, const char *member, json_t **ret_body)
{
        _cleanup_json_ json_t *all = json_array();
        _cleanup_free_ char *cursor = NULL;
        const char *base = http_path_string(path);

        if (!all) {
                cli_request_say("out of memory");
                return -ENOMEM;
        }
        if (!base)
                return cli_request(cli, "GET", path, NULL, CLI_REQUEST_TIMEOUT_S, NULL, ret_body);
        for (;;) {
                _cleanup_http_path_ struct http_path page = {};
                _cleanup_json_ json_t *answer = NULL;

                http_path_init(&page, base);
                page.has_query = path->has_query;
                if (cursor)
                        http_path_query(&page, "cursor", cursor);
                int r = cli_request(cli, "GET", &page, NULL, CLI_REQUEST_TIMEOUT_S, NULL, &answer);
                if (r < 0)
                        return r;
                json_t *items = json_object_get(answer, member);
                json_t *next = json_object_get(answer, "next_cursor");
                if (!json_is_array(items) || json_array_extend(all, items) < 0) {
                        cli_request_say("unexpected answer from spaced: no %s list", member);
                        return -EBADMSG;
                }
                if (!json_is_string(next))
                        break; /* null on the last page */
                if (cursor && strcmp(cursor, json_string_value(next)) == 0) {
                        cli_request_say("spaced gave the same next_cursor twice for %s", member);
                        return -EBADMSG;
                }
                free(cursor);
                cursor = strdup(json_string_value(next));
                if (!cursor) {
                        cli_request_say("out of memory");
                        return -ENOMEM;
                }
        }
        json_t *answer = json_pack("{s:O, s:n}", member, all, "next_cursor");
        if (!answer) {
                cli_request_say("out of memory");
                return -ENOMEM;
        }
        *ret_body = answer;
        return 0;
}
