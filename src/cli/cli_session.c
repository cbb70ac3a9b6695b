#include "cli/cli_session.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_output.h"
#include "cli/cli_request.h"
#include "cli/http_client.h"

static void cli_session_path(struct http_path *p, const char *sandbox_id, const char *session_id)
{
        http_path_init(p, "/v1/sandboxes");
        http_path_segment(p, sandbox_id);
        http_path_segment(p, "sessions");
        if (session_id)
                http_path_segment(p, session_id);
}

int cli_session_open(struct cli *control, const char *sandbox_id, long ttl_s, struct cli_session *ret)
{
        _cleanup_http_path_ struct http_path path = {};
        _cleanup_json_ json_t *answer = NULL;
        _cleanup_json_ json_t *body = json_pack("{s:I}", "ttl_s", (json_int_t)ttl_s);

        *ret = (struct cli_session){ .control = control, .data = { .url = control->url, .json = control->json } };
        snprintf(ret->sandbox_id, sizeof(ret->sandbox_id), "%s", sandbox_id);
        if (!body) {
                fputs("space: out of memory\n", stderr);
                return -ENOMEM;
        }
        cli_session_path(&path, sandbox_id, NULL);
        int r = cli_request(control, "POST", &path, body, CLI_REQUEST_TIMEOUT_S, NULL, &answer);
        if (r < 0)
                return r;
        const char *token = cli_output_string(answer, "attach_token"), *id = cli_output_string(answer, "session_id");
        if (!token || !id) {
                fputs("space: spaced sent no attach token\n", stderr);
                return -EBADMSG;
        }
        ret->session_id = strdup(id);
        ret->data.key_flag = strdup(token);
        if (!ret->session_id || !ret->data.key_flag) {
                fputs("space: out of memory\n", stderr);
                return -ENOMEM;
        }
        return 0;
}

void cli_session_close(struct cli_session *s)
{
        if (s->control && s->session_id) {
                _cleanup_http_path_ struct http_path path = {};
                _cleanup_json_ json_t *answer = NULL;
                long status;
                cli_session_path(&path, s->sandbox_id, s->session_id);
                if (http_path_error(&path) == 0 && s->control->http)
                        (void)http_client_request(s->control->http, "DELETE", http_path_string(&path), NULL,
                                                  CLI_REQUEST_TIMEOUT_S, &status, &answer);
        }
        http_client_free(s->data.http);
        erase_and_free(s->data.key_flag);
        free(s->session_id);
        *s = (struct cli_session){ 0 };
}

void cli_session_clone(const struct cli_session *s, struct cli *ret)
{
        *ret = s->data;
        ret->http = NULL;
        ret->key_flag = s->data.key_flag ? strdup(s->data.key_flag) : NULL;
}

void cli_session_done(struct cli *c)
{
        c->http = http_client_free(c->http);
        erase_and_free(c->key_flag);
        c->key_flag = NULL;
}
