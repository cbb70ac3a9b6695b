/* e2b_envd_process: envd's process.Process service on space's streamed commands. A process
 * is a data-plane command; its envd pid is the command's pid in the sandbox (the agent's
 * view), so it is unique among the sandbox's running commands. Processes outlive the
 * connection that started them. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api_json.h"
#include "api/command_spec.h"
#include "cleanup.h"
#include "data_plane/command_service.h"
#include "e2b/e2b_connect.h"
#include "e2b/e2b_routes.h"
#include "runtime/runtime_registry.h"
#include "service/sandbox_access.h"
#include "service/approval_service.h"
#include "service/policy_gate.h"
#include "service/sandbox_commands.h"
#include "service/sandbox_service.h"
#include "spaced/spaced_context.h"

#define KEEPALIVE_DEFAULT_MS 30000

void e2b_envd_health(struct e2b_call *call, struct api_response *resp)
{
        struct sandbox sb;
        struct space_error unseen;
        int r = sandbox_access_load(call->req.ctx, &call->req.principal, call->sandbox_id, &sb, &unseen);
        bool running = r == 0 && sb.state == SANDBOX_RUNNING;
        const char *state = r == 0 ? sandbox_state_name(sb.state) : "unknown";
        if (running) {
                e2b_reply_empty(resp);
        } else {
                resp->status = 502;
                resp->body = json_pack("{s:s, s:s+, s:i}", "sandboxId", call->sandbox_id, "message", "the sandbox is ", state,
                                       "code", 502);
        }
        if (r == 0)
                sandbox_release(&sb);
}

/* The sandbox of the call, which must be running. */
static int running_sandbox(struct e2b_call *call, struct sandbox *sb, struct space_error *err)
{
        return sandbox_service_get_running(call->req.ctx, &call->req.principal, call->sandbox_id, sb, err);
}

/* Whether the sandbox's filesystem has an executable at path (resolved inside it). */
static bool sandbox_has(struct spaced_context *ctx, const struct sandbox *sb, const char *path)
{
        const struct runtime_driver *d = runtime_registry_find(&ctx->runtimes, sb->runtime);
        /* When it cannot tell, let the start say what is wrong. */
        return !d || d->ops->path_exists(d, sb, path) != 0;
}

/* {"process": {"pid": N} | {"tag": "..."}} -> the running command. */
static int find_process(struct e2b_call *call, const json_t *msg, struct command_record *ret, struct space_error *err)
{
        json_t *sel = json_object_get(msg, "process");
        json_t *pid = json_object_get(sel, "pid");
        const char *tag = json_string_value(json_object_get(sel, "tag"));
        if (!json_is_object(sel) || (!json_is_integer(pid) && !tag))
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "process must name a pid or a tag");
        struct command_record *all = NULL;
        size_t n = 0;
        if (sandbox_commands_list(call->req.ctx, &call->req.principal, call->sandbox_id, true, NULL, &all, &n, err) < 0)
                return -1;
        int found = -1;
        for (size_t i = 0; i < n; i++) {
                if (all[i].state != COMMAND_RUNNING)
                        continue;
                if (tag ? strcmp(all[i].tag, tag) == 0 : all[i].pid == json_integer_value(pid))
                        found = (int)i; /* the newest wins */
        }
        if (found < 0) {
                command_record_array_free(all, n);
                if (tag)
                        return space_error_set(err, SPACE_E_NOT_FOUND, "process with tag %s not found", tag);
                return space_error_set(err, SPACE_E_NOT_FOUND, "process with pid %lld not found",
                                       (long long)json_integer_value(pid));
        }
        *ret = all[found];
        memset(&all[found], 0, sizeof(all[found]));
        command_record_array_free(all, n);
        return 0;
}

/* Connect-Timeout-Ms: how long the call (for Start: the process) may last; 0 none. */
static int64_t call_timeout_ms(struct e2b_call *call)
{
        const char *v = e2b_call_header(call, "Connect-Timeout-Ms");
        if (!v)
                return 0;
        char *end;
        long long n = strtoll(v, &end, 10);
        if (*end || n <= 0)
                return 0;
        return n > 7LL * 86400 * 1000 ? 7LL * 86400 * 1000 : n;
}

