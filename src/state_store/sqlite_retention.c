/* Retention: rows of sandboxes destroyed long ago go, with what hangs off them (commands,
 * attach sessions, finished operations). A destroyed sandbox that still has snapshots keeps
 * its row: the snapshots' lineage names it. Finished operations go after their own
 * retention, except the newest of a live object. */
#include "state_store/sqlite_statement.h"

#include <errno.h>

#include "state_store/store_sql.h"

/* Runs steps in one transaction: the step at index `bind` gets before_ms (?1) and limit (?2);
 * *ret_n is how many rows the step at index `count` changed. */
static int purge(struct state_store *st, const char *const *steps, size_t nsteps, size_t bind, size_t count, int64_t before_ms,
                 int limit, int *ret_n)
{
        pthread_mutex_lock(&st->lock);
        int r = sq_begin(st), n = 0;
        for (size_t i = 0; r == 0 && i < nsteps; i++) {
                sqlite3_stmt *s;
                r = sq_prepare(st, steps[i], &s);
                if (r < 0)
                        break;
                if (i == bind) {
                        sqlite3_bind_int64(s, 1, before_ms);
                        sqlite3_bind_int(s, 2, limit);
                }
                r = sq_exec_done(s);
                if (r == 0 && i == count)
                        n = sqlite3_changes(st->db);
        }
        if (r == 0)
                r = sq_commit(st);
        if (r < 0)
                sq_rollback(st);
        pthread_mutex_unlock(&st->lock);
        if (r == 0 && ret_n)
                *ret_n = n;
        return r;
}

int sqlite_sandbox_purge_destroyed(struct state_store *st, int64_t before_ms, int limit, int *ret_n)
{
        static const char *const steps[] = {
                "CREATE TEMP TABLE IF NOT EXISTS purge_ids(id TEXT PRIMARY KEY)",
                "DELETE FROM purge_ids",
                STORE_SQL_PICK_DESTROYED,
                STORE_SQL_DELETE_DESTROYED,
        };
        return purge(st, steps, sizeof(steps) / sizeof(steps[0]), 2, 6, before_ms, limit, ret_n);
}

int sqlite_operation_purge_finished(struct state_store *st, int64_t before_ms, int limit, int *ret_n)
{
        static const char *const steps[] = {
                "CREATE TEMP TABLE IF NOT EXISTS purge_ops(id TEXT PRIMARY KEY)",
                "DELETE FROM purge_ops",
                STORE_SQL_PICK_FINISHED,
                STORE_SQL_DELETE_FINISHED,
        };
        return purge(st, steps, sizeof(steps) / sizeof(steps[0]), 2, 3, before_ms, limit, ret_n);
}
