/* The SQLite backend's templates and API keys tables. */
#include "state_store/sqlite_statement.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int sqlite_template_upsert(struct state_store *st, const struct template_record *t)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        /* The project is the first writer's: a rebuild never moves a template. */
        int r = sq_prepare(
                st,
                "INSERT INTO templates(name, state, environment, state_reason, updated_at, project_id) VALUES (?,?,?,?,?,?)"
                " ON CONFLICT(name) DO UPDATE SET state=excluded.state, environment=excluded.environment,"
                " state_reason=excluded.state_reason, updated_at=excluded.updated_at",
                &s);
        if (r == 0) {
                sq_bind_text(s, 1, t->name);
                sq_bind_text(s, 2, t->state);
                sq_bind_json(s, 3, t->environment);
                sq_bind_text(s, 4, t->state_reason);
                sqlite3_bind_int64(s, 5, t->updated_at_ms ? t->updated_at_ms : sq_now_ms());
                sq_bind_text(s, 6, t->project_id);
                r = sq_exec_done(s);
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}

int sqlite_template_get(struct state_store *st, const char *name, struct template_record *ret)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st, "SELECT " STORE_TEMPLATE_COLUMNS " FROM templates WHERE name=?", &s);
        if (r == 0) {
                sq_bind_text(s, 1, name);
                int rc = sqlite3_step(s);
                if (rc == SQLITE_ROW)
                        sq_decode(s, store_row_template, ret);
                r = rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? -ENOENT : sq_error(rc);
                sqlite3_finalize(s);
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}

int sqlite_template_list(struct state_store *st, const char *project_id, const struct store_page *page,
                         struct template_record **ret, size_t *ret_n)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st,
                           "SELECT " STORE_TEMPLATE_COLUMNS
                           " FROM templates"
                           " WHERE (?1 IS NULL OR project_id = ?1 OR project_id = '') AND " SQ_PAGE_AFTER_NAME(
                                   "name") " ORDER BY name" SQ_PAGE_LIMIT,
                           &s);
        if (r == 0) {
                if (project_id)
                        sq_bind_text(s, 1, project_id);
                sq_bind_page(s, page);
        }
        if (r == 0)
                r = sq_collect(s, sizeof(struct template_record), store_row_template, store_release_template, (void **)ret,
                               ret_n);
        pthread_mutex_unlock(&st->lock);
        return r;
}

static int delete_by_text(struct state_store *st, const char *sql, const char *key)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st, sql, &s);
        if (r == 0) {
                sq_bind_text(s, 1, key);
                r = sq_exec_done(s);
                if (r == 0 && sqlite3_changes(st->db) == 0)
                        r = -ENOENT;
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}

int sqlite_template_delete(struct state_store *st, const char *name)
{
        return delete_by_text(st, "DELETE FROM templates WHERE name=?", name);
}

int sqlite_key_insert(struct state_store *st, const struct api_key *k)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st,
                           "INSERT INTO api_keys(id, name, hash, created_at, last_used_at, project_id, role, permissions,"
                           " expires_at) VALUES (?,?,?,?,0,?,?,?,?)",
                           &s);
        if (r == 0) {
                sq_bind_text(s, 1, k->id);
                sq_bind_text(s, 2, k->name);
                sq_bind_text(s, 3, k->hash);
                sqlite3_bind_int64(s, 4, k->created_at_ms);
                sq_bind_text(s, 5, k->project_id);
                sq_bind_text(s, 6, k->role);
                sqlite3_bind_int64(s, 7, (sqlite3_int64)k->permissions);
                sqlite3_bind_int64(s, 8, k->expires_at_ms);
                r = sq_exec_done(s);
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}

#define KEY_COLUMNS STORE_KEY_COLUMNS

int sqlite_key_get(struct state_store *st, const char *id, struct api_key *ret)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st, "SELECT " KEY_COLUMNS " FROM api_keys WHERE id=?", &s);
        if (r == 0) {
                sq_bind_text(s, 1, id);
                r = sq_fetch_one(s, store_row_key, ret);
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}

int sqlite_key_list(struct state_store *st, const char *project_id, const struct store_page *page, struct api_key **ret,
                    size_t *ret_n)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st,
                           "SELECT " KEY_COLUMNS " FROM api_keys WHERE (?1 IS NULL OR project_id = ?1) AND " SQ_PAGE_AFTER(
                                   "created_at, id", ">") " ORDER BY created_at, id" SQ_PAGE_LIMIT,
                           &s);
        if (r == 0) {
                if (project_id)
                        sq_bind_text(s, 1, project_id);
                sq_bind_page(s, page);
        }
        if (r == 0)
                r = sq_collect(s, sizeof(struct api_key), store_row_key, NULL, (void **)ret, ret_n);
        pthread_mutex_unlock(&st->lock);
        return r;
}

int sqlite_key_delete(struct state_store *st, const char *id, int64_t now_ms)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_begin(st);
        if (r < 0)
                goto out;
        r = sq_prepare(st, "DELETE FROM api_keys WHERE id=?", &s);
        if (r == 0) {
                sq_bind_text(s, 1, id);
                r = sq_exec_done(s);
                if (r == 0 && sqlite3_changes(st->db) == 0)
                        r = -ENOENT;
        }
        if (r == 0)
                r = sq_prepare(st, "UPDATE attach_sessions SET revoked_at=?2 WHERE key_id=?1 AND revoked_at=0", &s);
        if (r == 0) {
                sq_bind_text(s, 1, id);
                sqlite3_bind_int64(s, 2, now_ms);
                r = sq_exec_done(s);
        }
        if (r == 0)
                r = sq_commit(st);
        else
                sq_rollback(st);
out:
        pthread_mutex_unlock(&st->lock);
        return r;
}

int sqlite_key_authenticate(struct state_store *st, const char *hash, struct api_key *ret)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st, "SELECT " KEY_COLUMNS " FROM api_keys WHERE hash=?", &s);
        if (r == 0) {
                sq_bind_text(s, 1, hash);
                int rc = sqlite3_step(s);
                if (rc == SQLITE_ROW)
                        sq_decode(s, store_row_key, ret);
                r = rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? -ENOENT : sq_error(rc);
                sqlite3_finalize(s);
        }
        /* Record use at most once a minute so authentication stays a read on the hot path. */
        if (r == 0 && sq_now_ms() - ret->last_used_at_ms > 60000 &&
            sq_prepare(st, "UPDATE api_keys SET last_used_at=? WHERE id=?", &s) == 0) {
                sqlite3_bind_int64(s, 1, sq_now_ms());
                sq_bind_text(s, 2, ret->id);
                sq_exec_done(s);
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}

int sqlite_key_count(struct state_store *st, int64_t *ret)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st, "SELECT count(*) FROM api_keys", &s);
        if (r == 0) {
                int rc = sqlite3_step(s);
                if (rc == SQLITE_ROW)
                        *ret = sqlite3_column_int64(s, 0);
                r = rc == SQLITE_ROW ? 0 : sq_error(rc);
                sqlite3_finalize(s);
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}
