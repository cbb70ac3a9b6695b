/* The SQLite backend of state_store: one connection, WAL, serialised by a mutex.
 * synchronous=NORMAL in WAL mode survives a crash of spaced (kill -9) without loss; only an
 * OS crash can lose the last transactions. */
#include "state_store/state_store.h"
#include "state_store/sqlite_migrations.h"
#include "state_store/sqlite_statement.h"

#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"

static int sqlite_open(const char *location, struct state_store **ret)
{
        struct state_store *st = calloc(1, sizeof(*st));
        if (!st)
                return -ENOMEM;
        pthread_mutex_init(&st->lock, NULL);
        int rc = sqlite3_open_v2(location, &st->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, NULL);
        if (rc != SQLITE_OK) {
                int r = st->db ? sq_error(sqlite3_errcode(st->db)) : -ENOMEM;
                sqlite3_close(st->db);
                free(st);
                return r;
        }
        sqlite3_busy_timeout(st->db, 5000);
        sqlite3_exec(st->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;", NULL, NULL, NULL);
        int r = sqlite_migrations_apply(st->db, NULL);
        if (r < 0) {
                sqlite3_close(st->db);
                free(st);
                return r;
        }
        *ret = st;
        return 0;
}

static void sqlite_close(struct state_store *st)
{
        if (!st)
                return;
        sqlite3_close(st->db);
        pthread_mutex_destroy(&st->lock);
        free(st);
}

/* ---- operations ---- */

static int op_insert_locked(struct state_store *st, const struct operation *op)
{
        sqlite3_stmt *s;
        if (op->snapshot_id[0]) { /* what it needs is still there, in this same transaction */
                int r = sq_prepare(st, "SELECT 1 FROM snapshots WHERE id=?", &s);
                if (r < 0)
                        return r;
                sq_bind_text(s, 1, op->snapshot_id);
                int rc = sqlite3_step(s);
                sqlite3_finalize(s);
                if (rc != SQLITE_ROW)
                        return rc == SQLITE_DONE ? -ENOENT : sq_error(rc);
        }
        int r = sq_prepare(
                st,
                "INSERT INTO operations(id, kind, target, state, error_code, error_message, created_at, started_at, finished_at,"
                " params, result, snapshot_id, project_id) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,"
                " COALESCE(NULLIF(?13, ''), (SELECT project_id FROM sandboxes WHERE id=?3),"
                " (SELECT project_id FROM templates WHERE name=?3), (SELECT project_id FROM snapshots WHERE id=?3), ''))",
                &s);
        if (r < 0)
                return r;
        sq_bind_text(s, 1, op->id);
        sq_bind_text(s, 2, op->kind);
        sq_bind_text(s, 3, op->target);
        sq_bind_text(s, 4, operation_state_name(op->state));
        sq_bind_text(s, 5, op->error_code);
        sq_bind_text(s, 6, op->error_message);
        sqlite3_bind_int64(s, 7, op->created_at_ms);
        sqlite3_bind_int64(s, 8, op->started_at_ms);
        sqlite3_bind_int64(s, 9, op->finished_at_ms);
        sq_bind_text(s, 10, op->params);
        sq_bind_text(s, 11, op->result);
        sq_bind_text(s, 12, op->snapshot_id);
        sq_bind_text(s, 13, op->project_id);
        r = sq_exec_done(s);
        if (r < 0 || !op->params[0])
                return r;
        /* What it names besides its target, for operation_refers (migration 10). */
        r = sq_prepare(
                st,
                "WITH p(j) AS (SELECT CASE WHEN json_valid(?2) THEN ?2 ELSE '{}' END)"
                " INSERT OR IGNORE INTO operation_refs SELECT ?1, value FROM p, json_each(p.j, '$.children') WHERE type = 'text'"
                " UNION SELECT ?1, json_extract(j, '$.snapshot_id') FROM p WHERE json_type(j, '$.snapshot_id') = 'text'",
                &s);
        if (r < 0)
                return r;
        sq_bind_text(s, 1, op->id);
        sq_bind_text(s, 2, op->params);
        return sq_exec_done(s);
}

/* An unfinished operation targets id or names it (operation_refs). */
static int sqlite_operation_refers(struct state_store *st, const char *id, bool *ret)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st,
                           "SELECT EXISTS (SELECT 1 FROM operations WHERE target = ?1 AND state IN ('pending', 'running'))"
                           " OR EXISTS (SELECT 1 FROM operation_refs f JOIN operations o ON o.id = f.operation_id"
                           "            WHERE f.ref = ?1 AND o.state IN ('pending', 'running'))",
                           &s);
        if (r == 0) {
                sq_bind_text(s, 1, id);
                int rc = sqlite3_step(s);
                if (rc == SQLITE_ROW)
                        *ret = sqlite3_column_int(s, 0) != 0;
                else
                        r = sq_error(rc);
                sqlite3_finalize(s);
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}

