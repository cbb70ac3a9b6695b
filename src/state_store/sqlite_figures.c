/* The SQLite backend's figures for health and metrics: the write probe, and counts (one
 * GROUP BY each, never a row list). */
#include "state_store/sqlite_statement.h"

#include <string.h>

#include "state_store/store_sql.h"


static int tally(struct state_store *st, const char *sql, struct store_tally **ret, size_t *ret_n)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st, sql, &s);
        if (r == 0)
                r = sq_collect(s, sizeof(struct store_tally), store_row_tally, NULL, (void **)ret, ret_n);
        pthread_mutex_unlock(&st->lock);
        return r;
}

int sqlite_sandbox_tally(struct state_store *st, struct store_tally **ret, size_t *ret_n)
{
        return tally(st, STORE_SQL_SANDBOX_TALLY, ret, ret_n);
}

int sqlite_operation_tally(struct state_store *st, struct store_tally **ret, size_t *ret_n)
{
        return tally(st, STORE_SQL_OPERATION_TALLY, ret, ret_n);
}

int sqlite_probe_write(struct state_store *st, int64_t now_ms)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st, "INSERT INTO store_probe(id, at) VALUES (1, ?) ON CONFLICT(id) DO UPDATE SET at = excluded.at",
                           &s);
        if (r == 0) {
                sqlite3_bind_int64(s, 1, now_ms);
                r = sq_exec_done(s);
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}
