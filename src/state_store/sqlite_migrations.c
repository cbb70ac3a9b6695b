/* Versioned schema for the SQLite backend. Each entry moves the schema from version i to
 * i+1; applied in one transaction each, at open. Never edit a released entry: append. */
#include "state_store/sqlite_migrations.h"

#include <errno.h>
#include <stdio.h>

static const char *const migrations[] = {
        /* 1: first schema */
        "CREATE TABLE sandboxes ("
        "  id TEXT PRIMARY KEY, state TEXT NOT NULL, state_reason TEXT NOT NULL DEFAULT '',"
        "  template TEXT NOT NULL, environment TEXT NOT NULL, cpus REAL NOT NULL, memory_mb INTEGER NOT NULL,"
        "  pids INTEGER NOT NULL, disk_mb INTEGER NOT NULL, env TEXT NOT NULL, metadata TEXT NOT NULL,"
        "  timeout_s INTEGER NOT NULL, on_timeout TEXT NOT NULL, expires_at INTEGER NOT NULL DEFAULT 0,"
        "  created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,"
        "  pid INTEGER NOT NULL DEFAULT 0, pid_start INTEGER NOT NULL DEFAULT 0, uid_base INTEGER NOT NULL);"
        "CREATE INDEX sandboxes_state ON sandboxes(state);"
        "CREATE TABLE operations ("
        "  id TEXT PRIMARY KEY, kind TEXT NOT NULL, target TEXT NOT NULL, state TEXT NOT NULL,"
        "  error_code TEXT NOT NULL DEFAULT '', error_message TEXT NOT NULL DEFAULT '',"
        "  created_at INTEGER NOT NULL, started_at INTEGER NOT NULL DEFAULT 0, finished_at INTEGER NOT NULL DEFAULT 0);"
        "CREATE INDEX operations_target ON operations(target, created_at);"
        "CREATE INDEX operations_state ON operations(state);"
        "CREATE TABLE templates ("
        "  name TEXT PRIMARY KEY, state TEXT NOT NULL, environment TEXT NOT NULL,"
        "  state_reason TEXT NOT NULL DEFAULT '', updated_at INTEGER NOT NULL);"
        "CREATE TABLE api_keys ("
        "  id TEXT PRIMARY KEY, name TEXT NOT NULL, hash TEXT NOT NULL UNIQUE,"
        "  created_at INTEGER NOT NULL, last_used_at INTEGER NOT NULL DEFAULT 0);",
        /* 2: snapshots, lineage, operation parameters and results */
        "ALTER TABLE sandboxes ADD COLUMN parent_sandbox_id TEXT NOT NULL DEFAULT '';"
        "ALTER TABLE sandboxes ADD COLUMN parent_snapshot_id TEXT NOT NULL DEFAULT '';"
        "ALTER TABLE sandboxes ADD COLUMN head_snapshot_id TEXT NOT NULL DEFAULT '';"
        "ALTER TABLE operations ADD COLUMN params TEXT NOT NULL DEFAULT '';"
        "ALTER TABLE operations ADD COLUMN result TEXT NOT NULL DEFAULT '';"
        "CREATE TABLE snapshots ("
        "  id TEXT PRIMARY KEY, sandbox_id TEXT NOT NULL, state TEXT NOT NULL, label TEXT NOT NULL DEFAULT '',"
        "  kind TEXT NOT NULL, parent_snapshot_id TEXT NOT NULL DEFAULT '', bytes_exclusive INTEGER NOT NULL DEFAULT -1,"
        "  pause_us INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL);"
        "CREATE INDEX snapshots_sandbox ON snapshots(sandbox_id, created_at);",
        /* 3: rolling snapshot policies */
        "ALTER TABLE sandboxes ADD COLUMN rolling TEXT NOT NULL DEFAULT '';"
        "ALTER TABLE snapshots ADD COLUMN rolling INTEGER NOT NULL DEFAULT 0;",
        /* 4: data plane: attach sessions and commands */
        "CREATE TABLE attach_sessions ("
        "  id TEXT PRIMARY KEY, sandbox_id TEXT NOT NULL, token_hash TEXT NOT NULL UNIQUE,"
        "  created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL, revoked_at INTEGER NOT NULL DEFAULT 0);"
        "CREATE INDEX attach_sessions_sandbox ON attach_sessions(sandbox_id, created_at);"
        "CREATE TABLE commands ("
        "  id TEXT PRIMARY KEY, sandbox_id TEXT NOT NULL, tag TEXT NOT NULL DEFAULT '', spec TEXT NOT NULL,"
        "  state TEXT NOT NULL, pid INTEGER NOT NULL DEFAULT 0, exit_code INTEGER NOT NULL DEFAULT 0,"
        "  term_signal INTEGER NOT NULL DEFAULT 0, timed_out INTEGER NOT NULL DEFAULT 0,"
        "  reason TEXT NOT NULL DEFAULT '', created_at INTEGER NOT NULL, started_at INTEGER NOT NULL DEFAULT 0,"
        "  finished_at INTEGER NOT NULL DEFAULT 0);"
        "CREATE INDEX commands_sandbox ON commands(sandbox_id, created_at);"
        "CREATE INDEX commands_state ON commands(state);",
        /* 5: the snapshot an operation needs until it ends (a snapshot is not deleted under it) */
        "ALTER TABLE operations ADD COLUMN snapshot_id TEXT NOT NULL DEFAULT '';"
        "UPDATE operations SET snapshot_id = json_extract(params, '$.snapshot_id')"
        "  WHERE state IN ('pending', 'running') AND json_valid(params) AND json_extract(params, '$.snapshot_id') IS NOT NULL;"
        "UPDATE operations SET snapshot_id = (SELECT parent_snapshot_id FROM sandboxes WHERE sandboxes.id = operations.target)"
        "  WHERE kind = 'sandbox.create' AND state IN ('pending', 'running') AND snapshot_id = '';"
        "CREATE INDEX operations_snapshot ON operations(snapshot_id, state);",
        /* 6: projects (tenants) and roles. What exists belongs to the default project; the
         * keys that exist were all-powerful and stay so (admin); templates that exist are
         * shared (every project saw them). Children carry their sandbox's project. */
        "CREATE TABLE projects (id TEXT PRIMARY KEY, created_at INTEGER NOT NULL);"
        "INSERT INTO projects(id, created_at) VALUES ('default', CAST(strftime('%s','now') AS INTEGER) * 1000);"
        "ALTER TABLE sandboxes ADD COLUMN project_id TEXT NOT NULL DEFAULT 'default';"
        "ALTER TABLE snapshots ADD COLUMN project_id TEXT NOT NULL DEFAULT 'default';"
        "ALTER TABLE operations ADD COLUMN project_id TEXT NOT NULL DEFAULT 'default';"
        "ALTER TABLE commands ADD COLUMN project_id TEXT NOT NULL DEFAULT 'default';"
        "ALTER TABLE attach_sessions ADD COLUMN project_id TEXT NOT NULL DEFAULT 'default';"
        "ALTER TABLE templates ADD COLUMN project_id TEXT NOT NULL DEFAULT '';"
        "ALTER TABLE api_keys ADD COLUMN project_id TEXT NOT NULL DEFAULT 'default';"
        "ALTER TABLE api_keys ADD COLUMN role TEXT NOT NULL DEFAULT 'admin';"
        "ALTER TABLE api_keys ADD COLUMN permissions INTEGER NOT NULL DEFAULT 4294967295;"
        "ALTER TABLE api_keys ADD COLUMN expires_at INTEGER NOT NULL DEFAULT 0;"
        "CREATE INDEX sandboxes_project ON sandboxes(project_id, created_at);"
        "CREATE INDEX snapshots_project ON snapshots(project_id, created_at);"
        "CREATE INDEX operations_project ON operations(project_id, created_at);"
        "CREATE INDEX api_keys_project ON api_keys(project_id, created_at);",
        /* 7: the audit log (append-only; purged by age after --audit-retention) */
        "CREATE TABLE audit_log ("
        "  id TEXT PRIMARY KEY, created_at INTEGER NOT NULL, request_id TEXT NOT NULL,"
        "  key_id TEXT, project TEXT, role TEXT, action TEXT NOT NULL, target TEXT,"
        "  method TEXT NOT NULL, status INTEGER NOT NULL, error_code TEXT, source TEXT);"
        "CREATE INDEX audit_log_created ON audit_log(created_at, id);"
        "CREATE TRIGGER audit_log_append_only BEFORE UPDATE ON audit_log"
        "  BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;",
        /* 8: lists are paged by (created_at, id): an index in that order for the lists that
         * are not read per sandbox (those have (sandbox_id, created_at) already) */
        "CREATE INDEX sandboxes_created ON sandboxes(created_at, id);"
        "CREATE INDEX operations_created ON operations(created_at, id);"
        "CREATE INDEX snapshots_created ON snapshots(created_at, id);"
        "CREATE INDEX api_keys_created ON api_keys(created_at, id);",
        /* 9: the runtime a sandbox runs on and that driver's own handle of it replace the
         * namespace driver's columns (whose values move into the handle) */
        "ALTER TABLE sandboxes ADD COLUMN runtime TEXT NOT NULL DEFAULT 'namespaces';"
        "ALTER TABLE sandboxes ADD COLUMN runtime_state TEXT NOT NULL DEFAULT '';"
        "UPDATE sandboxes SET runtime = 'namespaces',"
        "  runtime_state = json_object('pid', pid, 'pid_start', pid_start, 'uid_base', uid_base);"
        "ALTER TABLE sandboxes DROP COLUMN pid;"
        "ALTER TABLE sandboxes DROP COLUMN pid_start;"
        "ALTER TABLE sandboxes DROP COLUMN uid_base;",
        /* 10: the objects an operation names besides its target (a fork's children, the snapshot
         * it takes or restores), as rows instead of a substring search in the params' text */
        "CREATE TABLE operation_refs ("
        "  operation_id TEXT NOT NULL REFERENCES operations(id) ON DELETE CASCADE, ref TEXT NOT NULL,"
        "  PRIMARY KEY (operation_id, ref));"
        "CREATE INDEX operation_refs_ref ON operation_refs(ref);"
        "INSERT OR IGNORE INTO operation_refs SELECT o.id, j.value FROM operations o,"
        "  json_each(CASE WHEN json_valid(o.params) THEN o.params ELSE '{}' END, '$.children') j WHERE j.type = 'text';"
        "INSERT OR IGNORE INTO operation_refs SELECT id, json_extract(p, '$.snapshot_id') FROM"
        "  (SELECT id, CASE WHEN json_valid(params) THEN params ELSE '{}' END AS p FROM operations)"
        "  WHERE json_type(p, '$.snapshot_id') = 'text';",
        /* 11: the key that opened an attach session, so that revoking the key revokes it */
        "ALTER TABLE attach_sessions ADD COLUMN key_id TEXT NOT NULL DEFAULT '';"
        "CREATE INDEX attach_sessions_key ON attach_sessions(key_id);",
        /* 12: one row the health check rewrites, to know the store still takes writes */
        "CREATE TABLE store_probe (id INTEGER PRIMARY KEY CHECK (id = 1), at INTEGER NOT NULL);",
        /* 13: a sandbox's egress (profile and its own allow / deny rules, JSON; '' for the
         * profile none: only lo, as every sandbox before) */
        "ALTER TABLE sandboxes ADD COLUMN network TEXT NOT NULL DEFAULT '';",
        /* 14: policies (docs/governance.md): one document per row, its name unique in its project */
        "CREATE TABLE policies ("
        "  id TEXT PRIMARY KEY, project_id TEXT NOT NULL, name TEXT NOT NULL, sandbox_id TEXT NOT NULL DEFAULT '',"
        "  version INTEGER NOT NULL, document TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,"
        "  UNIQUE (project_id, name));"
        "CREATE INDEX policies_project ON policies(project_id, created_at);",
        /* 15: approvals (docs/governance.md): a held command's request and its decision */
        "CREATE TABLE approvals ("
        "  id TEXT PRIMARY KEY, project_id TEXT NOT NULL, sandbox_id TEXT NOT NULL, command_id TEXT NOT NULL,"
        "  key_id TEXT NOT NULL, policy_id TEXT NOT NULL, rule_id TEXT NOT NULL, reason TEXT NOT NULL, state TEXT NOT NULL,"
        "  request TEXT NOT NULL, decided_by TEXT NOT NULL, comment TEXT NOT NULL, created_at INTEGER NOT NULL,"
        "  expires_at INTEGER NOT NULL, decided_at INTEGER NOT NULL);"
        "CREATE INDEX approvals_project ON approvals(project_id, created_at);"
        "CREATE INDEX approvals_state ON approvals(state);",
        /* 16: what else an audit row records (JSON; NULL for none): an egress connection's
         * name, address, port, decision, bytes and duration (docs/network.md) */
        "ALTER TABLE audit_log ADD COLUMN detail TEXT;",
        /* 17: the fleet (docs/fleet.md): the nodes that heartbeat in this store, the claim a
         * node holds on an unfinished operation (its owner, a token that fences its writes,
         * when, how many times it was claimed) and the node a sandbox lives on ('' none yet) */
        "CREATE TABLE nodes ("
        "  id TEXT PRIMARY KEY, address TEXT NOT NULL, capacity INTEGER NOT NULL, labels TEXT NOT NULL,"
        "  state TEXT NOT NULL, started_at INTEGER NOT NULL, heartbeat_at INTEGER NOT NULL);"
        "ALTER TABLE operations ADD COLUMN claim_owner TEXT NOT NULL DEFAULT '';"
        "ALTER TABLE operations ADD COLUMN claim_token TEXT NOT NULL DEFAULT '';"
        "ALTER TABLE operations ADD COLUMN claimed_at INTEGER NOT NULL DEFAULT 0;"
        "ALTER TABLE operations ADD COLUMN claims INTEGER NOT NULL DEFAULT 0;"
        "ALTER TABLE sandboxes ADD COLUMN node_id TEXT NOT NULL DEFAULT '';",
        /* 18: platform-held secrets (docs/network.md): a data key per project sealed under the
         * master key, values sealed under it, and the bindings that say where the gateway puts them */
        "CREATE TABLE secret_data_keys (project_id TEXT PRIMARY KEY, sealed TEXT NOT NULL, created_at INTEGER NOT NULL);"
        "CREATE TABLE secrets ("
        "  id TEXT PRIMARY KEY, project_id TEXT NOT NULL, name TEXT NOT NULL, sealed TEXT NOT NULL,"
        "  created_at INTEGER NOT NULL, UNIQUE (project_id, name));"
        "CREATE TABLE credential_bindings ("
        "  id TEXT PRIMARY KEY, project_id TEXT NOT NULL, sandbox_id TEXT NOT NULL, secret_name TEXT NOT NULL,"
        "  spec TEXT NOT NULL, created_at INTEGER NOT NULL);"
        "CREATE INDEX credential_bindings_project ON credential_bindings(project_id, created_at);",
        /* 19: a sandbox's own idle policy (docs/memory-state.md): JSON, '' for none (the
         * server's --hibernate-idle applies) */
        "ALTER TABLE sandboxes ADD COLUMN idle TEXT NOT NULL DEFAULT '';",
        /* 20: E2B's private ports (allowPublicTraffic false): requests need the traffic token */
        "ALTER TABLE sandboxes ADD COLUMN private_ports INTEGER NOT NULL DEFAULT 0;",
};

