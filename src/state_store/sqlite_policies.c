/* The SQLite backend's policies table: one document per row, its name unique in its
 * project (UNIQUE (project_id, name): a taken name is -EEXIST). An update is a
 * compare-and-set on the version, so two writers never both think they replaced the same
 * version. */
#include "state_store/sqlite_statement.h"

#include <errno.h>
#include <string.h>

int sqlite_policy_insert(struct state_store *st, const struct policy_record *p)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st, "INSERT INTO policies(" STORE_POLICY_COLUMNS ") VALUES (?,?,?,?,?,?,?,?)", &s);
        if (r == 0) {
                sq_bind_text(s, 1, p->id);
                sq_bind_text(s, 2, p->project_id);
                sq_bind_text(s, 3, p->name);
                sq_bind_text(s, 4, p->sandbox_id);
                sqlite3_bind_int64(s, 5, p->version);
                sq_bind_json(s, 6, p->document);
                sqlite3_bind_int64(s, 7, p->created_at_ms);
                sqlite3_bind_int64(s, 8, p->updated_at_ms);
                r = sq_exec_done(s);
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}

int sqlite_policy_get(struct state_store *st, const char *project_id, const char *id, struct policy_record *ret)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st, "SELECT " STORE_POLICY_COLUMNS " FROM policies WHERE id = ?1 AND (?2 IS NULL OR project_id = ?2)",
                           &s);
        if (r == 0) {
                sq_bind_text(s, 1, id);
                if (project_id)
                        sq_bind_text(s, 2, project_id);
                r = sq_fetch_one(s, store_row_policy, ret);
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}

int sqlite_policy_list(struct state_store *st, const char *project_id, struct policy_record **ret, size_t *ret_n)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(
                st, "SELECT " STORE_POLICY_COLUMNS " FROM policies WHERE (?1 IS NULL OR project_id = ?1) ORDER BY created_at, id",
                &s);
        if (r == 0) {
                if (project_id)
                        sq_bind_text(s, 1, project_id);
                r = sq_collect(s, sizeof(struct policy_record), store_row_policy, store_release_policy, (void **)ret, ret_n);
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}

int sqlite_policy_update(struct state_store *st, const struct policy_record *p)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st,
                           "UPDATE policies SET name = ?3, sandbox_id = ?4, document = ?5, version = ?6, updated_at = ?7"
                           " WHERE id = ?1 AND project_id = ?2 AND version = ?6 - 1",
                           &s);
        if (r == 0) {
                sq_bind_text(s, 1, p->id);
                sq_bind_text(s, 2, p->project_id);
                sq_bind_text(s, 3, p->name);
                sq_bind_text(s, 4, p->sandbox_id);
                sq_bind_json(s, 5, p->document);
                sqlite3_bind_int64(s, 6, p->version);
                sqlite3_bind_int64(s, 7, p->updated_at_ms);
                r = sq_exec_done(s);
                if (r == 0 && sqlite3_changes(st->db) == 0) {
                        /* Which: no such row, or another version. */
                        r = sq_prepare(st, "SELECT 1 FROM policies WHERE id = ?1 AND project_id = ?2", &s);
                        if (r == 0) {
                                sq_bind_text(s, 1, p->id);
                                sq_bind_text(s, 2, p->project_id);
                                int rc = sqlite3_step(s);
                                r = rc == SQLITE_ROW ? -ESTALE : rc == SQLITE_DONE ? -ENOENT : sq_error(rc);
                                sqlite3_finalize(s);
                        }
                }
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}

int sqlite_policy_delete(struct state_store *st, const char *project_id, const char *id)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st, "DELETE FROM policies WHERE id = ?1 AND project_id = ?2", &s);
        if (r == 0) {
                sq_bind_text(s, 1, id);
                sq_bind_text(s, 2, project_id);
                r = sq_exec_done(s);
                if (r == 0 && sqlite3_changes(st->db) == 0)
                        r = -ENOENT;
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}
