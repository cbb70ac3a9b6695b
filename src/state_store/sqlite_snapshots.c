/* The SQLite backend's snapshots table. */
#include "state_store/sqlite_statement.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SNAP_COLUMNS STORE_SNAP_COLUMNS

int sq_snapshot_insert_locked(struct state_store *st, const struct snapshot *snap)
{
        sqlite3_stmt *s;
        int r = sq_prepare(st,
                           "INSERT INTO snapshots(" SNAP_COLUMNS
                           ") VALUES (?,?,?,?,?,?,?,?,?,?,"
                           " COALESCE(NULLIF(?11, ''), (SELECT project_id FROM sandboxes WHERE id=?2), ''))",
                           &s);
        if (r < 0)
                return r;
        sq_bind_text(s, 1, snap->id);
        sq_bind_text(s, 2, snap->sandbox_id);
        sq_bind_text(s, 3, snap->state);
        sq_bind_text(s, 4, snap->label);
        sq_bind_text(s, 5, snap->kind);
        sq_bind_text(s, 6, snap->parent_snapshot_id);
        sqlite3_bind_int64(s, 7, snap->bytes_exclusive);
        sqlite3_bind_int64(s, 8, snap->pause_us);
        sqlite3_bind_int64(s, 9, snap->created_at_ms);
        sqlite3_bind_int(s, 10, snap->rolling ? 1 : 0);
        sq_bind_text(s, 11, snap->project_id);
        return sq_exec_done(s);
}

int sqlite_snapshot_get(struct state_store *st, const char *id, struct snapshot *ret)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st, "SELECT " SNAP_COLUMNS " FROM snapshots WHERE id=?", &s);
        if (r == 0) {
                sq_bind_text(s, 1, id);
                int rc = sqlite3_step(s);
                if (rc == SQLITE_ROW)
                        sq_decode(s, store_row_snapshot, ret);
                r = rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? -ENOENT : sq_error(rc);
                sqlite3_finalize(s);
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}

int sqlite_snapshot_list(struct state_store *st, const char *sandbox_id, const char *project_id, const struct store_page *page,
                         struct snapshot **ret, size_t *ret_n)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st,
                           "SELECT " SNAP_COLUMNS
                           " FROM snapshots WHERE (?1 = '' OR sandbox_id = ?1)"
                           " AND (?2 IS NULL OR project_id = ?2) AND " SQ_PAGE_AFTER(
                                   "created_at, id", ">") " ORDER BY created_at, id" SQ_PAGE_LIMIT,
                           &s);
        if (r == 0) {
                sq_bind_text(s, 1, sandbox_id ? sandbox_id : "");
                if (project_id)
                        sq_bind_text(s, 2, project_id);
                sq_bind_page(s, page);
                r = sq_collect(s, sizeof(struct snapshot), store_row_snapshot, NULL, (void **)ret, ret_n);
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}

int sqlite_snapshot_update(struct state_store *st, const struct snapshot *snap)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st, "UPDATE snapshots SET state=?, bytes_exclusive=?, pause_us=?, parent_snapshot_id=? WHERE id=?",
                           &s);
        if (r == 0) {
                sq_bind_text(s, 1, snap->state);
                sqlite3_bind_int64(s, 2, snap->bytes_exclusive);
                sqlite3_bind_int64(s, 3, snap->pause_us);
                sq_bind_text(s, 4, snap->parent_snapshot_id);
                sq_bind_text(s, 5, snap->id);
                r = sq_exec_done(s);
                if (r == 0 && sqlite3_changes(st->db) == 0)
                        r = -ENOENT;
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}

/* Deletes a snapshot and keeps lineage a chain: whatever named it as its parent (later
 * snapshots) or as its head (the sandbox) now names its parent instead. */
/* -EBUSY (and the operation's id) while an unfinished operation needs the snapshot. */
static int needed_locked(struct state_store *st, const char *id, char *ret_user)
{
        sqlite3_stmt *s;
        int r = sq_prepare(st, "SELECT id FROM operations WHERE snapshot_id=? AND state IN ('pending', 'running') LIMIT 1", &s);
        if (r < 0)
                return r;
        sq_bind_text(s, 1, id);
        int rc = sqlite3_step(s);
        if (rc == SQLITE_ROW && ret_user)
                sq_copy_col(s, 0, ret_user, 32);
        sqlite3_finalize(s);
        return rc == SQLITE_ROW ? -EBUSY : rc == SQLITE_DONE ? 0 : sq_error(rc);
}

int sqlite_snapshot_delete(struct state_store *st, const char *id, bool if_unused, char *ret_user)
{
        sqlite3_stmt *s;
        char parent[32] = "";
        pthread_mutex_lock(&st->lock);
        int r = sq_begin(st);
        if (r < 0)
                goto out;
        if (if_unused && (r = needed_locked(st, id, ret_user)) < 0) {
                sq_rollback(st);
                goto out;
        }
        r = sq_prepare(st, "SELECT parent_snapshot_id FROM snapshots WHERE id=?", &s);
        if (r == 0) {
                sq_bind_text(s, 1, id);
                int rc = sqlite3_step(s);
                if (rc == SQLITE_ROW)
                        sq_copy_col(s, 0, parent, sizeof(parent));
                r = rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? -ENOENT : sq_error(rc);
                sqlite3_finalize(s);
        }
        static const char *const steps[] = {
                "UPDATE snapshots SET parent_snapshot_id=?1 WHERE parent_snapshot_id=?2",
                "UPDATE sandboxes SET head_snapshot_id=?1 WHERE head_snapshot_id=?2",
                "DELETE FROM snapshots WHERE id=?2",
        };
        for (size_t i = 0; r == 0 && i < sizeof(steps) / sizeof(steps[0]); i++) {
                r = sq_prepare(st, steps[i], &s);
                if (r == 0) {
                        sq_bind_text(s, 1, parent);
                        sq_bind_text(s, 2, id);
                        r = sq_exec_done(s);
                }
        }
        if (r == 0)
                r = sq_commit(st);
        else
                sq_rollback(st);
out:
        pthread_mutex_unlock(&st->lock);
        return r;
}