#define OP_COLUMNS STORE_OP_COLUMNS

static int sqlite_operation_insert(struct state_store *st, const struct operation *op)
{
        pthread_mutex_lock(&st->lock);
        int r = op_insert_locked(st, op);
        pthread_mutex_unlock(&st->lock);
        return r;
}

static int sqlite_operation_update(struct state_store *st, const struct operation *op)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(
                st,
                "UPDATE operations SET state=?, error_code=?, error_message=?, started_at=?, finished_at=?, result=? WHERE id=?"
                " AND (?8 = '' OR claim_token = ?8)",
                &s);
        if (r == 0) {
                sq_bind_text(s, 1, operation_state_name(op->state));
                sq_bind_text(s, 2, op->error_code);
                sq_bind_text(s, 3, op->error_message);
                sqlite3_bind_int64(s, 4, op->started_at_ms);
                sqlite3_bind_int64(s, 5, op->finished_at_ms);
                sq_bind_text(s, 6, op->result);
                sq_bind_text(s, 7, op->id);
                sq_bind_text(s, 8, op->claim_token);
                r = sq_exec_done(s);
                if (r == 0 && sqlite3_changes(st->db) == 0)
                        r = op->claim_token[0] ? -ESTALE : -ENOENT;
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}

static int sqlite_operation_get(struct state_store *st, const char *id, struct operation *ret)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st, "SELECT " STORE_OP_READ " FROM operations WHERE id=?", &s);
        if (r == 0) {
                sq_bind_text(s, 1, id);
                int rc = sqlite3_step(s);
                if (rc == SQLITE_ROW)
                        sq_decode(s, store_row_operation, ret);
                r = rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? -ENOENT : sq_error(rc);
                sqlite3_finalize(s);
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}

static int sqlite_operation_list(struct state_store *st, const char *target, int state, bool unfinished_only,
                                 const char *project_id, const struct store_page *page, struct operation **ret, size_t *ret_n)
{
        sqlite3_stmt *s;
        const char *sql = unfinished_only
                ? "SELECT " STORE_OP_READ " FROM operations WHERE state IN ('pending','running') ORDER BY created_at ASC"
                : "SELECT " STORE_OP_READ
                  " FROM operations WHERE (?1 = '' OR target = ?1) AND (?2 = '' OR state = ?2)"
                  " AND (?3 IS NULL OR project_id = ?3)"
                  " AND " SQ_PAGE_AFTER("created_at, id", "<") " ORDER BY created_at DESC, id DESC" SQ_PAGE_LIMIT;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st, sql, &s);
        if (r < 0)
                goto out;
        if (!unfinished_only) {
                sq_bind_text(s, 1, target ? target : "");
                sq_bind_text(s, 2, state >= 0 ? operation_state_name((enum operation_state)state) : "");
                if (project_id)
                        sq_bind_text(s, 3, project_id);
                sq_bind_page(s, page);
        }
        r = sq_collect(s, sizeof(struct operation), store_row_operation, NULL, (void **)ret, ret_n);
out:
        pthread_mutex_unlock(&st->lock);
        return r;
}

/* ---- sandboxes ---- */

#define SB_COLUMNS STORE_SB_COLUMNS