static int keepalive_ms(struct e2b_call *call)
{
        const char *v = e2b_call_header(call, "Keepalive-Ping-Interval");
        long long s = v ? strtoll(v, NULL, 10) : 0;
        if (s <= 0)
                return KEEPALIVE_DEFAULT_MS;
        return s > 300 ? 300000 : (int)s * 1000;
}

static bool strings_only(const json_t *obj)
{
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)obj, k, v) if (!json_is_string(v) || !api_json_env_name_ok(k)) return false;
        return true;
}

/* The Start request as a command spec; argv/envp are the caller's to free, spec->cwd may
 * point into cwd_buf (PATH_MAX). */
static int parse_start(struct e2b_call *call, const json_t *msg, const struct sandbox *sb, struct agent_job_spec *spec,
                       char *cwd_buf, json_t **ret_asked, struct space_error *err)
{
        json_t *proc = json_object_get(msg, "process");
        const char *cmd = json_string_value(json_object_get(proc, "cmd"));
        json_t *args = json_object_get(proc, "args"), *envs = json_object_get(proc, "envs");
        const char *cwd = json_string_value(json_object_get(proc, "cwd"));
        json_t *pty = json_object_get(msg, "pty"), *stdin_v = json_object_get(msg, "stdin");
        if (!json_is_object(proc) || !cmd || !*cmd)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "process.cmd is required");
        if (args && !json_is_null(args) && !json_is_array(args))
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "process.args must be an array of strings");
        if (envs && !json_is_null(envs) && (!json_is_object(envs) || !strings_only(envs)))
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "process.envs must map variable names to strings");
        /* As envd: a relative cwd is taken from the user's home. */
        if (cwd && *cwd && cwd[0] != '/') {
                if (e2b_files_resolve(call->user, cwd, cwd_buf, PATH_MAX, err) < 0)
                        return -1; /* invalid_request, saying why */
                cwd = cwd_buf;
        }
        json_t *argv = json_array();
        /* SDKs run commands with /bin/bash -l -c; a sandbox without bash gets its /bin/sh. */
        json_array_append_new(
                argv,
                json_string(strcmp(cmd, "/bin/bash") == 0 && !sandbox_has(call->req.ctx, sb, "/bin/bash") ? "/bin/sh" : cmd));
        size_t i;
        json_t *a;
        json_array_foreach(args, i, a)
        {
                if (!json_is_string(a)) {
                        json_decref(argv);
                        return space_error_set(err, SPACE_E_INVALID_REQUEST, "process.args must be an array of strings");
                }
                json_array_append(argv, a);
        }
        bool as_root = strcmp(call->user, "root") == 0;
        spec->argv = command_spec_argv(argv, NULL);
        spec->envp = command_spec_envp(sb->env, json_is_object(envs) ? envs : NULL, as_root);
        spec->cwd = cwd && *cwd ? cwd : NULL;
        spec->user = as_root ? NULL : call->user;
        spec->stdin_open = stdin_v ? json_is_true(stdin_v) : true; /* envd before 0.3 always kept stdin open */
        if (json_is_object(pty)) {
                json_t *size = json_object_get(pty, "size");
                json_int_t cols = json_integer_value(json_object_get(size, "cols"));
                json_int_t rows = json_integer_value(json_object_get(size, "rows"));
                spec->tty_cols = cols > 0 && cols < 65536 ? (uint32_t)cols : 80;
                spec->tty_rows = rows > 0 && rows < 65536 ? (uint32_t)rows : 24;
                spec->stdin_open = true;
        }
        int64_t t = call_timeout_ms(call);
        spec->timeout_ms = t > UINT32_MAX ? UINT32_MAX : (uint32_t)t;
        if (!spec->argv || !spec->envp) {
                json_decref(argv);
                return space_error_set(err, SPACE_E_INTERNAL, "out of memory");
        }
        /* Stored as asked: what a v1 list shows, and the config an envd List returns. */
        json_t *asked =
                json_pack("{s:o, s:s, s:b, s:{s:s, s:o, s:o, s:s}}", "cmd", argv, "user", call->user, "stdin", spec->stdin_open,
                          "e2b", "cmd", cmd, "args", json_is_array(args) ? json_incref(args) : json_array(), "envs",
                          json_is_object(envs) ? json_incref(envs) : json_object(), "cwd", cwd ? cwd : "");
        if (asked && json_is_object(envs))
                json_object_set(asked, "env", envs);
        if (asked && spec->cwd)
                json_object_set_new(asked, "cwd", json_string(spec->cwd));
        if (asked && spec->tty_cols)
                json_object_set_new(asked, "tty", json_pack("{s:i, s:i}", "cols", spec->tty_cols, "rows", spec->tty_rows));
        *ret_asked = asked;
        return 0;
}

