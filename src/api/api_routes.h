/* The route handlers, grouped by resource. Each fills resp (status + JSON). */
#pragma once

#include "api/api_auth.h"
#include "api/api_request.h"
#include "state_store/state_store.h"

typedef void (*api_handler)(struct api_request *req, struct api_response *resp);

extern const struct api_upload_sink snapshot_import_sink;
/* POST /v1/snapshots/import/memory (memory_import.c): a memory image staged under
 * memory_import_key() for the filesystem import of its snapshot by the same project. */
extern const struct api_upload_sink memory_import_sink;
#define MEMORY_IMPORT_KEY_SIZE 96
int memory_import_key(const char *project_id, const char *snapshot_id, char *buf, size_t size);
extern const struct api_upload_sink file_upload_sink;
extern const struct api_upload_sink port_proxy_sink;
void route_console_sign_in(struct api_request *req, struct api_response *resp);
void route_console_session_get(struct api_request *req, struct api_response *resp);
void route_console_sign_out(struct api_request *req, struct api_response *resp);
void route_file_download(struct api_request *req, struct api_response *resp);
void route_file_stat(struct api_request *req, struct api_response *resp);
void route_file_list(struct api_request *req, struct api_response *resp);
void route_file_mkdir(struct api_request *req, struct api_response *resp);
void route_file_move(struct api_request *req, struct api_response *resp);
void route_file_remove(struct api_request *req, struct api_response *resp);
void route_file_watch(struct api_request *req, struct api_response *resp);
extern const struct api_upload_sink template_build_sink;
extern const struct api_upload_sink template_import_sink;
void route_template_build_log(struct api_request *req, struct api_response *resp);
void route_template_build_events(struct api_request *req, struct api_response *resp);
void route_operation_cancel(struct api_request *req, struct api_response *resp);
void route_template_layers_prune(struct api_request *req, struct api_response *resp);
void route_snapshot_export(struct api_request *req, struct api_response *resp);
void route_snapshot_memory_export(struct api_request *req, struct api_response *resp);

/* Looks up the route; sets *ret_auth, and req's body rule, permission and object (checked
 * by api_auth_request). NULL with err (404/405) when none matches. */
api_handler api_router_match(struct api_request *req, enum api_auth_kind *ret_auth, struct space_error *err);
/* The upload sink for a request whose body is streamed (POST /v1/snapshots/import), or NULL;
 * sets *ret_auth when found. */
const struct api_upload_sink *api_router_upload_sink(struct api_request *req, enum api_auth_kind *ret_auth);

/* ?wait=true&timeout_s=N, read before anything is submitted so a bad value changes nothing. */
struct api_wait {
        bool wait;
        long long timeout_s;
};
int api_wait_parse(const struct api_request *req, struct api_wait *ret, struct space_error *err);

/* Answers 202 {"operation", key: <target now>}, or, when asked to wait, waits for it to end. */
void api_respond_operation(struct api_request *req, struct api_response *resp, const struct operation *op,
                           const struct api_wait *w, const char *key);

/* A sandbox as the API shows it, with the storage pool's condition (api_render_sandbox). */
json_t *api_sandbox_json(struct spaced_context *ctx, const struct sandbox *sb);

/* Validates the sandbox id in segment 2 and loads its row (404 when unknown). */
int api_load_sandbox(struct api_request *req, struct sandbox *ret, struct space_error *err);