static int sb_insert_locked(struct state_store *st, const struct sandbox *sb)
{
        sqlite3_stmt *s;
        /* A fork given no project takes its parent's; nothing else is left without one. */
        int r = sq_prepare(st,
                           "INSERT INTO sandboxes(" SB_COLUMNS
                           ", node_id, private_ports) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,"
                           " COALESCE(NULLIF(?23, ''), (SELECT project_id FROM sandboxes WHERE id=?19), ''), ?24, ?25, ?26, ?27)",
                           &s);
        if (r < 0)
                return r;
        sq_bind_text(s, 1, sb->id);
        sq_bind_text(s, 2, sandbox_state_name(sb->state));
        sq_bind_text(s, 3, sb->state_reason);
        sq_bind_text(s, 4, sb->template_name);
        sq_bind_json(s, 5, sb->environment);
        sqlite3_bind_double(s, 6, sb->resources.cpus);
        sqlite3_bind_int64(s, 7, sb->resources.memory_mb);
        sqlite3_bind_int64(s, 8, sb->resources.pids);
        sqlite3_bind_int64(s, 9, sb->resources.disk_mb);
        sq_bind_json(s, 10, sb->env);
        sq_bind_json(s, 11, sb->metadata);
        sqlite3_bind_int64(s, 12, sb->timeout_s);
        sq_bind_text(s, 13, sb->on_timeout);
        sqlite3_bind_int64(s, 14, sb->expires_at_ms);
        sqlite3_bind_int64(s, 15, sb->created_at_ms);
        sqlite3_bind_int64(s, 16, sb->updated_at_ms);
        sq_bind_text(s, 17, sb->runtime);
        sq_bind_text(s, 18, sb->runtime_state);
        sq_bind_text(s, 19, sb->parent_sandbox_id);
        sq_bind_text(s, 20, sb->parent_snapshot_id);
        sq_bind_text(s, 21, sb->head_snapshot_id);
        if (sb->rolling)
                sq_bind_json(s, 22, sb->rolling);
        else
                sq_bind_text(s, 22, "");
        sq_bind_text(s, 23, sb->project_id);
        sq_bind_text(s, 26, sb->node_id);
        sqlite3_bind_int(s, 27, sb->private_ports ? 1 : 0);
        if (sb->network)
                sq_bind_json(s, 24, sb->network);
        else
                sq_bind_text(s, 24, "");
        if (sb->idle)
                sq_bind_json(s, 25, sb->idle);
        else
                sq_bind_text(s, 25, "");
        return sq_exec_done(s);
}

static int sqlite_insert_batch(struct state_store *st, const struct sandbox *sbs, size_t nsb, const struct snapshot *snaps,
                               size_t nsnap, const struct operation *op)
{
        pthread_mutex_lock(&st->lock);
        int r = sq_begin(st);
        if (r < 0)
                goto out;
        for (size_t i = 0; r == 0 && i < nsb; i++)
                r = sb_insert_locked(st, &sbs[i]);
        for (size_t i = 0; r == 0 && i < nsnap; i++)
                r = sq_snapshot_insert_locked(st, &snaps[i]);
        if (r == 0 && op)
                r = op_insert_locked(st, op);
        if (r == 0)
                r = sq_commit(st);
        if (r < 0)
                sq_rollback(st);
out:
        pthread_mutex_unlock(&st->lock);
        return r;
}

static int sqlite_sandbox_insert(struct state_store *st, const struct sandbox *sb, const struct operation *op)
{
        return sqlite_insert_batch(st, sb, 1, NULL, 0, op);
}

static int sb_get_locked(struct state_store *st, const char *id, struct sandbox *ret)
{
        sqlite3_stmt *s;
        int r = sq_prepare(st, "SELECT " STORE_SB_READ " FROM sandboxes WHERE id=?", &s);
        if (r < 0)
                return r;
        sq_bind_text(s, 1, id);
        int rc = sqlite3_step(s);
        if (rc == SQLITE_ROW)
                sq_decode(s, store_row_sandbox, ret);
        sqlite3_finalize(s);
        return rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? -ENOENT : sq_error(rc);
}

static int sqlite_sandbox_get(struct state_store *st, const char *id, struct sandbox *ret)
{
        pthread_mutex_lock(&st->lock);
        int r = sb_get_locked(st, id, ret);
        pthread_mutex_unlock(&st->lock);
        return r;
}

static int sqlite_sandbox_list(struct state_store *st, int state_filter, const char *project_id, const struct store_page *page,
                               struct sandbox **ret, size_t *ret_n)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st,
                           "SELECT " STORE_SB_READ
                           " FROM sandboxes WHERE (?1 IS NULL AND state != 'destroyed' OR state = ?1)"
                           " AND (?2 IS NULL OR project_id = ?2)"
                           " AND " SQ_PAGE_AFTER("created_at, id", ">") " ORDER BY created_at, id" SQ_PAGE_LIMIT,
                           &s);
        if (r < 0)
                goto out;
        if (state_filter >= 0)
                sq_bind_text(s, 1, sandbox_state_name((enum sandbox_state)state_filter));
        if (project_id)
                sq_bind_text(s, 2, project_id);
        sq_bind_page(s, page);
        r = sq_collect(s, sizeof(struct sandbox), store_row_sandbox, store_release_sandbox, (void **)ret, ret_n);
