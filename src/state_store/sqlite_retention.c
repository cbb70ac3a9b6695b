/* Retention: rows of sandboxes destroyed long ago go, with what hangs off them (commands,
 * attach sessions, finished operations). A destroyed sandbox that still has snapshots keeps
 * its row: the snapshots' lineage names it. Finished operations go after their own
 * retention, except the newest of a live object. */
#include "state_store/sqlite_statement.h"

#include <errno.h>

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
                "INSERT INTO purge_ids SELECT id FROM sandboxes WHERE state = 'destroyed' AND updated_at < ?1"
                "  AND NOT EXISTS (SELECT 1 FROM snapshots WHERE snapshots.sandbox_id = sandboxes.id)"
                "  AND NOT EXISTS (SELECT 1 FROM operations WHERE operations.target = sandboxes.id"
                "                  AND operations.state IN ('pending', 'running'))"
                "  ORDER BY updated_at LIMIT ?2",
                "DELETE FROM commands WHERE sandbox_id IN (SELECT id FROM purge_ids)",
                "DELETE FROM attach_sessions WHERE sandbox_id IN (SELECT id FROM purge_ids)",
                "DELETE FROM operations WHERE target IN (SELECT id FROM purge_ids)",
                "DELETE FROM sandboxes WHERE id IN (SELECT id FROM purge_ids)",
        };
        return purge(st, steps, sizeof(steps) / sizeof(steps[0]), 2, 6, before_ms, limit, ret_n);
}

/* A finished operation is still referenced while it is the newest operation of a target that
 * exists (a sandbox not destroyed, or a template): it tells how that object came to be as it
 * is (a template's build log is found by its build's operation). */
int sqlite_operation_purge_finished(struct state_store *st, int64_t before_ms, int limit, int *ret_n)
{
        static const char *const steps[] = {
                "CREATE TEMP TABLE IF NOT EXISTS purge_ops(id TEXT PRIMARY KEY)",
                "DELETE FROM purge_ops",
                "INSERT INTO purge_ops SELECT o.id FROM operations o"
                "  WHERE o.state IN ('succeeded', 'failed') AND o.finished_at > 0 AND o.finished_at < ?1"
                "  AND NOT ((EXISTS (SELECT 1 FROM sandboxes s WHERE s.id = o.target AND s.state != 'destroyed')"
                "            OR EXISTS (SELECT 1 FROM templates t WHERE t.name = o.target))"
                "           AND NOT EXISTS (SELECT 1 FROM operations n WHERE n.target = o.target"
                "                           AND (n.created_at > o.created_at OR (n.created_at = o.created_at AND n.id > o.id))))"
                "  ORDER BY o.finished_at LIMIT ?2",
                "DELETE FROM operations WHERE id IN (SELECT id FROM purge_ops)",
        };
        return purge(st, steps, sizeof(steps) / sizeof(steps[0]), 2, 3, before_ms, limit, ret_n);
}
