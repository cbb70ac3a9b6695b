/* Retention: rows of sandboxes destroyed long ago go, with what hangs off them (commands,
 * attach sessions, finished operations). A destroyed sandbox that still has snapshots keeps
 * its row: the snapshots' lineage names it. */
#include "state_store/sqlite_statement.h"

#include <errno.h>

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
        pthread_mutex_lock(&st->lock);
        int r = sq_begin(st), n = 0;
        for (size_t i = 0; r == 0 && i < sizeof(steps) / sizeof(steps[0]); i++) {
                sqlite3_stmt *s;
                r = sq_prepare(st, steps[i], &s);
                if (r < 0)
                        break;
                if (i == 2) {
                        sqlite3_bind_int64(s, 1, before_ms);
                        sqlite3_bind_int(s, 2, limit);
                }
                r = sq_exec_done(s);
                if (r == 0 && i == 6)
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