out:
        pthread_mutex_unlock(&st->lock);
        return r;
}

/* Moves the sandbox if it is in from_mask; the caller holds the lock and a transaction. */
static int transition_locked(struct state_store *st, const char *id, unsigned from_mask, enum sandbox_state to,
                             const char *reason, enum sandbox_state *ret_current)
{
        struct sandbox cur;
        sqlite3_stmt *s;
        int r = sb_get_locked(st, id, &cur);
        if (r < 0)
                return r;
        sandbox_release(&cur);
        if (!(from_mask & (1u << cur.state))) {
                if (ret_current)
                        *ret_current = cur.state;
                return -ESTALE;
        }
        r = sq_prepare(st, "UPDATE sandboxes SET state=?, state_reason=?, updated_at=? WHERE id=?", &s);
        if (r < 0)
                return r;
        sq_bind_text(s, 1, sandbox_state_name(to));
        sq_bind_text(s, 2, reason ? reason : "");
        sqlite3_bind_int64(s, 3, sq_now_ms());
        sq_bind_text(s, 4, id);
        return sq_exec_done(s);
}

/* -EBUSY while an unfinished fork or snapshot of the sandbox waits to capture it. */
static int capture_pending_locked(struct state_store *st, const char *id)
{
        sqlite3_stmt *s;
        int r = sq_prepare(st,
                           "SELECT 1 FROM operations WHERE target=? AND state IN ('pending', 'running')"
                           " AND kind IN ('sandbox.fork', 'sandbox.snapshot') LIMIT 1",
                           &s);
        if (r < 0)
                return r;
        sq_bind_text(s, 1, id);
        int rc = sqlite3_step(s);
        sqlite3_finalize(s);
        return rc == SQLITE_ROW ? -EBUSY : rc == SQLITE_DONE ? 0 : sq_error(rc);
}

