/* The PostgreSQL backend's snapshots table. */
#include "state_store/pg_statement.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define SNAP_COLUMNS STORE_SNAP_COLUMNS

int pg_snapshot_insert_locked(struct state_store *st, const struct snapshot *snap)
{
        struct pg_args a = { 0 };
        pg_text(&a, snap->id);
        pg_text(&a, snap->sandbox_id);
        pg_text(&a, snap->state);
        pg_text(&a, snap->label);
        pg_text(&a, snap->kind);
        pg_text(&a, snap->parent_snapshot_id);
        pg_int(&a, snap->bytes_exclusive);
        pg_int(&a, snap->pause_us);
        pg_int(&a, snap->created_at_ms);
        pg_int(&a, snap->rolling ? 1 : 0);
        pg_text(&a, snap->project_id);
        return pg_exec(st,
                       "INSERT INTO snapshots(" SNAP_COLUMNS
                       ") VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,"
                       " COALESCE(NULLIF($11, ''), (SELECT project_id FROM sandboxes WHERE id=$2), ''))",
                       &a, NULL, NULL);
}

int pg_snapshot_get(struct state_store *st, const char *id, struct snapshot *ret)
{
        struct pg_args a = { 0 };
        pg_text(&a, id);
        return pg_get(st, "SELECT " SNAP_COLUMNS " FROM snapshots WHERE id=$1", &a, store_row_snapshot, ret);
}

int pg_snapshot_list(struct state_store *st, const char *sandbox_id, const char *project_id, const struct store_page *page,
                     struct snapshot **ret, size_t *ret_n)
{
        struct pg_args a = { 0 };
        pg_text(&a, sandbox_id ? sandbox_id : "");
        pg_nullable(&a, project_id);
        pg_page(&a, page);
        return pg_list(st,
                       "SELECT " SNAP_COLUMNS
                       " FROM snapshots WHERE ($1 = '' OR sandbox_id = $1)"
                       " AND ($2::text IS NULL OR project_id = $2) AND " PG_PAGE_AFTER(
                               "created_at, id", ">", "3", "4") " ORDER BY created_at, id" PG_PAGE_LIMIT("5"),
                       &a, sizeof(struct snapshot), store_row_snapshot, NULL, (void **)ret, ret_n);
}

int pg_snapshot_update(struct state_store *st, const struct snapshot *snap)
{
        struct pg_args a = { 0 };
        pg_text(&a, snap->state);
        pg_int(&a, snap->bytes_exclusive);
        pg_int(&a, snap->pause_us);
        pg_text(&a, snap->parent_snapshot_id);
        pg_text(&a, snap->id);
        return pg_write(st, "UPDATE snapshots SET state=$1, bytes_exclusive=$2, pause_us=$3, parent_snapshot_id=$4 WHERE id=$5",
                        &a, true);
}

static void first_text(const struct store_row *r, void *elem)
{
        const char *v = r->text(r->row, 0);
        snprintf(elem, 32, "%s", v ? v : "");
}

/* Deletes a snapshot and keeps lineage a chain: whatever named it as its parent (later
 * snapshots) or as its head (the sandbox) now names its parent instead. With if_unused,
 * -EBUSY (and the operation's id) while an unfinished operation needs it. */
int pg_snapshot_delete(struct state_store *st, const char *id, bool if_unused, char *ret_user)
{
        char parent[32] = "", user[32] = "";
        pthread_mutex_lock(&st->lock);
        int r = pg_begin(st);
        if (r < 0)
                goto out;
        if (if_unused) {
                struct pg_args a = { 0 };
                pg_text(&a, id);
                r = pg_fetch_one(st, "SELECT id FROM operations WHERE snapshot_id=$1 AND state IN ('pending', 'running') LIMIT 1",
                                 &a, first_text, user);
                if (r == 0) {
                        if (ret_user)
                                snprintf(ret_user, 32, "%s", user);
                        r = -EBUSY;
                } else if (r == -ENOENT)
                        r = 0;
        }
        if (r == 0) {
                struct pg_args a = { 0 };
                pg_text(&a, id);
                r = pg_fetch_one(st, "SELECT parent_snapshot_id FROM snapshots WHERE id=$1 FOR UPDATE", &a, first_text, parent);
        }
        static const char *const steps[] = {
                "UPDATE snapshots SET parent_snapshot_id=$1 WHERE parent_snapshot_id=$2",
                "UPDATE sandboxes SET head_snapshot_id=$1 WHERE head_snapshot_id=$2",
                "DELETE FROM snapshots WHERE id=$2 AND $1::text IS NOT NULL", /* every step takes both */
        };
        for (size_t i = 0; r == 0 && i < sizeof(steps) / sizeof(steps[0]); i++) {
                struct pg_args a = { 0 };
                pg_text(&a, parent);
                pg_text(&a, id);
                r = pg_exec(st, steps[i], &a, NULL, NULL);
        }
        if (r == 0)
                r = pg_commit(st);
        else
                pg_rollback(st);
out:
        pthread_mutex_unlock(&st->lock);
        return r;
}
