/* store_record_rows: row -> struct decoding shared by the SQL backends (SQLite, PostgreSQL).
 * Each backend reads its result rows through a struct store_row (a column reader over its
 * own statement or result); the decoders below fill the state_store structs from the
 * columns in the order of the *_COLUMNS lists, which both backends select alike. Not for
 * use outside src/state_store. */
#pragma once

#include <jansson.h>
#include <stdint.h>

#include "state_store/state_store.h"

struct store_row {
        /* The column's text, NULL when it is NULL. */
        const char *(*text)(const void *row, int col);
        int64_t (*integer)(const void *row, int col);
        double (*real)(const void *row, int col);
        const void *row;
};

/* A decoder fills *elem (one of the structs) from the row. */
typedef void (*store_row_decode)(const struct store_row *r, void *elem);

/* The columns each decoder reads, in order. */
#define STORE_SB_COLUMNS                                                                                 \
        "id, state, state_reason, template, environment, cpus, memory_mb, pids, disk_mb, env, metadata," \
        " timeout_s, on_timeout, expires_at, created_at, updated_at, runtime, runtime_state,"            \
        " parent_sandbox_id, parent_snapshot_id, head_snapshot_id, rolling, project_id, network, idle"
#define STORE_OP_COLUMNS                                                                                                         \
        "id, kind, target, state, error_code, error_message, created_at, started_at, finished_at, params, result, snapshot_id, " \
        "project_id"
/* The columns a sandbox / an operation read takes: the inserted ones and those only the
 * store writes. */
#define STORE_SB_READ STORE_SB_COLUMNS ", node_id, private_ports"
#define STORE_OP_READ STORE_OP_COLUMNS ", claim_owner, claim_token, claimed_at, claims"
#define STORE_NODE_COLUMNS "id, address, capacity, labels, state, started_at, heartbeat_at"
#define STORE_SNAP_COLUMNS \
        "id, sandbox_id, state, label, kind, parent_snapshot_id, bytes_exclusive, pause_us, created_at, rolling, project_id"
#define STORE_TEMPLATE_COLUMNS "name, state, environment, state_reason, updated_at, project_id"
#define STORE_KEY_COLUMNS "id, name, hash, created_at, last_used_at, project_id, role, permissions, expires_at"
#define STORE_PROJECT_COLUMNS "id, created_at"
/* The columns a session insert writes; a read takes project_id after them. */
#define STORE_SESSION_COLUMNS "id, sandbox_id, token_hash, created_at, expires_at, revoked_at, key_id"
#define STORE_SESSION_READ STORE_SESSION_COLUMNS ", project_id"
#define STORE_COMMAND_COLUMNS                                                                           \
        "id, sandbox_id, tag, spec, state, pid, exit_code, term_signal, timed_out, reason, created_at," \
        " started_at, finished_at"
#define STORE_AUDIT_COLUMNS \
        "id, created_at, request_id, key_id, project, role, action, target, method, status, error_code, source, detail"
#define STORE_POLICY_COLUMNS "id, project_id, name, sandbox_id, version, document, created_at, updated_at"
#define STORE_APPROVAL_COLUMNS                                                                                             \
        "id, project_id, sandbox_id, command_id, key_id, policy_id, rule_id, reason, state, request, decided_by, comment," \
        " created_at, expires_at, decided_at"
#define STORE_SECRET_COLUMNS "id, project_id, name, sealed, created_at"
#define STORE_BINDING_COLUMNS "id, project_id, sandbox_id, secret_name, spec, created_at"

void store_row_sandbox(const struct store_row *r, void *elem);
void store_row_operation(const struct store_row *r, void *elem);
void store_row_snapshot(const struct store_row *r, void *elem);
void store_row_template(const struct store_row *r, void *elem);
void store_row_key(const struct store_row *r, void *elem);
void store_row_project(const struct store_row *r, void *elem);
void store_row_session(const struct store_row *r, void *elem);
void store_row_command(const struct store_row *r, void *elem);
void store_row_audit(const struct store_row *r, void *elem);
void store_row_policy(const struct store_row *r, void *elem);
void store_row_approval(const struct store_row *r, void *elem);
void store_row_node(const struct store_row *r, void *elem);
void store_row_secret(const struct store_row *r, void *elem);
void store_row_binding(const struct store_row *r, void *elem);
/* The first column's text into *(char **)elem (malloc'd; NULL when out of memory). */
void store_row_first_text(const struct store_row *r, void *elem);
/* (text a, text b, count) of the tallies. */
void store_row_tally(const struct store_row *r, void *elem);

/* Releases of one element, for the collectors' error paths. */
void store_release_sandbox(void *elem);
void store_release_template(void *elem);
void store_release_command(void *elem);
void store_release_policy(void *elem);
void store_release_approval(void *elem);
void store_release_secret(void *elem);
void store_release_binding(void *elem);

/* What the stores write for a JSON value: compact text, "{}" for NULL; free() it. */
char *store_json_text(const json_t *v);