static int sqlite_sandbox_transition(struct state_store *st, const char *id, unsigned from_mask, enum sandbox_state to,
                                     const char *reason, const struct operation *op, enum sandbox_state *ret_current)
{
        pthread_mutex_lock(&st->lock);
        int r = sq_begin(st);
        if (r == 0) {
                if (op && strcmp(op->kind, "sandbox.destroy") == 0)
                        r = capture_pending_locked(st, id);
                if (r == 0)
                        r = transition_locked(st, id, from_mask, to, reason, ret_current);
                if (r == 0 && op)
                        r = op_insert_locked(st, op);
                if (r == 0)
                        r = sq_commit(st);
                if (r < 0)
                        sq_rollback(st);
                else if (ret_current)
                        *ret_current = to;
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}

static int exec_bound(struct state_store *st, const char *sql, int64_t a, int64_t b, const char *text, const char *id)
{
        sqlite3_stmt *s;
        int r = sq_prepare(st, sql, &s);
        if (r < 0)
                return r;
        int i = 1;
        if (text)
                sq_bind_text(s, i++, text);
        else {
                sqlite3_bind_int64(s, i++, a);
                sqlite3_bind_int64(s, i++, b);
        }
        sq_bind_text(s, i, id);
        return sq_exec_done(s);
}

static int sqlite_sandbox_settle(struct state_store *st, const char *id, const struct sandbox_settlement *set,
                                 enum sandbox_state *ret_current)
{
        pthread_mutex_lock(&st->lock);
        int r = sq_begin(st);
        if (r < 0)
                goto out;
        r = transition_locked(st, id, set->from_mask, set->to, set->reason, ret_current);
        if (r == 0 && set->set_runtime)
                r = exec_bound(st, "UPDATE sandboxes SET runtime_state=? WHERE id=?", 0, 0,
                               set->runtime_state ? set->runtime_state : "", id);
        if (r == 0 && set->set_expiry)
                r = exec_bound(st, "UPDATE sandboxes SET expires_at=?, updated_at=? WHERE id=?", set->expires_at_ms, sq_now_ms(),
                               NULL, id);
        if (r == 0 && set->head_snapshot_id)
                r = exec_bound(st, "UPDATE sandboxes SET head_snapshot_id=? WHERE id=?", 0, 0, set->head_snapshot_id, id);
        if (r == 0 && set->op) {
                sqlite3_stmt *s;
                r = sq_prepare(st,
                               "UPDATE operations SET state=?, error_code=?, error_message=?, finished_at=?, result=? WHERE id=?"
                               " AND (?7 = '' OR claim_token = ?7)",
                               &s);
                if (r == 0) {
                        sq_bind_text(s, 1, operation_state_name(set->op->state));
                        sq_bind_text(s, 2, set->op->error_code);
                        sq_bind_text(s, 3, set->op->error_message);
                        sqlite3_bind_int64(s, 4, set->op->finished_at_ms);
                        sq_bind_text(s, 5, set->op->result);
                        sq_bind_text(s, 6, set->op->id);
                        sq_bind_text(s, 7, set->op->claim_token);
                        r = sq_exec_done(s);
                        if (r == 0 && sqlite3_changes(st->db) == 0)
                                r = set->op->claim_token[0] ? -ESTALE : -ENOENT;
                }
        }
        if (r == 0)
                r = sq_commit(st);
        if (r < 0)
                sq_rollback(st);
        else if (ret_current)
                *ret_current = set->to;
out:
        pthread_mutex_unlock(&st->lock);
        return r;
}

/* One UPDATE of a sandbox row (exec_bound's parameters); -ENOENT when there is no such row. */
static int update_sandbox(struct state_store *st, const char *sql, const char *id, int64_t a, int64_t b, const char *text)
{
        pthread_mutex_lock(&st->lock);
        int r = exec_bound(st, sql, a, b, text, id);
        if (r == 0 && sqlite3_changes(st->db) == 0)
                r = -ENOENT;
        pthread_mutex_unlock(&st->lock);
        return r;
}

static int sqlite_sandbox_set_runtime(struct state_store *st, const char *id, const char *runtime_state)
{
        return update_sandbox(st, "UPDATE sandboxes SET runtime_state=? WHERE id=?", id, 0, 0,
                              runtime_state ? runtime_state : "");
}

static int sqlite_sandbox_set_expiry(struct state_store *st, const char *id, int64_t expires_at_ms)
{
        return update_sandbox(st, "UPDATE sandboxes SET expires_at=?, updated_at=? WHERE id=?", id, expires_at_ms, sq_now_ms(),
                              NULL);
}

static int sqlite_sandbox_set_settings(struct state_store *st, const struct sandbox *sb, bool set_expiry)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st,
                           "UPDATE sandboxes SET metadata=?1, timeout_s=?2, on_timeout=?3, rolling=?4, updated_at=?5,"
                           " expires_at = CASE WHEN ?7 THEN ?8 ELSE expires_at END, idle=?9 WHERE id=?6",
                           &s);
        if (r == 0) {
                sq_bind_json(s, 1, sb->metadata);
                sqlite3_bind_int64(s, 2, sb->timeout_s);
                sq_bind_text(s, 3, sb->on_timeout);
                if (sb->rolling)
                        sq_bind_json(s, 4, sb->rolling);
                else
                        sq_bind_text(s, 4, "");
                sqlite3_bind_int64(s, 5, sq_now_ms());
                sq_bind_text(s, 6, sb->id);
                sqlite3_bind_int(s, 7, set_expiry);
                sqlite3_bind_int64(s, 8, sb->expires_at_ms);
                if (sb->idle)
                        sq_bind_json(s, 9, sb->idle);
                else
                        sq_bind_text(s, 9, "");
                r = sq_exec_done(s);
                if (r == 0 && sqlite3_changes(st->db) == 0)
                        r = -ENOENT;
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}

static int sqlite_sandbox_set_network(struct state_store *st, const char *id, const json_t *network)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st, "UPDATE sandboxes SET network=?1, updated_at=?2 WHERE id=?3", &s);
        if (r == 0) {
                if (network)
                        sq_bind_json(s, 1, network);
                else
                        sq_bind_text(s, 1, "");
                sqlite3_bind_int64(s, 2, sq_now_ms());
                sq_bind_text(s, 3, id);
                r = sq_exec_done(s);
                if (r == 0 && sqlite3_changes(st->db) == 0)
                        r = -ENOENT;
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}

static int sqlite_sandbox_set_head(struct state_store *st, const char *id, const char *snapshot_id)
{
        return update_sandbox(st, "UPDATE sandboxes SET head_snapshot_id=? WHERE id=?", id, 0, 0, snapshot_id ? snapshot_id : "");
}

