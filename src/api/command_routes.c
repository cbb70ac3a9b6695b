/* Streamed commands (data plane): start, list, get (and wait), stdin, signal, resize. */
#include <errno.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/api_cursor.h"
#include "api/api_json.h"
#include "api/api_render.h"
#include "api/api_routes.h"
#include "api/command_spec.h"
#include "data_plane/command_channels.h"
#include "data_plane/command_service.h"
#include "service/approval_service.h"
#include "service/policy_gate.h"
#include "service/sandbox_commands.h"
#include "spaced/spaced_context.h"

static const char *const start_fields[] = { "cmd", "shell", "env", "cwd", "user", "stdin", "tty", "timeout_s", "tag", NULL };

json_t *api_render_command(const struct command_record *c)
{
        json_t *o = json_pack("{s:s, s:s, s:s, s:O, s:s, s:i, s:o, s:o, s:o}", "command_id", c->id, "sandbox_id", c->sandbox_id,
                              "tag", c->tag, "spec", c->spec ? c->spec : json_null(), "state", command_state_name(c->state),
                              "pid", c->pid, "created_at", api_render_time(c->created_at_ms), "started_at",
                              api_render_time(c->started_at_ms), "finished_at", api_render_time(c->finished_at_ms));
        bool ended = c->state == COMMAND_EXITED || c->state == COMMAND_LOST;
        if (c->state == COMMAND_PENDING_APPROVAL) /* the reason names the approval it waits on */
                json_object_set_new(o, "approval_id", json_string(c->reason));
        json_object_set_new(o, "exit_code", c->state == COMMAND_EXITED ? json_integer(c->exit_code) : json_null());
        json_object_set_new(o, "signal", ended && c->term_signal ? json_integer(c->term_signal) : json_null());
        json_object_set_new(o, "timed_out", json_boolean(c->timed_out));
        /* A lost command's reason is a code; an exited one may carry why it could not start. */
        if (c->state == COMMAND_LOST && c->reason[0]) {
                json_object_set_new(o, "reason", json_string(c->reason));
                json_object_set_new(o, "message", json_string(command_lost_message(c->reason)));
        } else if (c->reason[0] && c->state != COMMAND_PENDING_APPROVAL) {
                json_object_set_new(o, "message", json_string(c->reason));
        }
        return o;
}

json_t *api_render_held_command(const struct command_record *c, const struct approval_record *a)
{
        json_t *o = api_render_command(c);
        json_object_set_new(o, "approval",
                            json_pack("{s:s, s:s, s:s*, s:s, s:o}", "approval_id", a->id, "policy_id", a->policy_id, "rule_id",
                                      a->rule_id[0] ? a->rule_id : NULL, "reason", a->reason, "expires_at",
                                      api_render_time(a->expires_at_ms)));
        json_object_set_new(o, "message", json_string(a->reason));
        return o;
}

/* The running sandbox named in the path, loaded. */
static int load_sandbox(struct api_request *req, struct sandbox *sb, struct space_error *err)
{
        return api_load_sandbox(req, sb, err);
}

/* tty: {"cols": N, "rows": N} */
static int parse_tty(const json_t *body, uint32_t *cols, uint32_t *rows, struct space_error *err)
{
        static const char *const fields[] = { "cols", "rows", NULL };
        json_t *tty = json_object_get(body, "tty");
        long long c = 80, r = 24;
        if (!tty || json_is_null(tty))
                return 0;
        if (!json_is_object(tty))
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "tty must be an object {cols, rows}");
        if (api_json_only(tty, fields, "tty.", err) < 0 || api_json_int(tty, "cols", 1, 65535, &c, err) < 0 ||
            api_json_int(tty, "rows", 1, 65535, &r, err) < 0)
                return -1;
        *cols = (uint32_t)c;
        *rows = (uint32_t)r;
        return 0;
}

