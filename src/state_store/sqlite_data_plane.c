/* The SQLite backend's data-plane tables: attach sessions and commands. */
#include "state_store/sqlite_statement.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SESSION_COLUMNS STORE_SESSION_COLUMNS


/* What a read returns: the columns written, and the project the insert took from the sandbox. */
#define SESSION_READ STORE_SESSION_READ

int sqlite_session_insert(struct state_store *st, const struct attach_session *a)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st,
                           "INSERT INTO attach_sessions(" SESSION_COLUMNS
                           ", project_id) VALUES (?,?,?,?,?,?,?,"
                           " COALESCE((SELECT project_id FROM sandboxes WHERE id=?2), ''))",
                           &s);
        if (r == 0) {
                sq_bind_text(s, 1, a->id);
                sq_bind_text(s, 2, a->sandbox_id);
                sq_bind_text(s, 3, a->token_hash);
                sqlite3_bind_int64(s, 4, a->created_at_ms);
                sqlite3_bind_int64(s, 5, a->expires_at_ms);
                sqlite3_bind_int64(s, 6, a->revoked_at_ms);
                sq_bind_text(s, 7, a->key_id);
                r = sq_exec_done(s);
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}

/* One row by a single text key. */
static int fetch_by_text(struct state_store *st, const char *sql, const char *key, store_row_decode decode, void *ret)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st, sql, &s);
        if (r == 0) {
                sq_bind_text(s, 1, key);
                r = sq_fetch_one(s, decode, ret);
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}

int sqlite_session_get(struct state_store *st, const char *id, struct attach_session *ret)
{
        return fetch_by_text(st, "SELECT " SESSION_READ " FROM attach_sessions WHERE id=?", id, store_row_session, ret);
}

int sqlite_session_find_by_hash(struct state_store *st, const char *hash, struct attach_session *ret)
{
        return fetch_by_text(st, "SELECT " SESSION_READ " FROM attach_sessions WHERE token_hash=?", hash, store_row_session, ret);
}

int sqlite_session_list(struct state_store *st, const char *sandbox_id, const struct store_page *page,
                        struct attach_session **ret, size_t *ret_n)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st,
                           "SELECT " SESSION_READ " FROM attach_sessions WHERE sandbox_id=?1 AND " SQ_PAGE_AFTER(
                                   "created_at, id", ">") " ORDER BY created_at, id" SQ_PAGE_LIMIT,
                           &s);
        if (r == 0) {
                sq_bind_text(s, 1, sandbox_id);
                sq_bind_page(s, page);
                r = sq_collect(s, sizeof(struct attach_session), store_row_session, NULL, (void **)ret, ret_n);
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}

int sqlite_session_update(struct state_store *st, const struct attach_session *a)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st, "UPDATE attach_sessions SET expires_at=?, revoked_at=? WHERE id=?", &s);
        if (r == 0) {
                sqlite3_bind_int64(s, 1, a->expires_at_ms);
                sqlite3_bind_int64(s, 2, a->revoked_at_ms);
                sq_bind_text(s, 3, a->id);
                r = sq_exec_done(s);
                if (r == 0 && sqlite3_changes(st->db) == 0)
                        r = -ENOENT;
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}

#define COMMAND_COLUMNS STORE_COMMAND_COLUMNS

int sqlite_command_insert(struct state_store *st, const struct command_record *c)
{
        pthread_mutex_lock(&st->lock);
        int r = sqlite_command_insert_locked(st, c);
        pthread_mutex_unlock(&st->lock);
        return r;
}

int sqlite_command_insert_locked(struct state_store *st, const struct command_record *c)
{
        sqlite3_stmt *s;
        int r = sq_prepare(st,
                           "INSERT INTO commands(" COMMAND_COLUMNS
                           ", project_id) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,"
                           " COALESCE((SELECT project_id FROM sandboxes WHERE id=?2), ''))",
                           &s);
        if (r == 0) {
                sq_bind_text(s, 1, c->id);
                sq_bind_text(s, 2, c->sandbox_id);
                sq_bind_text(s, 3, c->tag);
                sq_bind_json(s, 4, c->spec);
                sq_bind_text(s, 5, command_state_name(c->state));
                sqlite3_bind_int(s, 6, c->pid);
                sqlite3_bind_int(s, 7, c->exit_code);
                sqlite3_bind_int(s, 8, c->term_signal);
                sqlite3_bind_int(s, 9, c->timed_out);
                sq_bind_text(s, 10, c->reason);
                sqlite3_bind_int64(s, 11, c->created_at_ms);
                sqlite3_bind_int64(s, 12, c->started_at_ms);
                sqlite3_bind_int64(s, 13, c->finished_at_ms);
                r = sq_exec_done(s);
        }
        return r;
}

int sqlite_command_update(struct state_store *st, const struct command_record *c)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st,
                           "UPDATE commands SET state=?, pid=?, exit_code=?, term_signal=?, timed_out=?, reason=?,"
                           " started_at=?, finished_at=? WHERE id=? AND sandbox_id=?",
                           &s);
        if (r == 0) {
                sq_bind_text(s, 1, command_state_name(c->state));
                sqlite3_bind_int(s, 2, c->pid);
                sqlite3_bind_int(s, 3, c->exit_code);
                sqlite3_bind_int(s, 4, c->term_signal);
                sqlite3_bind_int(s, 5, c->timed_out);
                sq_bind_text(s, 6, c->reason);
                sqlite3_bind_int64(s, 7, c->started_at_ms);
                sqlite3_bind_int64(s, 8, c->finished_at_ms);
                sq_bind_text(s, 9, c->id);
                sq_bind_text(s, 10, c->sandbox_id);
                r = sq_exec_done(s);
                if (r == 0 && sqlite3_changes(st->db) == 0)
                        r = -ENOENT;
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}

int sqlite_command_get(struct state_store *st, const char *sandbox_id, const char *id, struct command_record *ret)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st, "SELECT " COMMAND_COLUMNS " FROM commands WHERE id=? AND sandbox_id=?", &s);
        if (r == 0) {
                sq_bind_text(s, 1, id);
                sq_bind_text(s, 2, sandbox_id);
                r = sq_fetch_one(s, store_row_command, ret);
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}

int sqlite_command_delete(struct state_store *st, const char *sandbox_id, const char *id)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st, "DELETE FROM commands WHERE id=? AND sandbox_id=?", &s);
        if (r == 0) {
                sq_bind_text(s, 1, id);
                sq_bind_text(s, 2, sandbox_id);
                r = sq_exec_done(s);
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}

int sqlite_command_list(struct state_store *st, const char *sandbox_id, bool unfinished_only, const struct store_page *page,
                        struct command_record **ret, size_t *ret_n)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st,
                           "SELECT " COMMAND_COLUMNS
                           " FROM commands WHERE (?1 IS NULL OR sandbox_id=?1)"
                           " AND (?2 = 0 OR state IN ('starting','running')) AND " SQ_PAGE_AFTER(
                                   "created_at, id", ">") " ORDER BY created_at, id" SQ_PAGE_LIMIT,
                           &s);
        if (r == 0) {
                if (sandbox_id)
                        sq_bind_text(s, 1, sandbox_id);
                sqlite3_bind_int(s, 2, unfinished_only);
                sq_bind_page(s, page);
                r = sq_collect(s, sizeof(struct command_record), store_row_command, store_release_command, (void **)ret, ret_n);
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}