int sqlite_migrations_apply(sqlite3 *db, int *ret_version)
{
        return sqlite_migrations_apply_upto(db, (int)(sizeof(migrations) / sizeof(migrations[0])), ret_version);
}

int sqlite_migrations_apply_upto(sqlite3 *db, int target, int *ret_version)
{
        sqlite3_stmt *stmt = NULL;
        int version = 0;
        if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &stmt, NULL) != SQLITE_OK)
                return -EIO;
        if (sqlite3_step(stmt) == SQLITE_ROW)
                version = sqlite3_column_int(stmt, 0);
        sqlite3_finalize(stmt);

        int known = (int)(sizeof(migrations) / sizeof(migrations[0]));
        if (version > known)
                return -EPROTO; /* written by a newer spaced */
        int latest = target < known ? target : known;
        for (int v = version; v < latest; v++) {
                char pragma[64];
                snprintf(pragma, sizeof(pragma), "PRAGMA user_version = %d;", v + 1);
                if (sqlite3_exec(db, "BEGIN IMMEDIATE;", NULL, NULL, NULL) != SQLITE_OK)
                        return -EIO;
                if (sqlite3_exec(db, migrations[v], NULL, NULL, NULL) != SQLITE_OK ||
                    sqlite3_exec(db, pragma, NULL, NULL, NULL) != SQLITE_OK) {
                        sqlite3_exec(db, "ROLLBACK;", NULL, NULL, NULL);
                        return -EIO;
                }
                if (sqlite3_exec(db, "COMMIT;", NULL, NULL, NULL) != SQLITE_OK)
                        return -EIO;
        }
        if (ret_version)
                *ret_version = latest;
        return 0;
}
