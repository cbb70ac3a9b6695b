/* SQL text both SQL backends run alike. Retention (sqlite_retention.c, pg_retention.c): which
 * rows a purge picks, into a temporary table of ids, and what it then deletes. Parameters
 * are $1 (before_ms) and $2 (limit), first used in that order, which SQLite numbers 1 and 2
 * as PostgreSQL does. Not for use outside src/state_store. */
#pragma once

/* Sandboxes destroyed before $1 that no snapshot names and no unfinished operation targets. */
#define STORE_SQL_PICK_DESTROYED                                                                       \
        "INSERT INTO purge_ids SELECT id FROM sandboxes WHERE state = 'destroyed' AND updated_at < $1" \
        "  AND NOT EXISTS (SELECT 1 FROM snapshots WHERE snapshots.sandbox_id = sandboxes.id)"         \
        "  AND NOT EXISTS (SELECT 1 FROM operations WHERE operations.target = sandboxes.id"            \
        "                  AND operations.state IN ('pending', 'running'))"                            \
        "  ORDER BY updated_at LIMIT $2"
#define STORE_SQL_DELETE_DESTROYED                                                            \
        "DELETE FROM commands WHERE sandbox_id IN (SELECT id FROM purge_ids)",                \
                "DELETE FROM attach_sessions WHERE sandbox_id IN (SELECT id FROM purge_ids)", \
                "DELETE FROM operations WHERE target IN (SELECT id FROM purge_ids)",          \
                "DELETE FROM sandboxes WHERE id IN (SELECT id FROM purge_ids)"

/* Operations finished before $1, but not the newest of a target that exists (a sandbox not
 * destroyed, or a template): it tells how that object came to be as it is. */
#define STORE_SQL_PICK_FINISHED                                                                                           \
        "INSERT INTO purge_ops SELECT o.id FROM operations o"                                                             \
        "  WHERE o.state IN ('succeeded', 'failed') AND o.finished_at > 0 AND o.finished_at < $1"                         \
        "  AND NOT ((EXISTS (SELECT 1 FROM sandboxes s WHERE s.id = o.target AND s.state != 'destroyed')"                 \
        "            OR EXISTS (SELECT 1 FROM templates t WHERE t.name = o.target))"                                      \
        "           AND NOT EXISTS (SELECT 1 FROM operations n WHERE n.target = o.target"                                 \
        "                           AND (n.created_at > o.created_at OR (n.created_at = o.created_at AND n.id > o.id))))" \
        "  ORDER BY o.finished_at LIMIT $2"
#define STORE_SQL_DELETE_FINISHED "DELETE FROM operations WHERE id IN (SELECT id FROM purge_ops)"

/* The metrics' tallies. */
#define STORE_SQL_SANDBOX_TALLY                                                     \
        "SELECT state, runtime, COUNT(*) FROM sandboxes WHERE state != 'destroyed'" \
        " GROUP BY state, runtime ORDER BY state, runtime"
#define STORE_SQL_OPERATION_TALLY                                                            \
        "SELECT kind, state, COUNT(*) FROM operations WHERE state IN ('pending', 'running')" \
        " GROUP BY kind, state ORDER BY kind, state"
