/* POST /v1/sandboxes/{id}/exec: run one command to completion and return its output. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_json.h"
#include "api/api_routes.h"
#include "api/command_spec.h"
#include "api/output_encoding.h"
#include "data_plane/command_exec.h"
#include "data_plane/command_service.h"
#include "runtime/runtime_registry.h"
#include "service/approval_service.h"
#include "service/policy_gate.h"
#include "service/sandbox_access.h"
#include "spaced/spaced_context.h"

static const char *const exec_fields[] = { "cmd", "shell", "env", "cwd", "user", "stdin", "timeout_s", "encoding", NULL };

void route_sandbox_exec(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        json_t *body = NULL, *cmd = NULL, *env = NULL;
        const char *shell = NULL, *cwd = NULL, *user = NULL, *stdin_text = NULL, *encoding = "utf8";
        char tuser[65];
        long long timeout_s = 60;
        struct sandbox sb = { 0 };
        struct exec_result result = { 0 };
        char **argv = NULL, **envp = NULL;
        bool loaded = false;

        if (api_request_json(req, &body, &err) < 0 || api_json_only(body, exec_fields, "", &err) < 0 ||
            api_json_string_array(body, "cmd", 4096, &cmd, &err) < 0 ||
            api_json_string(body, "shell", 262144, &shell, &err) < 0 ||
            api_json_string_map(body, "env", api_json_env_name_ok, 256, 32768, &env, &err) < 0 ||
            api_json_string(body, "cwd", 4095, &cwd, &err) < 0 || api_json_string(body, "user", 64, &user, &err) < 0 ||
            api_json_string(body, "stdin", 64u << 20, &stdin_text, &err) < 0 ||
            api_json_int(body, "timeout_s", 1, 3600, &timeout_s, &err) < 0 ||
            api_json_string(body, "encoding", 16, &encoding, &err) < 0)
                goto fail;
        if (!cmd == !shell) {
                space_error_set(&err, SPACE_E_INVALID_REQUEST, "give exactly one of cmd (array) or shell (string)");
                goto fail;
        }
        if (strcmp(encoding, "utf8") && strcmp(encoding, "base64")) {
                space_error_set(&err, SPACE_E_INVALID_REQUEST, "encoding must be utf8 or base64");
                goto fail;
        }
        if (cwd && cwd[0] != '/') {
                space_error_set(&err, SPACE_E_INVALID_REQUEST, "cwd must be an absolute path");
                goto fail;
        }
        if (api_load_sandbox(req, &sb, &err) < 0)
                goto fail;
        loaded = true;
        if (sb.state != SANDBOX_RUNNING) {
                space_error_set(&err, SPACE_E_INVALID_STATE, "sandbox %s is %s; exec needs it running", sb.id,
                                sandbox_state_name(sb.state));
                goto fail;
        }
        if (user && !command_spec_user_ok(user)) {
                space_error_set(&err, SPACE_E_INVALID_REQUEST, "user must be a user name or uid of the sandbox");
                goto fail;
        }
        /* The template's USER and WORKDIR are the defaults; a user's own default cwd is home. */
        command_spec_template_defaults(sb.environment, &user, &cwd, tuser, sizeof(tuser));
        bool as_root = command_spec_user_is_root(user);
        if (!cwd && as_root)
                cwd = "/";
        argv = command_spec_argv(cmd, shell);
        envp = command_spec_envp(sb.env, env, as_root);
        if (!argv || !envp) {
                space_error_set(&err, SPACE_E_INTERNAL, "out of memory");
                goto fail;
        }
        struct exec_request er = {
                .argv = argv,
                .envp = envp,
                .cwd = cwd,
                .user = as_root ? NULL : user,
                .stdin_data = (const uint8_t *)stdin_text,
                .stdin_len = stdin_text ? strlen(stdin_text) : 0,
                .has_stdin = stdin_text != NULL,
                .timeout_ms = (uint32_t)timeout_s * 1000,
                .output_cap = req->ctx->cfg.exec_output_cap,
        };
        struct policy_hold hold;
        int gate = policy_gate_command(req->ctx, &sb, argv, er.user, cwd, &hold, &err);
        if (gate < 0)
                goto fail;
        if (gate == 1) {
                /* Held: exec answers at once with the pending command, which runs once approved
                 * (follow it as a streamed command: …/commands/{command_id}/events). */
                struct agent_job_spec spec = {
                        .argv = argv,
                        .envp = envp,
                        .cwd = cwd,
                        .user = er.user,
                        .stdin_open = stdin_text != NULL,
                        .timeout_ms = er.timeout_ms,
                };
                struct command_record rec;
                struct approval_record apr;
                if (approval_service_hold(req->ctx, &req->principal, req->session_id, &sb, &spec, "exec", body, stdin_text, &hold,
                                          &rec, &apr, &err) < 0)
                        goto fail;
                api_response_json(resp, 202, api_render_held_command(&rec, &apr));
                approval_record_release(&apr);
                command_record_release(&rec);
                goto out;
        }
        const struct runtime_driver *driver = runtime_registry_for(&req->ctx->runtimes, &sb, &err);
        if (!driver)
                goto fail;
        /* Watched, it runs as a streamed command: the exec watch's verdicts travel on the
         * output channel, which the one-shot EXEC does not have. */
        bool watched = command_service_watches(req->ctx, &sb);
        if (watched ? command_exec_run(req->ctx, &sb, &er, body, &result, &err) < 0
                    : driver->ops->exec(driver, &sb, &er, &result, &err) < 0) {
                /* Paused or stopped while we asked: that is a state conflict, not a failure. */
                struct sandbox now;
                struct space_error gone;
                if (sandbox_access_load(req->ctx, &req->principal, sb.id, &now, &gone) == 0) {
                        if (now.state != SANDBOX_RUNNING)
                                space_error_set(&err, SPACE_E_INVALID_STATE, "sandbox %s became %s during exec", sb.id,
                                                sandbox_state_name(now.state));
                        sandbox_release(&now);
                }
                goto fail;
        }

        bool b64 = strcmp(encoding, "base64") == 0;
        json_t *out = b64 ? output_encoding_base64(result.out, result.out_len) : output_encoding_utf8(result.out, result.out_len);
        json_t *errj =
                b64 ? output_encoding_base64(result.err, result.err_len) : output_encoding_utf8(result.err, result.err_len);
        api_response_json(resp, 200,
                          json_pack("{s:i, s:o, s:o, s:o, s:f, s:b, s:b, s:b, s:b, s:s}", "exit_code", result.exit_code, "signal",
                                    result.term_signal ? json_integer(result.term_signal) : json_null(), "stdout", out, "stderr",
                                    errj, "duration_ms", (double)result.duration_us / 1000.0, "truncated", result.truncated,
                                    "timed_out", result.timed_out, "oom_killed", result.oom_killed, "pids_limit_hit",
                                    result.pids_limit_hit, "encoding", encoding));
        goto out;
fail:
        api_response_error(resp, &err);
out:
        exec_result_release(&result);
        command_spec_strv_free(argv);
        command_spec_strv_free(envp);
        if (loaded)
                sandbox_release(&sb);
        json_decref(body);
}