void route_command_start(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        json_t *body = NULL, *cmd = NULL, *env = NULL;
        const char *shell = NULL, *cwd = NULL, *user = NULL, *tag = "";
        bool want_stdin = false;
        long long timeout_s = 0;
        struct agent_job_spec spec = { 0 };
        struct sandbox sb = { 0 };
        struct command_record rec = { 0 };
        bool loaded = false;

        if (api_request_json(req, &body, &err) < 0 || api_json_only(body, start_fields, "", &err) < 0 ||
            api_json_string_array(body, "cmd", 4096, &cmd, &err) < 0 ||
            api_json_string(body, "shell", 262144, &shell, &err) < 0 ||
            api_json_string_map(body, "env", api_json_env_name_ok, 256, 32768, &env, &err) < 0 ||
            api_json_string(body, "cwd", 4095, &cwd, &err) < 0 || api_json_string(body, "user", 64, &user, &err) < 0 ||
            api_json_bool(body, "stdin", &want_stdin, &err) < 0 ||
            api_json_int(body, "timeout_s", 0, 7 * 86400, &timeout_s, &err) < 0 ||
            api_json_string(body, "tag", 127, &tag, &err) < 0 || parse_tty(body, &spec.tty_cols, &spec.tty_rows, &err) < 0)
                goto fail;
        if (!cmd == !shell) {
                space_error_set(&err, SPACE_E_INVALID_REQUEST, "give exactly one of cmd (array) or shell (string)");
                goto fail;
        }
        if (cwd && cwd[0] != '/') {
                space_error_set(&err, SPACE_E_INVALID_REQUEST, "cwd must be an absolute path");
                goto fail;
        }
        if (user && !command_spec_user_ok(user)) {
                space_error_set(&err, SPACE_E_INVALID_REQUEST, "user must be a user name or uid of the sandbox");
                goto fail;
        }
        if (load_sandbox(req, &sb, &err) < 0)
                goto fail;
        loaded = true;
        /* The template's USER and WORKDIR (environment.config) are the defaults. */
        char tuser[65];
        command_spec_template_defaults(sb.environment, &user, &cwd, tuser, sizeof(tuser));
        bool as_root = command_spec_user_is_root(user);
        spec.argv = command_spec_argv(cmd, shell);
        spec.envp = command_spec_envp(sb.env, env, as_root);
        if (!spec.argv || !spec.envp) {
                space_error_set(&err, SPACE_E_INTERNAL, "out of memory");
                goto fail;
        }
        spec.cwd = cwd;
        spec.user = as_root ? NULL : user;
        spec.stdin_open = want_stdin;
        spec.timeout_ms = (uint32_t)timeout_s * 1000u;
        /* Stored as asked, so a list says what each command is. */
        struct policy_hold hold;
        int gate = policy_gate_command(req->ctx, &sb, spec.argv, spec.user, spec.cwd, &hold, &err);
        if (gate < 0)
                goto fail;
        if (gate == 1) { /* held: a pending command, started once approved */
                struct approval_record apr;
                if (approval_service_hold(req->ctx, &req->principal, req->session_id, &sb, &spec, tag, body, NULL, &hold, &rec,
                                          &apr, &err) < 0)
                        goto fail;
                api_response_json(resp, 202, api_render_held_command(&rec, &apr));
                approval_record_release(&apr);
                command_record_release(&rec);
                goto out;
        }
        json_t *asked = json_deep_copy(body);
        if (command_service_start(req->ctx, &sb, &spec, tag, asked, &rec, &err) < 0) {
                json_decref(asked);
                goto fail;
        }
        json_decref(asked);
        api_response_json(resp, 201, api_render_command(&rec));
        command_record_release(&rec);
        goto out;
fail:
        api_response_error(resp, &err);
out:
        command_spec_strv_free(spec.argv);
        command_spec_strv_free(spec.envp);
        if (loaded)
                sandbox_release(&sb);
        json_decref(body);
}

void route_command_list(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct command_record *all = NULL;
        struct api_page page;
        size_t n = 0;
        if (api_cursor_parse(req, "commands", &page, &err) < 0 ||
            sandbox_commands_list(req->ctx, &req->principal, req->segments[2], false, &page.store, &all, &n, &err) < 0)
                return api_response_error(resp, &err);
        size_t shown = api_page_rows(&page, n);
        json_t *arr = json_array();
        for (size_t i = 0; i < shown; i++)
                json_array_append_new(arr, api_render_command(&all[i]));
        json_t *next =
                shown ? api_cursor_next(&page, "commands", n, all[shown - 1].created_at_ms, all[shown - 1].id) : json_null();
        command_record_array_free(all, n);
        api_response_json(resp, 200, json_pack("{s:o, s:o}", "commands", arr, "next_cursor", next));
}

