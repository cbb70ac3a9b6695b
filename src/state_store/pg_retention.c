/* Retention in PostgreSQL, as in SQLite (sqlite_retention.c): rows of sandboxes destroyed
 * long ago go with their commands, sessions and operations; finished operations go after
 * their own retention, except the newest of a live object. Each purge is one transaction
 * over a temporary table of the chosen ids. */
#include "state_store/pg_statement.h"

#include <errno.h>

#include "state_store/store_sql.h"

static int purge(struct state_store *st, const char *const *steps, size_t nsteps, size_t bind, size_t count, int64_t before_ms,
                 int limit, int *ret_n)
{
        pthread_mutex_lock(&st->lock);
        int r = pg_begin(st), n = 0;
        for (size_t i = 0; r == 0 && i < nsteps; i++) {
                struct pg_args a = { 0 };
                if (i == bind) {
                        pg_int(&a, before_ms);
                        pg_int(&a, limit);
                }
                r = pg_exec(st, steps[i], &a, NULL, i == count ? &n : NULL);
        }
        if (r == 0)
                r = pg_commit(st);
        if (r < 0)
                pg_rollback(st);
        pthread_mutex_unlock(&st->lock);
        if (r == 0 && ret_n)
                *ret_n = n;
        return r;
}

int pg_sandbox_purge_destroyed(struct state_store *st, int64_t before_ms, int limit, int *ret_n)
{
        static const char *const steps[] = {
                "CREATE TEMP TABLE IF NOT EXISTS purge_ids(id TEXT PRIMARY KEY) ON COMMIT DELETE ROWS",
                "DELETE FROM purge_ids",
                STORE_SQL_PICK_DESTROYED,
                STORE_SQL_DELETE_DESTROYED,
        };
        return purge(st, steps, sizeof(steps) / sizeof(steps[0]), 2, 6, before_ms, limit, ret_n);
}

int pg_operation_purge_finished(struct state_store *st, int64_t before_ms, int limit, int *ret_n)
{
        static const char *const steps[] = {
                "CREATE TEMP TABLE IF NOT EXISTS purge_ops(id TEXT PRIMARY KEY) ON COMMIT DELETE ROWS",
                "DELETE FROM purge_ops",
                STORE_SQL_PICK_FINISHED,
                STORE_SQL_DELETE_FINISHED,
        };
        return purge(st, steps, sizeof(steps) / sizeof(steps[0]), 2, 3, before_ms, limit, ret_n);
}
