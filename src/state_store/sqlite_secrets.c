/* The SQLite backend's secrets (sealed values, one data key per project) and credential
 * bindings (docs/network.md). Nothing here is plaintext: sealing is auth/secret_keyring's. */
#include "state_store/sqlite_statement.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int sqlite_secret_data_key(struct state_store *st, const char *project_id, const char *candidate, char **ret)
{
        sqlite3_stmt *s;
        char *sealed = NULL;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st,
                           "INSERT INTO secret_data_keys(project_id, sealed, created_at) VALUES (?1, ?2, ?3)"
                           " ON CONFLICT(project_id) DO NOTHING",
                           &s);
        if (r == 0) {
                sq_bind_text(s, 1, project_id);
                sq_bind_text(s, 2, candidate);
                sqlite3_bind_int64(s, 3, sq_now_ms());
                r = sq_exec_done(s);
        }
        if (r == 0)
                r = sq_prepare(st, "SELECT sealed FROM secret_data_keys WHERE project_id = ?1", &s);
        if (r == 0) {
                sq_bind_text(s, 1, project_id);
                r = sq_fetch_one(s, store_row_first_text, &sealed);
        }
        pthread_mutex_unlock(&st->lock);
        if (r == 0 && !sealed)
                r = -ENOMEM;
        if (r == 0)
                *ret = sealed;
        return r;
}

int sqlite_secret_insert(struct state_store *st, const struct secret_record *sr)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st, "INSERT INTO secrets(" STORE_SECRET_COLUMNS ") VALUES (?,?,?,?,?)", &s);
        if (r == 0) {
                sq_bind_text(s, 1, sr->id);
                sq_bind_text(s, 2, sr->project_id);
                sq_bind_text(s, 3, sr->name);
                sq_bind_text(s, 4, sr->sealed);
                sqlite3_bind_int64(s, 5, sr->created_at_ms);
                r = sq_exec_done(s);
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}

int sqlite_secret_get(struct state_store *st, const char *project_id, const char *name, struct secret_record *ret)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st, "SELECT " STORE_SECRET_COLUMNS " FROM secrets WHERE project_id = ?1 AND name = ?2", &s);
        if (r == 0) {
                sq_bind_text(s, 1, project_id);
                sq_bind_text(s, 2, name);
                r = sq_fetch_one(s, store_row_secret, ret);
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}

int sqlite_secret_list(struct state_store *st, const char *project_id, struct secret_record **ret, size_t *ret_n)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st, "SELECT " STORE_SECRET_COLUMNS " FROM secrets WHERE project_id = ?1 ORDER BY created_at, id", &s);
        if (r == 0) {
                sq_bind_text(s, 1, project_id);
                r = sq_collect(s, sizeof(struct secret_record), store_row_secret, store_release_secret, (void **)ret, ret_n);
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}

static int delete_one(struct state_store *st, const char *sql, const char *a, const char *b)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st, sql, &s);
        if (r == 0) {
                sq_bind_text(s, 1, a);
                sq_bind_text(s, 2, b);
                r = sq_exec_done(s);
                if (r == 0 && sqlite3_changes(st->db) == 0)
                        r = -ENOENT;
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}

int sqlite_secret_delete(struct state_store *st, const char *project_id, const char *name)
{
        return delete_one(st, "DELETE FROM secrets WHERE project_id = ?1 AND name = ?2", project_id, name);
}

int sqlite_binding_insert(struct state_store *st, const struct binding_record *b)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st, "INSERT INTO credential_bindings(" STORE_BINDING_COLUMNS ") VALUES (?,?,?,?,?,?)", &s);
        if (r == 0) {
                sq_bind_text(s, 1, b->id);
                sq_bind_text(s, 2, b->project_id);
                sq_bind_text(s, 3, b->sandbox_id);
                sq_bind_text(s, 4, b->secret_name);
                sq_bind_json(s, 5, b->spec);
                sqlite3_bind_int64(s, 6, b->created_at_ms);
                r = sq_exec_done(s);
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}

int sqlite_binding_list(struct state_store *st, const char *project_id, const char *sandbox_id, struct binding_record **ret,
                        size_t *ret_n)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st,
                           "SELECT " STORE_BINDING_COLUMNS
                           " FROM credential_bindings WHERE (?1 IS NULL OR project_id = ?1)"
                           " AND (?2 IS NULL OR sandbox_id = '' OR sandbox_id = ?2) ORDER BY created_at, id",
                           &s);
        if (r == 0) {
                if (project_id)
                        sq_bind_text(s, 1, project_id);
                if (sandbox_id)
                        sq_bind_text(s, 2, sandbox_id);
                r = sq_collect(s, sizeof(struct binding_record), store_row_binding, store_release_binding, (void **)ret, ret_n);
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}

int sqlite_binding_delete(struct state_store *st, const char *project_id, const char *id)
{
        return delete_one(st, "DELETE FROM credential_bindings WHERE project_id = ?1 AND id = ?2", project_id, id);
}
