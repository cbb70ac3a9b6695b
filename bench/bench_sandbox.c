#include "bench_sandbox.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "cleanup.h" /* _cleanup_json_ */

void bench_sandboxes_init(struct bench_sandboxes *set)
{
        memset(set, 0, sizeof(*set));
        pthread_mutex_init(&set->lock, NULL);
}

void bench_sandboxes_release(struct bench_sandboxes *set)
{
        free(set->ids);
        set->ids = NULL;
        set->n = set->cap = 0;
        pthread_mutex_destroy(&set->lock);
}

static ssize_t find_locked(const struct bench_sandboxes *set, const char *id)
{
        for (size_t i = 0; i < set->n; i++)
                if (strcmp(set->ids[i], id) == 0)
                        return (ssize_t)i;
        return -1;
}

int bench_sandboxes_add(struct bench_sandboxes *set, const char *id)
{
        if (strlen(id) >= BENCH_ID_MAX)
                return -ENAMETOOLONG;
        int r = 0;
        pthread_mutex_lock(&set->lock);
        if (find_locked(set, id) >= 0)
                goto out;
        if (set->n == set->cap) {
                size_t cap = set->cap ? set->cap * 2 : 64;
                char(*grown)[BENCH_ID_MAX] = realloc(set->ids, cap * sizeof(*grown));
                if (!grown) {
                        r = -ENOMEM;
                        goto out;
                }
                set->ids = grown;
                set->cap = cap;
        }
        snprintf(set->ids[set->n++], BENCH_ID_MAX, "%s", id);
out:
        pthread_mutex_unlock(&set->lock);
        return r;
}

void bench_sandboxes_remove(struct bench_sandboxes *set, const char *id)
{
        pthread_mutex_lock(&set->lock);
        ssize_t i = find_locked(set, id);
        if (i >= 0) {
                set->n--;
                if ((size_t)i != set->n)
                        memcpy(set->ids[i], set->ids[set->n], BENCH_ID_MAX);
        }
        pthread_mutex_unlock(&set->lock);
}

bool bench_sandboxes_contains(const char *id, void *userdata)
{
        struct bench_sandboxes *set = userdata;
        pthread_mutex_lock(&set->lock);
        bool found = find_locked(set, id) >= 0;
        pthread_mutex_unlock(&set->lock);
        return found;
}

int bench_sandboxes_snapshot(struct bench_sandboxes *set, char (**ret_ids)[BENCH_ID_MAX], size_t *ret_n)
{
        int r = 0;
        pthread_mutex_lock(&set->lock);
        char(*copy)[BENCH_ID_MAX] = malloc((set->n ? set->n : 1) * sizeof(*copy));
        if (!copy) {
                r = -ENOMEM;
        } else {
                if (set->n)
                        memcpy(copy, set->ids, set->n * sizeof(*copy));
                *ret_ids = copy;
                *ret_n = set->n;
        }
        pthread_mutex_unlock(&set->lock);
        return r;
}

/* The sandbox an answer names: sandbox.id, else operation.target. */
static const char *answer_sandbox_id(const json_t *answer)
{
        const char *id = json_string_value(json_object_get(json_object_get(answer, "sandbox"), "id"));
        return id ? id : json_string_value(json_object_get(json_object_get(answer, "operation"), "target"));
}

int bench_sandbox_create(struct bench_client *c, struct bench_sandboxes *set, const char *template, char *ret_id,
                         size_t size)
{
        char body[256];
        long status;
        _cleanup_json_ json_t *answer = NULL;
        snprintf(body, sizeof(body), "{\"template\":\"%s\"}", template);
        int r = bench_client_call(c, "POST", "/v1/sandboxes?wait=true", body, &status, &answer);
        if (r < 0)
                return r;
        const char *id = answer_sandbox_id(answer);
        if (id && bench_sandboxes_add(set, id) < 0)
                fprintf(stderr, "space-bench: cannot remember sandbox %s: destroy it yourself\n", id);
        if (status != 200 || !id) {
                bench_client_set_error(c, status, answer);
                return -EPROTO;
        }
        snprintf(ret_id, size, "%s", id);
        return 0;
}

int bench_sandbox_exec_true(struct bench_client *c, const char *id)
{
        char path[128];
        long status;
        _cleanup_json_ json_t *answer = NULL;
        snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec", id);
        int r = bench_client_call(c, "POST", path, "{\"cmd\":[\"true\"]}", &status, &answer);
        if (r < 0)
                return r;
        if (status == 200 && json_integer_value(json_object_get(answer, "exit_code")) == 0 &&
            json_is_integer(json_object_get(answer, "exit_code")))
                return 0;
        bench_client_set_error(c, status, answer);
        return status == 409 || status == 503 ? -EAGAIN : -EPROTO;
}

int bench_sandbox_exec_shell(struct bench_client *c, const char *id, const char *script, int timeout_s)
{
        char path[128];
        long status;
        _cleanup_json_ json_t *answer = NULL;
        _cleanup_json_ json_t *body = json_pack("{s:s, s:i}", "shell", script, "timeout_s", timeout_s);
        char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
        if (!text)
                return -ENOMEM;
        snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec", id);
        int r = bench_client_call(c, "POST", path, text, &status, &answer);
        free(text);
        if (r < 0)
                return r;
        json_t *code = json_object_get(answer, "exit_code");
        if (status == 200 && json_is_integer(code) && json_integer_value(code) == 0)
                return 0;
        if (status == 200) {
                /* Ran, but failed: say how, in the API's error shape. */
                char msg[256];
                snprintf(msg, sizeof(msg), "%s exited %lld: %.150s", script, (long long)json_integer_value(code),
                         json_string_value(json_object_get(answer, "stderr")) ?: "");
                _cleanup_json_ json_t *why = json_pack("{s:{s:s, s:s}}", "error", "code", "exec_failed", "message", msg);
                bench_client_set_error(c, status, why);
        } else {
                bench_client_set_error(c, status, answer);
        }
        return -EPROTO;
}

int bench_sandbox_destroy(struct bench_client *c, struct bench_sandboxes *set, const char *id)
{
        char path[128];
        long status;
        _cleanup_json_ json_t *answer = NULL;
        snprintf(path, sizeof(path), "/v1/sandboxes/%s?wait=true", id);
        int r = bench_client_call(c, "DELETE", path, NULL, &status, &answer);
        if (r < 0)
                return r;
        if (status != 200 && status != 404) {
                bench_client_set_error(c, status, answer);
                return -EPROTO;
        }
        bench_sandboxes_remove(set, id);
        return 0;
}

int bench_sandbox_describe(struct bench_client *c, const char *id, char *buf, size_t size)
{
        char path[128];
        long status;
        _cleanup_json_ json_t *answer = NULL;
        snprintf(path, sizeof(path), "/v1/sandboxes/%s", id);
        int r = bench_client_call(c, "GET", path, NULL, &status, &answer);
        if (r < 0)
                return r;
        const char *state = json_string_value(json_object_get(answer, "state"));
        const char *reason = json_string_value(json_object_get(answer, "state_reason"));
        snprintf(buf, size, "HTTP %ld state=%s reason=%s", status, state ? state : "?", reason ? reason : "-");
        return 0;
}
