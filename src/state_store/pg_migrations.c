/* Versioned schema of the PostgreSQL backend: entry i moves the schema from version i to
 * i+1, numbered as SQLite's (sqlite_migrations.c) so that a later migration is added to
 * both under one number. Each is applied in a transaction of its own at open, under a
 * transaction-scoped advisory lock (two processes opening a fresh database at once do not
 * both migrate it). The version is the one row of space_schema. Never edit a released
 * entry: append.
 *
 * The entries give the same tables, columns, defaults, keys and indexes as SQLite's; the
 * statements there that only move rows written before a migration (5, 9, 10's backfills)
 * have no counterpart: a PostgreSQL database is created by this code, at version 14, so no
 * row predates them. Integers are BIGINT (times are milliseconds), REAL is double
 * precision, and TEXT is COLLATE "C": compared and ordered by bytes as SQLite's, whatever
 * the database's locale (the lists' order and their cursors depend on it). */
#include "state_store/pg_statement.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* The advisory lock key of migrations: "space-mg". */
#define PG_MIGRATION_LOCK "7526755647431812967"

static const char *const migrations[] = {
        /* 1: first schema */
        "CREATE TABLE sandboxes ("
        "  id TEXT COLLATE \"C\" PRIMARY KEY, state TEXT COLLATE \"C\" NOT NULL, state_reason TEXT COLLATE \"C\" NOT NULL "
        "DEFAULT '',"
        "  template TEXT COLLATE \"C\" NOT NULL, environment TEXT COLLATE \"C\" NOT NULL, cpus DOUBLE PRECISION NOT NULL, "
        "memory_mb BIGINT NOT NULL,"
        "  pids BIGINT NOT NULL, disk_mb BIGINT NOT NULL, env TEXT COLLATE \"C\" NOT NULL, metadata TEXT COLLATE \"C\" NOT NULL,"
        "  timeout_s BIGINT NOT NULL, on_timeout TEXT COLLATE \"C\" NOT NULL, expires_at BIGINT NOT NULL DEFAULT 0,"
        "  created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL,"
        "  pid BIGINT NOT NULL DEFAULT 0, pid_start BIGINT NOT NULL DEFAULT 0, uid_base BIGINT NOT NULL);"
        "CREATE INDEX sandboxes_state ON sandboxes(state);"
        "CREATE TABLE operations ("
        "  id TEXT COLLATE \"C\" PRIMARY KEY, kind TEXT COLLATE \"C\" NOT NULL, target TEXT COLLATE \"C\" NOT NULL, state TEXT "
        "COLLATE \"C\" NOT NULL,"
        "  error_code TEXT COLLATE \"C\" NOT NULL DEFAULT '', error_message TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
        "  created_at BIGINT NOT NULL, started_at BIGINT NOT NULL DEFAULT 0, finished_at BIGINT NOT NULL DEFAULT 0);"
        "CREATE INDEX operations_target ON operations(target, created_at);"
        "CREATE INDEX operations_state ON operations(state);"
        "CREATE TABLE templates ("
        "  name TEXT COLLATE \"C\" PRIMARY KEY, state TEXT COLLATE \"C\" NOT NULL, environment TEXT COLLATE \"C\" NOT NULL,"
        "  state_reason TEXT COLLATE \"C\" NOT NULL DEFAULT '', updated_at BIGINT NOT NULL);"
        "CREATE TABLE api_keys ("
        "  id TEXT COLLATE \"C\" PRIMARY KEY, name TEXT COLLATE \"C\" NOT NULL, hash TEXT COLLATE \"C\" NOT NULL UNIQUE,"
        "  created_at BIGINT NOT NULL, last_used_at BIGINT NOT NULL DEFAULT 0);",
        /* 2: snapshots, lineage, operation parameters and results */
        "ALTER TABLE sandboxes ADD COLUMN parent_sandbox_id TEXT COLLATE \"C\" NOT NULL DEFAULT '';"
        "ALTER TABLE sandboxes ADD COLUMN parent_snapshot_id TEXT COLLATE \"C\" NOT NULL DEFAULT '';"
        "ALTER TABLE sandboxes ADD COLUMN head_snapshot_id TEXT COLLATE \"C\" NOT NULL DEFAULT '';"
        "ALTER TABLE operations ADD COLUMN params TEXT COLLATE \"C\" NOT NULL DEFAULT '';"
        "ALTER TABLE operations ADD COLUMN result TEXT COLLATE \"C\" NOT NULL DEFAULT '';"
        "CREATE TABLE snapshots ("
        "  id TEXT COLLATE \"C\" PRIMARY KEY, sandbox_id TEXT COLLATE \"C\" NOT NULL, state TEXT COLLATE \"C\" NOT NULL, label "
        "TEXT COLLATE \"C\" NOT NULL DEFAULT '',"
        "  kind TEXT COLLATE \"C\" NOT NULL, parent_snapshot_id TEXT COLLATE \"C\" NOT NULL DEFAULT '', bytes_exclusive BIGINT "
        "NOT NULL DEFAULT -1,"
        "  pause_us BIGINT NOT NULL DEFAULT 0, created_at BIGINT NOT NULL);"
        "CREATE INDEX snapshots_sandbox ON snapshots(sandbox_id, created_at);",
        /* 3: rolling snapshot policies */
        "ALTER TABLE sandboxes ADD COLUMN rolling TEXT COLLATE \"C\" NOT NULL DEFAULT '';"
        "ALTER TABLE snapshots ADD COLUMN rolling BIGINT NOT NULL DEFAULT 0;",
        /* 4: data plane: attach sessions and commands */
        "CREATE TABLE attach_sessions ("
        "  id TEXT COLLATE \"C\" PRIMARY KEY, sandbox_id TEXT COLLATE \"C\" NOT NULL, token_hash TEXT COLLATE \"C\" NOT NULL "
        "UNIQUE,"
        "  created_at BIGINT NOT NULL, expires_at BIGINT NOT NULL, revoked_at BIGINT NOT NULL DEFAULT 0);"
        "CREATE INDEX attach_sessions_sandbox ON attach_sessions(sandbox_id, created_at);"
        "CREATE TABLE commands ("
        "  id TEXT COLLATE \"C\" PRIMARY KEY, sandbox_id TEXT COLLATE \"C\" NOT NULL, tag TEXT COLLATE \"C\" NOT NULL DEFAULT "
        "'', spec TEXT COLLATE \"C\" NOT NULL,"
        "  state TEXT COLLATE \"C\" NOT NULL, pid BIGINT NOT NULL DEFAULT 0, exit_code BIGINT NOT NULL DEFAULT 0,"
        "  term_signal BIGINT NOT NULL DEFAULT 0, timed_out BIGINT NOT NULL DEFAULT 0,"
        "  reason TEXT COLLATE \"C\" NOT NULL DEFAULT '', created_at BIGINT NOT NULL, started_at BIGINT NOT NULL DEFAULT 0,"
        "  finished_at BIGINT NOT NULL DEFAULT 0);"
        "CREATE INDEX commands_sandbox ON commands(sandbox_id, created_at);"
        "CREATE INDEX commands_state ON commands(state);",
        /* 5: the snapshot an operation needs until it ends */
        "ALTER TABLE operations ADD COLUMN snapshot_id TEXT COLLATE \"C\" NOT NULL DEFAULT '';"
        "CREATE INDEX operations_snapshot ON operations(snapshot_id, state);",
        /* 6: projects (tenants) and roles */
        "CREATE TABLE projects (id TEXT COLLATE \"C\" PRIMARY KEY, created_at BIGINT NOT NULL);"
        "INSERT INTO projects(id, created_at) VALUES ('default', (extract(epoch FROM now()))::bigint * 1000);"
        "ALTER TABLE sandboxes ADD COLUMN project_id TEXT COLLATE \"C\" NOT NULL DEFAULT 'default';"
        "ALTER TABLE snapshots ADD COLUMN project_id TEXT COLLATE \"C\" NOT NULL DEFAULT 'default';"
        "ALTER TABLE operations ADD COLUMN project_id TEXT COLLATE \"C\" NOT NULL DEFAULT 'default';"
        "ALTER TABLE commands ADD COLUMN project_id TEXT COLLATE \"C\" NOT NULL DEFAULT 'default';"
        "ALTER TABLE attach_sessions ADD COLUMN project_id TEXT COLLATE \"C\" NOT NULL DEFAULT 'default';"
        "ALTER TABLE templates ADD COLUMN project_id TEXT COLLATE \"C\" NOT NULL DEFAULT '';"
        "ALTER TABLE api_keys ADD COLUMN project_id TEXT COLLATE \"C\" NOT NULL DEFAULT 'default';"
        "ALTER TABLE api_keys ADD COLUMN role TEXT COLLATE \"C\" NOT NULL DEFAULT 'admin';"
        "ALTER TABLE api_keys ADD COLUMN permissions BIGINT NOT NULL DEFAULT 4294967295;"
        "ALTER TABLE api_keys ADD COLUMN expires_at BIGINT NOT NULL DEFAULT 0;"
        "CREATE INDEX sandboxes_project ON sandboxes(project_id, created_at);"
        "CREATE INDEX snapshots_project ON snapshots(project_id, created_at);"
        "CREATE INDEX operations_project ON operations(project_id, created_at);"
        "CREATE INDEX api_keys_project ON api_keys(project_id, created_at);",
        /* 7: the audit log (append-only; purged by age after --audit-retention) */
        "CREATE TABLE audit_log ("
        "  id TEXT COLLATE \"C\" PRIMARY KEY, created_at BIGINT NOT NULL, request_id TEXT COLLATE \"C\" NOT NULL,"
        "  key_id TEXT COLLATE \"C\", project TEXT COLLATE \"C\", role TEXT COLLATE \"C\", action TEXT COLLATE \"C\" NOT NULL, "
        "target TEXT COLLATE \"C\","
        "  method TEXT COLLATE \"C\" NOT NULL, status BIGINT NOT NULL, error_code TEXT COLLATE \"C\", source TEXT COLLATE \"C\");"
        "CREATE INDEX audit_log_created ON audit_log(created_at, id);"
        "CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS"
        "  $$ BEGIN RAISE EXCEPTION 'the audit log is append-only'; END $$;"
        "CREATE TRIGGER audit_log_append_only BEFORE UPDATE ON audit_log"
        "  FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();",
        /* 8: indexes in the (created_at, id) order lists are paged by */
        "CREATE INDEX sandboxes_created ON sandboxes(created_at, id);"
        "CREATE INDEX operations_created ON operations(created_at, id);"
        "CREATE INDEX snapshots_created ON snapshots(created_at, id);"
        "CREATE INDEX api_keys_created ON api_keys(created_at, id);",
        /* 9: the runtime a sandbox runs on and that driver's own handle of it */
        "ALTER TABLE sandboxes ADD COLUMN runtime TEXT COLLATE \"C\" NOT NULL DEFAULT 'namespaces';"
        "ALTER TABLE sandboxes ADD COLUMN runtime_state TEXT COLLATE \"C\" NOT NULL DEFAULT '';"
        "ALTER TABLE sandboxes DROP COLUMN pid;"
        "ALTER TABLE sandboxes DROP COLUMN pid_start;"
        "ALTER TABLE sandboxes DROP COLUMN uid_base;",
        /* 10: the objects an operation names besides its target */
        "CREATE TABLE operation_refs ("
        "  operation_id TEXT COLLATE \"C\" NOT NULL REFERENCES operations(id) ON DELETE CASCADE, ref TEXT COLLATE \"C\" NOT NULL,"
        "  PRIMARY KEY (operation_id, ref));"
        "CREATE INDEX operation_refs_ref ON operation_refs(ref);",
        /* 11: the key that opened an attach session */
        "ALTER TABLE attach_sessions ADD COLUMN key_id TEXT COLLATE \"C\" NOT NULL DEFAULT '';"
        "CREATE INDEX attach_sessions_key ON attach_sessions(key_id);",
        /* 12: one row the health check rewrites */
        "CREATE TABLE store_probe (id BIGINT PRIMARY KEY CHECK (id = 1), at BIGINT NOT NULL);",
        /* 13: a sandbox's egress */
        "ALTER TABLE sandboxes ADD COLUMN network TEXT COLLATE \"C\" NOT NULL DEFAULT '';",
        /* 14: policies: one document per row, its name unique in its project */
        "CREATE TABLE policies ("
        "  id TEXT COLLATE \"C\" PRIMARY KEY, project_id TEXT COLLATE \"C\" NOT NULL, name TEXT COLLATE \"C\" NOT NULL,"
        "  sandbox_id TEXT COLLATE \"C\" NOT NULL DEFAULT '', version BIGINT NOT NULL, document TEXT COLLATE \"C\" NOT NULL,"
        "  created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, UNIQUE (project_id, name));"
        "CREATE INDEX policies_project ON policies(project_id, created_at);",
        /* 15: approvals: a held command's request and its decision */
        "CREATE TABLE approvals ("
        "  id TEXT COLLATE \"C\" PRIMARY KEY, project_id TEXT COLLATE \"C\" NOT NULL, sandbox_id TEXT COLLATE \"C\" NOT NULL,"
        "  command_id TEXT COLLATE \"C\" NOT NULL, key_id TEXT COLLATE \"C\" NOT NULL, policy_id TEXT COLLATE \"C\" NOT NULL,"
        "  rule_id TEXT COLLATE \"C\" NOT NULL, reason TEXT COLLATE \"C\" NOT NULL, state TEXT COLLATE \"C\" NOT NULL,"
        "  request TEXT COLLATE \"C\" NOT NULL, decided_by TEXT COLLATE \"C\" NOT NULL, comment TEXT COLLATE \"C\" NOT NULL,"
        "  created_at BIGINT NOT NULL, expires_at BIGINT NOT NULL, decided_at BIGINT NOT NULL);"
        "CREATE INDEX approvals_project ON approvals(project_id, created_at);"
        "CREATE INDEX approvals_state ON approvals(state);",
        /* 16: what else an audit row records (an egress connection's name, port, bytes, …) */
        "ALTER TABLE audit_log ADD COLUMN detail TEXT COLLATE \"C\";",
        /* 17: the fleet: nodes, the claims on unfinished operations, a sandbox's node */
        "CREATE TABLE nodes ("
        "  id TEXT COLLATE \"C\" PRIMARY KEY, address TEXT COLLATE \"C\" NOT NULL, capacity BIGINT NOT NULL,"
        "  labels TEXT COLLATE \"C\" NOT NULL, state TEXT COLLATE \"C\" NOT NULL, started_at BIGINT NOT NULL,"
        "  heartbeat_at BIGINT NOT NULL);"
        "ALTER TABLE operations ADD COLUMN claim_owner TEXT COLLATE \"C\" NOT NULL DEFAULT '';"
        "ALTER TABLE operations ADD COLUMN claim_token TEXT COLLATE \"C\" NOT NULL DEFAULT '';"
        "ALTER TABLE operations ADD COLUMN claimed_at BIGINT NOT NULL DEFAULT 0;"
        "ALTER TABLE operations ADD COLUMN claims BIGINT NOT NULL DEFAULT 0;"
        "ALTER TABLE sandboxes ADD COLUMN node_id TEXT COLLATE \"C\" NOT NULL DEFAULT '';",
        /* 18: platform-held secrets: a data key per project, sealed values, credential bindings */
        "CREATE TABLE secret_data_keys (project_id TEXT COLLATE \"C\" PRIMARY KEY, sealed TEXT COLLATE \"C\" NOT NULL,"
        "  created_at BIGINT NOT NULL);"
        "CREATE TABLE secrets ("
        "  id TEXT COLLATE \"C\" PRIMARY KEY, project_id TEXT COLLATE \"C\" NOT NULL, name TEXT COLLATE \"C\" NOT NULL,"
        "  sealed TEXT COLLATE \"C\" NOT NULL, created_at BIGINT NOT NULL, UNIQUE (project_id, name));"
        "CREATE TABLE credential_bindings ("
        "  id TEXT COLLATE \"C\" PRIMARY KEY, project_id TEXT COLLATE \"C\" NOT NULL, sandbox_id TEXT COLLATE \"C\" NOT NULL,"
        "  secret_name TEXT COLLATE \"C\" NOT NULL, spec TEXT COLLATE \"C\" NOT NULL, created_at BIGINT NOT NULL);"
        "CREATE INDEX credential_bindings_project ON credential_bindings(project_id, created_at);",
        /* 19: a sandbox's own idle policy ('' for none: the server's --hibernate-idle) */
        "ALTER TABLE sandboxes ADD COLUMN idle TEXT COLLATE \"C\" NOT NULL DEFAULT '';",
        /* 20: E2B's private ports (allowPublicTraffic false): requests need the traffic token */
        "ALTER TABLE sandboxes ADD COLUMN private_ports BIGINT NOT NULL DEFAULT 0;",
};

