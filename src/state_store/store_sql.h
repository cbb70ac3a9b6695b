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

/* The fleet (sqlite_fleet.c, pg_fleet.c; docs/fleet.md). A node is live when its row is
 * ready and its last heartbeat is at or after $2 (live_after_ms). */
#define STORE_SQL_LIVE_NODE(col) \
        "EXISTS (SELECT 1 FROM nodes n WHERE n.id = " col " AND n.state = 'ready' AND n.heartbeat_at >= $2)"
/* The operation node $1 may claim: $3 that one ('' the oldest), unfinished, held by nobody
 * or by a node that is not live; every older unfinished operation on its target held by $1;
 * its target not a sandbox of another node — unless that node is not live and this is the
 * sandbox's create (nothing of it exists yet that another pool would need): other work on a
 * sandbox of a lost node waits for it (host loss, docs/fleet.md). */
#define STORE_SQL_CLAIMABLE \
        "SELECT o.id FROM operations o WHERE o.state IN ('pending', 'running')"                                     \
        "  AND (o.claim_owner = '' OR (o.claim_owner <> $1 AND NOT " STORE_SQL_LIVE_NODE("o.claim_owner") "))"      \
        "  AND ($3 = '' OR o.id = $3)"                                                                              \
        "  AND NOT EXISTS (SELECT 1 FROM operations e WHERE e.target = o.target AND e.state IN ('pending', 'running')" \
        "                  AND (e.created_at < o.created_at OR (e.created_at = o.created_at AND e.id < o.id))"       \
        "                  AND e.claim_owner <> $1)"                                                                \
        "  AND NOT EXISTS (SELECT 1 FROM sandboxes s WHERE s.id = o.target AND s.node_id <> '' AND s.node_id <> $1" \
        "                  AND (o.kind <> 'sandbox.create' OR " STORE_SQL_LIVE_NODE("s.node_id") "))"               \
        "  ORDER BY o.created_at, o.id LIMIT 1"
/* $1 owner, $2 token, $3 now_ms, $4 the operation. */
#define STORE_SQL_CLAIM_TAKE \
        "UPDATE operations SET claim_owner = $1, claim_token = $2, claimed_at = $3, claims = claims + 1 WHERE id = $4"
/* The sandboxes operation $3 targets or names that are on no live node move to node $1. */
#define STORE_SQL_CLAIM_MOVE_SANDBOXES \
        "UPDATE sandboxes SET node_id = $1 WHERE node_id <> $1 AND NOT " STORE_SQL_LIVE_NODE("sandboxes.node_id") \
        "  AND (id = (SELECT target FROM operations WHERE id = $3)"                                           \
        "       OR id IN (SELECT ref FROM operation_refs WHERE operation_id = $3))"
/* A node's row ($1 id … $7 heartbeat_at), written whole. */
#define STORE_SQL_NODE_UPSERT                                                                       \
        "INSERT INTO nodes(" STORE_NODE_COLUMNS                                                     \
        ") VALUES ($1, $2, $3, $4, $5, $6, $7)"                                                     \
        " ON CONFLICT (id) DO UPDATE SET address = excluded.address, capacity = excluded.capacity," \
        " labels = excluded.labels, state = excluded.state, started_at = excluded.started_at,"      \
        " heartbeat_at = excluded.heartbeat_at"
/* What an earlier process of node $1 held is let go. */
#define STORE_SQL_NODE_RELEASE_CLAIMS \
        "UPDATE operations SET claim_owner = '', claim_token = '' WHERE claim_owner = $1 AND state IN ('pending', 'running')"
#define STORE_SQL_NODE_HEARTBEAT "UPDATE nodes SET heartbeat_at = $2, state = 'ready' WHERE id = $1"
#define STORE_SQL_NODE_LIST "SELECT " STORE_NODE_COLUMNS " FROM nodes ORDER BY id"
#define STORE_SQL_NODE_MARK_LOST "UPDATE nodes SET state = 'lost' WHERE state = 'ready' AND heartbeat_at < $1"