static int sqlite_set_durability(struct state_store *st, bool power)
{
        pthread_mutex_lock(&st->lock);
        int rc = sqlite3_exec(st->db, power ? "PRAGMA synchronous=FULL;" : "PRAGMA synchronous=NORMAL;", NULL, NULL, NULL);
        pthread_mutex_unlock(&st->lock);
        return rc == SQLITE_OK ? 0 : -EIO;
}

const struct state_store_ops state_store_sqlite = {
        .name = "sqlite",
        .open = sqlite_open,
        .close = sqlite_close,
        .set_durability = sqlite_set_durability,
        .sandbox_insert = sqlite_sandbox_insert,
        .insert_batch = sqlite_insert_batch,
        .sandbox_get = sqlite_sandbox_get,
        .sandbox_list = sqlite_sandbox_list,
        .sandbox_tally = sqlite_sandbox_tally,
        .probe_write = sqlite_probe_write,
        .operation_tally = sqlite_operation_tally,
        .sandbox_transition = sqlite_sandbox_transition,
        .sandbox_settle = sqlite_sandbox_settle,
        .sandbox_purge_destroyed = sqlite_sandbox_purge_destroyed,
        .operation_purge_finished = sqlite_operation_purge_finished,
        .operation_refers = sqlite_operation_refers,
        .sandbox_set_runtime = sqlite_sandbox_set_runtime,
        .sandbox_set_expiry = sqlite_sandbox_set_expiry,
        .sandbox_set_head = sqlite_sandbox_set_head,
        .sandbox_set_settings = sqlite_sandbox_set_settings,
        .sandbox_set_network = sqlite_sandbox_set_network,
        .snapshot_get = sqlite_snapshot_get,
        .snapshot_list = sqlite_snapshot_list,
        .snapshot_update = sqlite_snapshot_update,
        .snapshot_delete = sqlite_snapshot_delete,
        .operation_insert = sqlite_operation_insert,
        .operation_update = sqlite_operation_update,
        .operation_get = sqlite_operation_get,
        .operation_list = sqlite_operation_list,
        .template_upsert = sqlite_template_upsert,
        .template_get = sqlite_template_get,
        .template_list = sqlite_template_list,
        .template_delete = sqlite_template_delete,
        .key_insert = sqlite_key_insert,
        .key_list = sqlite_key_list,
        .key_get = sqlite_key_get,
        .project_insert = sqlite_project_insert,
        .project_get = sqlite_project_get,
        .project_list = sqlite_project_list,
        .key_delete = sqlite_key_delete,
        .key_authenticate = sqlite_key_authenticate,
        .key_count = sqlite_key_count,
        .session_insert = sqlite_session_insert,
        .session_get = sqlite_session_get,
        .session_find_by_hash = sqlite_session_find_by_hash,
        .session_list = sqlite_session_list,
        .session_update = sqlite_session_update,
        .command_insert = sqlite_command_insert,
        .command_update = sqlite_command_update,
        .command_get = sqlite_command_get,
        .command_delete = sqlite_command_delete,
        .command_list = sqlite_command_list,
        .audit_insert = sqlite_audit_insert,
        .audit_list = sqlite_audit_list,
        .audit_purge = sqlite_audit_purge,
        .policy_insert = sqlite_policy_insert,
        .policy_get = sqlite_policy_get,
        .policy_list = sqlite_policy_list,
        .policy_update = sqlite_policy_update,
        .policy_delete = sqlite_policy_delete,
        .approval_hold = sqlite_approval_hold,
        .approval_get = sqlite_approval_get,
        .approval_list = sqlite_approval_list,
        .approval_decide = sqlite_approval_decide,
        .node_register = sqlite_node_register,
        .node_heartbeat = sqlite_node_heartbeat,
        .node_list = sqlite_node_list,
        .node_mark_lost = sqlite_node_mark_lost,
        .operation_claim = sqlite_operation_claim,
        .secret_data_key = sqlite_secret_data_key,
        .secret_insert = sqlite_secret_insert,
        .secret_get = sqlite_secret_get,
        .secret_list = sqlite_secret_list,
        .secret_delete = sqlite_secret_delete,
        .binding_insert = sqlite_binding_insert,
        .binding_list = sqlite_binding_list,
        .binding_delete = sqlite_binding_delete,
};