static int run(PGconn *conn, const char *sql)
{
        PGresult *res = PQexec(conn, sql);
        int ok = PQresultStatus(res) == PGRES_COMMAND_OK || PQresultStatus(res) == PGRES_TUPLES_OK;
        PQclear(res);
        return ok ? 0 : -EIO;
}

static int current_version(PGconn *conn, int *ret)
{
        PGresult *res = PQexec(conn, "SELECT version FROM space_schema");
        int r = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 ? 0 : -EIO;
        if (r == 0)
                *ret = atoi(PQgetvalue(res, 0, 0));
        PQclear(res);
        return r;
}

int pg_migrations_apply(PGconn *conn, int *ret_version)
{
        return pg_migrations_apply_upto(conn, (int)(sizeof(migrations) / sizeof(migrations[0])), ret_version);
}

int pg_migrations_apply_upto(PGconn *conn, int target, int *ret_version)
{
        int known = (int)(sizeof(migrations) / sizeof(migrations[0]));
        int latest = target < known ? target : known;
        int version = 0;
        if (run(conn, "BEGIN") < 0)
                return -EIO;
        if (run(conn, "SELECT pg_advisory_xact_lock(" PG_MIGRATION_LOCK ")") < 0 ||
            run(conn, "CREATE TABLE IF NOT EXISTS space_schema (version INTEGER NOT NULL)") < 0 ||
            run(conn, "INSERT INTO space_schema SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM space_schema)") < 0 ||
            current_version(conn, &version) < 0 || run(conn, "COMMIT") < 0) {
                run(conn, "ROLLBACK");
                return -EIO;
        }
        if (version > known)
                return -EPROTO; /* written by a newer spaced */
        for (;;) {
                if (run(conn, "BEGIN") < 0)
                        return -EIO;
                /* Read again under the lock: another process may have migrated meanwhile. */
                if (run(conn, "SELECT pg_advisory_xact_lock(" PG_MIGRATION_LOCK ")") < 0 || current_version(conn, &version) < 0) {
                        run(conn, "ROLLBACK");
                        return -EIO;
                }
                if (version >= latest) {
                        run(conn, "COMMIT");
                        break;
                }
                char set[64];
                snprintf(set, sizeof(set), "UPDATE space_schema SET version = %d", version + 1);
                if (run(conn, migrations[version]) < 0 || run(conn, set) < 0 || run(conn, "COMMIT") < 0) {
                        run(conn, "ROLLBACK");
                        return -EIO;
                }
        }
        if (ret_version)
                *ret_version = version > latest ? version : latest;
        return 0;
}
