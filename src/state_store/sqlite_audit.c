/* The audit log in SQLite: one INSERT per row (atomic: a crash leaves the row whole or
 * absent), lists by (created_at, id) with the filters of GET /v1/audit, purges by age. A
 * trigger refuses UPDATE: rows are never rewritten, only inserted and, past retention,
 * deleted. */
#include "state_store/sqlite_statement.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* "" is an absent value: NULL in the row. */
static void bind_optional(sqlite3_stmt *s, int i, const char *v)
{
        if (v && *v)
                sqlite3_bind_text(s, i, v, -1, SQLITE_TRANSIENT);
        else
                sqlite3_bind_null(s, i);
}

int sqlite_audit_insert(struct state_store *st, const struct audit_record *a)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st,
                           "INSERT INTO audit_log(id, created_at, request_id, key_id, project, role, action, target, method,"
                           " status, error_code, source, detail) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                           &s);
        if (r == 0) {
                sq_bind_text(s, 1, a->id);
                sqlite3_bind_int64(s, 2, a->created_at_ms);
                sq_bind_text(s, 3, a->request_id);
                bind_optional(s, 4, a->key_id);
                bind_optional(s, 5, a->project);
                bind_optional(s, 6, a->role);
                sq_bind_text(s, 7, a->action);
                bind_optional(s, 8, a->target);
                sq_bind_text(s, 9, a->method);
                sqlite3_bind_int(s, 10, a->status);
                bind_optional(s, 11, a->error_code);
                bind_optional(s, 12, a->source);
                bind_optional(s, 13, a->detail);
                r = sq_exec_done(s);
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}


int sqlite_audit_list(struct state_store *st, const struct audit_filter *f, const struct store_page *page,
                      struct audit_record **ret, size_t *ret_n)
{
        /* Every filter is bound (NULL matches all), so the statement text is fixed. */
        static const char sql[] =
                "SELECT " STORE_AUDIT_COLUMNS
                " FROM audit_log"
                " WHERE (?1 IS NULL OR project = ?1) AND (?2 IS NULL OR key_id = ?2) AND (?3 IS NULL OR action = ?3)"
                " AND (?4 IS NULL OR target = ?4) AND (?5 = 0 OR created_at >= ?5) AND (?6 = 0 OR created_at < ?6)"
                " AND (?7 IS NULL OR created_at > ?8 OR (created_at = ?8 AND id > ?7))"
                " ORDER BY created_at, id LIMIT ?9";
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st, sql, &s);
        if (r == 0) {
                bind_optional(s, 1, f->project);
                bind_optional(s, 2, f->key_id);
                bind_optional(s, 3, f->action);
                bind_optional(s, 4, f->target);
                sqlite3_bind_int64(s, 5, f->since_ms);
                sqlite3_bind_int64(s, 6, f->until_ms);
                bind_optional(s, 7, page ? page->after_id : NULL);
                sqlite3_bind_int64(s, 8, page ? page->after_ms : 0);
                sqlite3_bind_int(s, 9, page && page->limit > 0 ? page->limit : -1);
                r = sq_collect(s, sizeof(struct audit_record), store_row_audit, NULL, (void **)ret, ret_n);
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}

int sqlite_audit_purge(struct state_store *st, int64_t before_ms, int limit, int *ret_n)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st,
                           "DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE created_at < ?1"
                           " ORDER BY created_at LIMIT ?2)",
                           &s);
        if (r == 0) {
                sqlite3_bind_int64(s, 1, before_ms);
                sqlite3_bind_int(s, 2, limit);
                r = sq_exec_done(s);
        }
        int n = r == 0 ? sqlite3_changes(st->db) : 0;
        pthread_mutex_unlock(&st->lock);
        if (r == 0 && ret_n)
                *ret_n = n;
        return r;
}
