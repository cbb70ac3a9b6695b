#include "bench_command.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_stats.h"

#include "cleanup.h" /* _cleanup_json_ */

/* Copies a string member of answer into buf. */
static int copy_member(const json_t *answer, const char *key, char *buf, size_t size)
{
        const char *v = json_string_value(json_object_get(answer, key));
        if (!v || strlen(v) >= size)
                return -EPROTO;
        memcpy(buf, v, strlen(v) + 1);
        return 0;
}

int bench_session_create(struct bench_client *control, const char *sandbox_id, struct bench_session *ret)
{
        char path[160];
        long status;
        _cleanup_json_ json_t *answer = NULL;
        snprintf(path, sizeof(path), "/v1/sandboxes/%s/sessions", sandbox_id);
        int r = bench_client_call(control, "POST", path, "{}", &status, &answer);
        if (r < 0)
                return r;
        struct bench_session s = { 0 };
        if (status != 201 || copy_member(answer, "session_id", s.id, sizeof(s.id)) < 0 ||
            copy_member(answer, "attach_token", s.token, sizeof(s.token)) < 0) {
                bench_client_set_error(control, status, answer);
                explicit_bzero(&s, sizeof(s));
                return -EPROTO;
        }
        /* The answer's copy of the token goes when the JSON is freed; wipe it first. */
        const char *t = json_string_value(json_object_get(answer, "attach_token"));
        if (t)
                explicit_bzero((char *)t, strlen(t));
        *ret = s;
        explicit_bzero(&s, sizeof(s));
        return 0;
}

int bench_session_delete(struct bench_client *control, const char *sandbox_id, struct bench_session *s)
{
        char path[192];
        long status;
        _cleanup_json_ json_t *answer = NULL;
        explicit_bzero(s->token, sizeof(s->token));
        snprintf(path, sizeof(path), "/v1/sandboxes/%s/sessions/%s", sandbox_id, s->id);
        int r = bench_client_call(control, "DELETE", path, NULL, &status, &answer);
        if (r < 0)
                return r;
        if (status != 204) {
                bench_client_set_error(control, status, answer);
                return -EPROTO;
        }
        return 0;
}

int bench_command_start(struct bench_client *data, const char *sandbox_id, const char *body, char *ret_id, size_t size)
{
        char path[160];
        long status;
        _cleanup_json_ json_t *answer = NULL;
        snprintf(path, sizeof(path), "/v1/sandboxes/%s/commands", sandbox_id);
        int r = bench_client_call(data, "POST", path, body, &status, &answer);
        if (r < 0)
                return r;
        if (status == 201 && copy_member(answer, "command_id", ret_id, size) == 0)
                return 0;
        bench_client_set_error(data, status, answer);
        return status == 409 || status == 503 ? -EAGAIN : -EPROTO;
}

int bench_command_start_retry(struct bench_client *data, const char *sandbox_id, const char *body, char *ret_id,
                              size_t size)
{
        double t0 = bench_now_ms();
        for (;;) {
                int r = bench_command_start(data, sandbox_id, body, ret_id, size);
                if (r != -EAGAIN || bench_now_ms() - t0 > 10000.0)
                        return r;
                struct timespec ts = { 0, 20 * 1000000L };
                nanosleep(&ts, NULL);
        }
}

int bench_command_stdin(struct bench_client *data, const char *sandbox_id, const char *command_id, const char *text)
{
        char path[192];
        long status;
        _cleanup_json_ json_t *answer = NULL;
        _cleanup_json_ json_t *body = json_pack("{s:s}", "text", text);
        char *dumped = body ? json_dumps(body, JSON_COMPACT) : NULL;
        if (!dumped)
                return -ENOMEM;
        snprintf(path, sizeof(path), "/v1/sandboxes/%s/commands/%s/stdin", sandbox_id, command_id);
        int r = bench_client_call(data, "POST", path, dumped, &status, &answer);
        free(dumped);
        if (r < 0)
                return r;
        if (status != 204) {
                bench_client_set_error(data, status, answer);
                return -EPROTO;
        }
        return 0;
}