static bool command_id_ok(struct api_request *req, struct api_response *resp)
{
        struct space_error err;
        if (api_json_name_ok(req->segments[4]))
                return true;
        space_error_set(&err, SPACE_E_NOT_FOUND, "command %.64s not found", req->segments[4]);
        api_response_error(resp, &err);
        return false;
}

static bool command_ended(const struct command_record *c)
{
        return c->state == COMMAND_EXITED || c->state == COMMAND_LOST;
}

/* GET …/commands/{cid}[?wait=true&timeout_s=N]: the record, once it has ended if asked. */
void route_command_get(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct api_wait w;
        struct command_record rec;
        if (!command_id_ok(req, resp))
                return;
        if (api_wait_parse(req, &w, &err) < 0 ||
            command_service_get(req->ctx, req->segments[2], req->segments[4], &rec, &err) < 0)
                return api_response_error(resp, &err);
        long long left_ms = w.timeout_s * 1000;
        while (w.wait && !command_ended(&rec) && left_ms > 0 && !atomic_load(&req->ctx->shutting_down)) {
                int step = left_ms > 1000 ? 1000 : (int)left_ms;
                struct timespec t0, t1;
                clock_gettime(CLOCK_MONOTONIC, &t0);
                if (command_channels_wait(req->ctx->channels, rec.id, UINT64_MAX - 1, false, step) == COMMAND_WAIT_NOT_LIVE) {
                        /* Nobody follows it this instant (spaced is starting): look again shortly. */
                        struct timespec nap = { 0, 100 * 1000000L };
                        nanosleep(&nap, NULL);
                }
                clock_gettime(CLOCK_MONOTONIC, &t1);
                left_ms -= (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
                command_record_release(&rec);
                if (command_service_get(req->ctx, req->segments[2], req->segments[4], &rec, &err) < 0)
                        return api_response_error(resp, &err);
        }
        api_response_json(resp, 200, api_render_command(&rec));
        command_record_release(&rec);
}

/* The sandbox for a control request on a command. */
static int control_begin(struct api_request *req, struct api_response *resp, struct sandbox *sb, struct space_error *err)
{
        if (!command_id_ok(req, resp))
                return -1;
        if (load_sandbox(req, sb, err) < 0) {
                api_response_error(resp, err);
                return -1;
        }
        return 0;
}

static void control_end(struct api_response *resp, struct sandbox *sb, int r, struct space_error *err)
{
        sandbox_release(sb);
        if (r < 0)
                api_response_error(resp, err);
        else
                api_response_json(resp, 204, NULL);
}

/* Raw bytes (any content type but JSON), or {"data": base64} / {"text": "..."}. */
static int stdin_bytes(struct api_request *req, uint8_t **ret, size_t *ret_len, struct space_error *err)
{
        static const char *const fields[] = { "data", "text", NULL };
        if (!req->content_type || strncasecmp(req->content_type, "application/json", 16) != 0) {
                *ret = malloc(req->body_len + 1);
                if (!*ret)
                        return space_error_set(err, SPACE_E_INTERNAL, "out of memory");
                memcpy(*ret, req->body, req->body_len);
                *ret_len = req->body_len;
                return 0;
        }
        json_t *body = NULL;
        const char *data = NULL, *text = NULL;
        int r = api_request_json(req, &body, err);
        if (r == 0)
                r = api_json_only(body, fields, "", err);
        if (r == 0)
                r = api_json_string(body, "data", 64u << 20, &data, err);
        if (r == 0)
                r = api_json_string(body, "text", 64u << 20, &text, err);
        if (r == 0 && !data == !text)
                r = space_error_set(err, SPACE_E_INVALID_REQUEST, "give exactly one of data (base64) or text");
        if (r == 0 && text) {
                *ret_len = strlen(text);
                *ret = (uint8_t *)strdup(text);
        } else if (r == 0) {
                size_t n = strlen(data);
                *ret = malloc(n / 4 * 3 + 3);
                int got = *ret && n % 4 == 0 ? EVP_DecodeBlock(*ret, (const unsigned char *)data, (int)n) : -1;
                if (got < 0) {
                        free(*ret);
                        *ret = NULL;
                        r = space_error_set(err, SPACE_E_INVALID_REQUEST, "data is not valid base64");
                } else {
                        /* EVP_DecodeBlock counts padding as zero bytes. */
                        size_t pad = n >= 1 && data[n - 1] == '=' ? (n >= 2 && data[n - 2] == '=' ? 2 : 1) : 0;
                        *ret_len = (size_t)got - pad;
                }
        }
        json_decref(body);
        return r;
}

void route_command_stdin(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct sandbox sb;
        uint8_t *data = NULL;
        size_t len = 0;
        if (control_begin(req, resp, &sb, &err) < 0)
                return;
        int r = stdin_bytes(req, &data, &len, &err);
        if (r == 0)
                r = command_service_input(req->ctx, &sb, req->segments[4], data, len, &err);
        free(data);
        control_end(resp, &sb, r, &err);
}

void route_command_stdin_close(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct sandbox sb;
        if (control_begin(req, resp, &sb, &err) < 0)
                return;
        control_end(resp, &sb, command_service_close_stdin(req->ctx, &sb, req->segments[4], &err), &err);
}

/* "TERM", "SIGTERM", "sigkill" or a number. */
static int signal_parse(const json_t *v, int *ret)
{
        static const struct {
                const char *name;
                int sig;
        } names[] = { { "HUP", SIGHUP },   { "INT", SIGINT },   { "QUIT", SIGQUIT },   { "KILL", SIGKILL },
                      { "USR1", SIGUSR1 }, { "USR2", SIGUSR2 }, { "TERM", SIGTERM },   { "CONT", SIGCONT },
                      { "STOP", SIGSTOP }, { "TSTP", SIGTSTP }, { "WINCH", SIGWINCH }, { "ALRM", SIGALRM } };
        if (json_is_integer(v)) {
                json_int_t n = json_integer_value(v);
                if (n < 1 || n > 64)
                        return -1;
                *ret = (int)n;
                return 0;
        }
        const char *s = json_string_value(v);
        if (!s)
                return -1;
        if (strncasecmp(s, "SIG", 3) == 0)
                s += 3;
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
                if (strcasecmp(s, names[i].name) == 0) {
                        *ret = names[i].sig;
                        return 0;
                }
        return -1;
}

void route_command_signal(struct api_request *req, struct api_response *resp)
{
        static const char *const fields[] = { "signal", NULL };
        struct space_error err = { 0 };
        struct sandbox sb;
        json_t *body = NULL;
        int sig = SIGTERM, r;
        if (control_begin(req, resp, &sb, &err) < 0)
                return;
        r = api_request_json(req, &body, &err);
        if (r == 0)
                r = api_json_only(body, fields, "", &err);
        json_t *v = r == 0 ? json_object_get(body, "signal") : NULL;
        if (r == 0 && v && signal_parse(v, &sig) < 0)
                r = space_error_set(&err, SPACE_E_INVALID_REQUEST, "signal must be a name like TERM or KILL, or 1-64");
        if (r == 0)
                r = command_service_signal(req->ctx, &sb, req->segments[4], sig, &err);
        json_decref(body);
        control_end(resp, &sb, r, &err);
}

void route_command_resize(struct api_request *req, struct api_response *resp)
{
        static const char *const fields[] = { "cols", "rows", NULL };
        struct space_error err = { 0 };
        struct sandbox sb;
        json_t *body = NULL;
        long long cols = 0, rows = 0;
        int r;
        if (control_begin(req, resp, &sb, &err) < 0)
                return;
        r = api_request_json(req, &body, &err);
        if (r == 0)
                r = api_json_only(body, fields, "", &err);
        if (r == 0)
                r = api_json_int(body, "cols", 1, 65535, &cols, &err);
        if (r == 0)
                r = api_json_int(body, "rows", 1, 65535, &rows, &err);
        if (r == 0 && (!cols || !rows))
                r = space_error_set(&err, SPACE_E_INVALID_REQUEST, "give cols and rows");
        if (r == 0)
                r = command_service_resize(req->ctx, &sb, req->segments[4], (uint32_t)cols, (uint32_t)rows, &err);
        json_decref(body);
        control_end(resp, &sb, r, &err);
}