void e2b_process_start(struct e2b_call *call, struct api_response *resp)
{
        struct space_error err = { 0 };
        json_t *msg = NULL, *asked = NULL;
        struct sandbox sb;
        bool loaded = false;
        struct agent_job_spec spec = { 0 };
        struct command_record rec = { 0 };
        char cwd_buf[PATH_MAX];
        if (e2b_connect_request(&call->req, &msg, &err) < 0 || running_sandbox(call, &sb, &err) < 0)
                goto fail;
        loaded = true;
        if (parse_start(call, msg, &sb, &spec, cwd_buf, &asked, &err) < 0)
                goto fail;
        struct policy_hold hold;
        int gate = policy_gate_command(call->req.ctx, &sb, spec.argv, spec.user, spec.cwd, &hold, &err);
        if (gate < 0)
                goto fail;
        const char *tag = json_string_value(json_object_get(msg, "tag"));
        if (gate == 1) {
                /* Held: the stream stays open (keepalives) and starts when a person approves. */
                struct approval_record apr;
                if (approval_service_hold(call->req.ctx, &call->req.principal, NULL, &sb, &spec, tag ? tag : "", asked, NULL,
                                          &hold, &rec, &apr, &err) < 0)
                        goto fail;
                approval_record_release(&apr);
                if (e2b_process_stream_begin(call, rec.id, -1, false, 0, keepalive_ms(call), resp, &err) < 0)
                        goto fail;
                goto out;
        }
        if (command_service_start(call->req.ctx, &sb, &spec, tag ? tag : "", asked, &rec, &err) < 0)
                goto fail;
        /* The process's own deadline is the agent's (the timeout above); the stream just follows. */
        if (e2b_process_stream_begin(call, rec.id, rec.pid, false, 0, keepalive_ms(call), resp, &err) < 0)
                goto fail;
        goto out;
fail:
        e2b_connect_reply_stream_error(resp, &err);
out:
        command_record_release(&rec);
        command_spec_strv_free(spec.argv);
        command_spec_strv_free(spec.envp);
        if (loaded)
                sandbox_release(&sb);
        json_decref(asked);
        json_decref(msg);
}

void e2b_process_connect(struct e2b_call *call, struct api_response *resp)
{
        struct space_error err = { 0 };
        json_t *msg = NULL;
        struct sandbox sb;
        struct command_record rec = { 0 };
        if (e2b_connect_request(&call->req, &msg, &err) < 0 || running_sandbox(call, &sb, &err) < 0)
                goto fail;
        sandbox_release(&sb);
        if (find_process(call, msg, &rec, &err) < 0 ||
            e2b_process_stream_begin(call, rec.id, rec.pid, true, call_timeout_ms(call), keepalive_ms(call), resp, &err) < 0)
                goto fail;
        goto out;
fail:
        e2b_connect_reply_stream_error(resp, &err);
out:
        command_record_release(&rec);
        json_decref(msg);
}

