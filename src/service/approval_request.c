/* A held command's request as JSON, and back. */
#include "service/approval_request.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static json_t *strv_json(char *const *v)
{
        json_t *a = json_array();
        for (size_t i = 0; a && v && v[i]; i++)
                json_array_append_new(a, json_string(v[i]));
        return a;
}

json_t *approval_request_new(const struct agent_job_spec *spec, const char *stdin_text)
{
        return json_pack("{s:o, s:o, s:s?, s:s?, s:b, s:I, s:I, s:I, s:s?}", "argv", strv_json(spec->argv), "envp",
                         strv_json(spec->envp), "cwd", spec->cwd, "user", spec->user, "stdin_open", spec->stdin_open, "tty_cols",
                         (json_int_t)spec->tty_cols, "tty_rows", (json_int_t)spec->tty_rows, "timeout_ms",
                         (json_int_t)spec->timeout_ms, "stdin", stdin_text);
}

static void strv_free(char **v)
{
        for (size_t i = 0; v && v[i]; i++)
                free(v[i]);
        free(v);
}

/* A NULL-terminated copy of the array of strings a, or NULL (-EINVAL / -ENOMEM in *r). */
static char **json_strv(const json_t *a, bool need_one, int *r)
{
        if (!json_is_array(a) || (need_one && json_array_size(a) == 0)) {
                *r = -EINVAL;
                return NULL;
        }
        char **v = calloc(json_array_size(a) + 1, sizeof(*v));
        if (!v) {
                *r = -ENOMEM;
                return NULL;
        }
        for (size_t i = 0; i < json_array_size(a); i++) {
                const char *s = json_string_value(json_array_get(a, i));
                v[i] = s ? strdup(s) : NULL;
                if (!v[i]) {
                        *r = s ? -ENOMEM : -EINVAL;
                        strv_free(v);
                        return NULL;
                }
        }
        return v;
}

int approval_request_spec(const json_t *req, struct agent_job_spec *ret, const char **ret_stdin)
{
        struct agent_job_spec spec = { 0 };
        int r = 0;
        spec.argv = json_strv(json_object_get(req, "argv"), true, &r);
        if (spec.argv)
                spec.envp = json_strv(json_object_get(req, "envp"), false, &r);
        if (!spec.argv || !spec.envp) {
                strv_free(spec.argv);
                return r;
        }
        spec.cwd = json_string_value(json_object_get(req, "cwd"));
        spec.user = json_string_value(json_object_get(req, "user"));
        spec.stdin_open = json_is_true(json_object_get(req, "stdin_open"));
        spec.tty_cols = (uint32_t)json_integer_value(json_object_get(req, "tty_cols"));
        spec.tty_rows = (uint32_t)json_integer_value(json_object_get(req, "tty_rows"));
        spec.timeout_ms = (uint32_t)json_integer_value(json_object_get(req, "timeout_ms"));
        *ret_stdin = json_string_value(json_object_get(req, "stdin"));
        *ret = spec;
        return 0;
}

void approval_request_spec_release(struct agent_job_spec *spec)
{
        if (!spec)
                return;
        strv_free(spec->argv);
        strv_free(spec->envp);
        spec->argv = spec->envp = NULL;
}
