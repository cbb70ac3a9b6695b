/* The SQLite backend's projects table. */
#include "state_store/sqlite_statement.h"

#include <errno.h>
#include <string.h>


int sqlite_project_insert(struct state_store *st, const struct project *p)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st, "INSERT INTO projects(id, created_at) VALUES (?,?)", &s);
        if (r == 0) {
                sq_bind_text(s, 1, p->id);
                sqlite3_bind_int64(s, 2, p->created_at_ms);
                r = sq_exec_done(s);
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}

int sqlite_project_get(struct state_store *st, const char *id, struct project *ret)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st, "SELECT id, created_at FROM projects WHERE id=?", &s);
        if (r == 0) {
                sq_bind_text(s, 1, id);
                r = sq_fetch_one(s, store_row_project, ret);
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}

int sqlite_project_list(struct state_store *st, const char *project_id, const struct store_page *page, struct project **ret,
                        size_t *ret_n)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st,
                           "SELECT id, created_at FROM projects WHERE (?1 IS NULL OR id = ?1) AND " SQ_PAGE_AFTER(
                                   "created_at, id", ">") " ORDER BY created_at, id" SQ_PAGE_LIMIT,
                           &s);
        if (r == 0) {
                if (project_id)
                        sq_bind_text(s, 1, project_id);
                sq_bind_page(s, page);
                r = sq_collect(s, sizeof(struct project), store_row_project, NULL, (void **)ret, ret_n);
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}