/* ProcessConfig of a command: what envd was asked, or the argv of a command started otherwise. */
static json_t *process_config(const struct command_record *c)
{
        json_t *e2b = json_object_get(c->spec, "e2b");
        if (json_is_object(e2b))
                return json_deep_copy(e2b);
        json_t *cmd = json_object_get(c->spec, "cmd");
        json_t *args = json_array();
        size_t i;
        json_t *a;
        json_array_foreach(cmd, i, a) if (i > 0) json_array_append(args, a);
        json_t *env = json_object_get(c->spec, "env");
        const char *cwd = json_string_value(json_object_get(c->spec, "cwd"));
        const char *shell = json_string_value(json_object_get(c->spec, "shell"));
        if (shell) {
                json_array_append_new(args, json_string("-c"));
                json_array_append_new(args, json_string(shell));
        }
        return json_pack("{s:s, s:o, s:o, s:s}", "cmd", shell ? "/bin/sh" : json_string_value(json_array_get(cmd, 0)) ?: "", "args",
                         args, "envs", json_is_object(env) ? json_incref(env) : json_object(), "cwd", cwd ? cwd : "");
}

void e2b_process_list(struct e2b_call *call, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct sandbox sb;
        if (running_sandbox(call, &sb, &err) < 0)
                return e2b_connect_reply_error(resp, &err);
        sandbox_release(&sb);
        struct command_record *all = NULL;
        size_t n = 0;
        if (sandbox_commands_list(call->req.ctx, &call->req.principal, call->sandbox_id, true, NULL, &all, &n, &err) < 0)
                return e2b_connect_reply_error(resp, &err);
        json_t *procs = json_array();
        for (size_t i = 0; i < n; i++) {
                if (all[i].state != COMMAND_RUNNING)
                        continue;
                json_t *p = json_pack("{s:i, s:o}", "pid", all[i].pid, "config", process_config(&all[i]));
                if (all[i].tag[0])
                        json_object_set_new(p, "tag", json_string(all[i].tag));
                json_array_append_new(procs, p);
        }
        command_record_array_free(all, n);
        e2b_connect_reply(resp, json_pack("{s:o}", "processes", procs));
}

/* The call's message, sandbox and process: the common start of a control call. */
static int control_begin(struct e2b_call *call, json_t **msg, struct sandbox *sb, struct command_record *rec,
                         struct space_error *err)
{
        if (e2b_connect_request(&call->req, msg, err) < 0)
                return -1;
        if (running_sandbox(call, sb, err) < 0)
                return -1;
        if (find_process(call, *msg, rec, err) < 0) {
                sandbox_release(sb);
                return -1;
        }
        return 0;
}

static void control_end(struct api_response *resp, json_t *msg, struct sandbox *sb, struct command_record *rec, int r,
                        const struct space_error *err)
{
        if (r < 0) {
                /* The process ended while we spoke to it: as envd, it is not there any more. */
                struct space_error shown = *err;
                if (shown.code == SPACE_E_INVALID_STATE)
                        shown.code = SPACE_E_NOT_FOUND;
                e2b_connect_reply_error(resp, &shown);
        } else {
                e2b_connect_reply(resp, json_object());
        }
        if (sb)
                sandbox_release(sb);
        command_record_release(rec);
        json_decref(msg);
}

static int base64_decode(const char *s, uint8_t **ret, size_t *ret_len)
{
        size_t n = strlen(s);
        if (n % 4 != 0)
                return -EINVAL;
        uint8_t *out = malloc(n / 4 * 3 + 1);
        if (!out)
                return -ENOMEM;
        int got = n ? EVP_DecodeBlock(out, (const unsigned char *)s, (int)n) : 0;
        if (got < 0) {
                free(out);
                return -EINVAL;
        }
        size_t pad = n >= 1 && s[n - 1] == '=' ? (n >= 2 && s[n - 2] == '=' ? 2 : 1) : 0;
        *ret = out;
        *ret_len = (size_t)got - pad;
        return 0;
}