void route_health(struct api_request *req, struct api_response *resp);
void route_ready(struct api_request *req, struct api_response *resp);
void route_version(struct api_request *req, struct api_response *resp);
void route_sandbox_create(struct api_request *req, struct api_response *resp);
void route_sandbox_list(struct api_request *req, struct api_response *resp);
void route_sandbox_events(struct api_request *req, struct api_response *resp);
void route_sandbox_get(struct api_request *req, struct api_response *resp);
void route_sandbox_stats(struct api_request *req, struct api_response *resp);
void route_sandbox_action(struct api_request *req, struct api_response *resp);
void route_sandbox_pause(struct api_request *req, struct api_response *resp);
void route_sandbox_delete(struct api_request *req, struct api_response *resp);
void route_sandbox_exec(struct api_request *req, struct api_response *resp);
void route_template_list(struct api_request *req, struct api_response *resp);
void route_template_get(struct api_request *req, struct api_response *resp);
void route_template_build(struct api_request *req, struct api_response *resp);
void route_template_delete(struct api_request *req, struct api_response *resp);
void route_operation_list(struct api_request *req, struct api_response *resp);
void route_operation_get(struct api_request *req, struct api_response *resp);
void route_key_create(struct api_request *req, struct api_response *resp);
void route_key_list(struct api_request *req, struct api_response *resp);
void route_key_delete(struct api_request *req, struct api_response *resp);
void route_audit_list(struct api_request *req, struct api_response *resp);
void route_secret_create(struct api_request *req, struct api_response *resp);
void route_secret_list(struct api_request *req, struct api_response *resp);
void route_secret_get(struct api_request *req, struct api_response *resp);
void route_secret_delete(struct api_request *req, struct api_response *resp);
void route_binding_create(struct api_request *req, struct api_response *resp);
void route_binding_list(struct api_request *req, struct api_response *resp);
void route_binding_get(struct api_request *req, struct api_response *resp);
void route_binding_delete(struct api_request *req, struct api_response *resp);
void route_grant_create(struct api_request *req, struct api_response *resp);
void route_grant_list(struct api_request *req, struct api_response *resp);
void route_grant_delete(struct api_request *req, struct api_response *resp);
void route_policy_create(struct api_request *req, struct api_response *resp);
void route_policy_list(struct api_request *req, struct api_response *resp);
void route_policy_get(struct api_request *req, struct api_response *resp);
void route_policy_replace(struct api_request *req, struct api_response *resp);
void route_policy_delete(struct api_request *req, struct api_response *resp);
void route_policy_test(struct api_request *req, struct api_response *resp);
void route_approval_list(struct api_request *req, struct api_response *resp);
void route_approval_get(struct api_request *req, struct api_response *resp);
void route_approval_approve(struct api_request *req, struct api_response *resp);
void route_approval_deny(struct api_request *req, struct api_response *resp);
void route_snapshot_create(struct api_request *req, struct api_response *resp);
void route_snapshot_list_of_sandbox(struct api_request *req, struct api_response *resp);
void route_snapshot_list(struct api_request *req, struct api_response *resp);
void route_snapshot_get(struct api_request *req, struct api_response *resp);
void route_snapshot_delete(struct api_request *req, struct api_response *resp);
void route_sandbox_restore(struct api_request *req, struct api_response *resp);
void route_sandbox_fork(struct api_request *req, struct api_response *resp);
void route_capabilities(struct api_request *req, struct api_response *resp);
void route_sandbox_patch(struct api_request *req, struct api_response *resp);
void route_sandbox_network_get(struct api_request *req, struct api_response *resp);
void route_sandbox_network_put(struct api_request *req, struct api_response *resp);
void route_egress_profile_list(struct api_request *req, struct api_response *resp);
json_t *api_render_command(const struct command_record *c);
/* A command held for approval a (202 of exec and of a command start): the command, its
 * approval's id, policy, rule, reason and deadline. */
json_t *api_render_held_command(const struct command_record *c, const struct approval_record *a);
void route_command_start(struct api_request *req, struct api_response *resp);
void route_command_list(struct api_request *req, struct api_response *resp);
void route_command_get(struct api_request *req, struct api_response *resp);
void route_command_events(struct api_request *req, struct api_response *resp);
void route_command_stdin(struct api_request *req, struct api_response *resp);
void route_command_stdin_close(struct api_request *req, struct api_response *resp);
void route_command_signal(struct api_request *req, struct api_response *resp);
void route_command_resize(struct api_request *req, struct api_response *resp);
void route_session_create(struct api_request *req, struct api_response *resp);
void route_session_list(struct api_request *req, struct api_response *resp);
void route_session_renew(struct api_request *req, struct api_response *resp);
void route_session_revoke(struct api_request *req, struct api_response *resp);
void route_project_create(struct api_request *req, struct api_response *resp);
void route_project_list(struct api_request *req, struct api_response *resp);
void route_node_list(struct api_request *req, struct api_response *resp);
void route_project_get(struct api_request *req, struct api_response *resp);

struct spaced_context;
/* rolling_snapshots: object -> normalised policy in *ret, null -> *ret = NULL. */
int api_rolling_policy_parse(struct spaced_context *ctx, const json_t *v, json_t **ret, struct space_error *err);
/* The server's default policy, or NULL when it has none. */
json_t *api_rolling_policy_default(const struct spaced_context *ctx);