void e2b_process_send_input(struct e2b_call *call, struct api_response *resp)
{
        struct space_error err = { 0 };
        json_t *msg = NULL;
        struct sandbox sb;
        struct command_record rec = { 0 };
        if (control_begin(call, &msg, &sb, &rec, &err) < 0)
                return control_end(resp, msg, NULL, &rec, -1, &err);
        json_t *input = json_object_get(msg, "input");
        const char *data = json_string_value(json_object_get(input, "stdin"));
        if (!data)
                data = json_string_value(json_object_get(input, "pty"));
        uint8_t *bytes = NULL;
        size_t len = 0;
        int r = 0;
        if (!data)
                r = space_error_set(&err, SPACE_E_INVALID_REQUEST, "input must carry stdin or pty bytes");
        else if (base64_decode(data, &bytes, &len) < 0)
                r = space_error_set(&err, SPACE_E_INVALID_REQUEST, "input is not valid base64");
        else if (len > 0)
                r = command_service_input(call->req.ctx, &sb, rec.id, bytes, len, &err);
        free(bytes);
        control_end(resp, msg, &sb, &rec, r, &err);
}

/* "SIGNAL_SIGKILL", "SIGKILL", "KILL" or the number. */
static int signal_of(const json_t *v)
{
        if (json_is_integer(v)) {
                json_int_t n = json_integer_value(v);
                return n >= 1 && n <= 64 ? (int)n : -1;
        }
        const char *s = json_string_value(v);
        if (!s)
                return -1;
        if (strncmp(s, "SIGNAL_", 7) == 0)
                s += 7;
        if (strncmp(s, "SIG", 3) == 0)
                s += 3;
        static const struct {
                const char *name;
                int sig;
        } names[] = { { "KILL", SIGKILL }, { "TERM", SIGTERM }, { "INT", SIGINT },   { "HUP", SIGHUP },  { "QUIT", SIGQUIT },
                      { "USR1", SIGUSR1 }, { "USR2", SIGUSR2 }, { "STOP", SIGSTOP }, { "CONT", SIGCONT } };
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
                if (strcmp(s, names[i].name) == 0)
                        return names[i].sig;
        return -1;
}

void e2b_process_send_signal(struct e2b_call *call, struct api_response *resp)
{
        struct space_error err = { 0 };
        json_t *msg = NULL;
        struct sandbox sb;
        struct command_record rec = { 0 };
        if (control_begin(call, &msg, &sb, &rec, &err) < 0)
                return control_end(resp, msg, NULL, &rec, -1, &err);
        int sig = signal_of(json_object_get(msg, "signal"));
        int r = sig < 0 ? space_error_set(&err, SPACE_E_INVALID_REQUEST, "unknown signal")
                        : command_service_signal(call->req.ctx, &sb, rec.id, sig, &err);
        control_end(resp, msg, &sb, &rec, r, &err);
}

void e2b_process_close_stdin(struct e2b_call *call, struct api_response *resp)
{
        struct space_error err = { 0 };
        json_t *msg = NULL;
        struct sandbox sb;
        struct command_record rec = { 0 };
        if (control_begin(call, &msg, &sb, &rec, &err) < 0)
                return control_end(resp, msg, NULL, &rec, -1, &err);
        int r = command_service_close_stdin(call->req.ctx, &sb, rec.id, &err);
        control_end(resp, msg, &sb, &rec, r, &err);
}

void e2b_process_update(struct e2b_call *call, struct api_response *resp)
{
        struct space_error err = { 0 };
        json_t *msg = NULL;
        struct sandbox sb;
        struct command_record rec = { 0 };
        if (control_begin(call, &msg, &sb, &rec, &err) < 0)
                return control_end(resp, msg, NULL, &rec, -1, &err);
        json_t *size = json_object_get(json_object_get(msg, "pty"), "size");
        json_int_t cols = json_integer_value(json_object_get(size, "cols"));
        json_int_t rows = json_integer_value(json_object_get(size, "rows"));
        int r = 0;
        if (size && (cols < 1 || cols > 65535 || rows < 1 || rows > 65535))
                r = space_error_set(&err, SPACE_E_INVALID_REQUEST, "pty.size needs cols and rows in 1-65535");
        else if (size)
                r = command_service_resize(call->req.ctx, &sb, rec.id, (uint32_t)cols, (uint32_t)rows, &err);
        control_end(resp, msg, &sb, &rec, r, &err);
}
