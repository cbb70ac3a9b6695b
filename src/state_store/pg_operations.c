/* The PostgreSQL backend's operations table and what an operation names (operation_refs). */
#include "state_store/pg_statement.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define OP_COLUMNS STORE_OP_COLUMNS

/* What the params name besides the target, as SQLite's json_each does: each string of
 * "children" and a string "snapshot_id". Params that are not a JSON object name nothing. */
static int insert_refs_locked(struct state_store *st, const struct operation *op)
{
        json_t *p = json_loads(op->params, 0, NULL);
        int r = 0;
        json_t *children = json_object_get(p, "children");
        const char *snap = json_string_value(json_object_get(p, "snapshot_id"));
        static const char sql[] = "INSERT INTO operation_refs(operation_id, ref) VALUES ($1, $2) ON CONFLICT DO NOTHING";
        size_t i;
        json_t *c;
        json_array_foreach(children, i, c)
        {
                if (r < 0 || !json_is_string(c))
                        continue;
                struct pg_args a = { 0 };
                pg_text(&a, op->id);
                pg_text(&a, json_string_value(c));
                r = pg_exec(st, sql, &a, NULL, NULL);
        }
        if (r == 0 && snap) {
                struct pg_args a = { 0 };
                pg_text(&a, op->id);
                pg_text(&a, snap);
                r = pg_exec(st, sql, &a, NULL, NULL);
        }
        json_decref(p);
        return r;
}

int pg_operation_insert_locked(struct state_store *st, const struct operation *op)
{
        if (op->snapshot_id[0]) { /* what it needs is still there, in this same transaction */
                struct pg_args a = { 0 };
                int64_t there = 0;
                pg_text(&a, op->snapshot_id);
                int r = pg_query_int(st, "SELECT count(*) FROM snapshots WHERE id=$1", &a, &there);
                if (r < 0)
                        return r;
                if (!there)
                        return -ENOENT;
        }
        struct pg_args a = { 0 };
        pg_text(&a, op->id);
        pg_text(&a, op->kind);
        pg_text(&a, op->target);
        pg_text(&a, operation_state_name(op->state));
        pg_text(&a, op->error_code);
        pg_text(&a, op->error_message);
        pg_int(&a, op->created_at_ms);
        pg_int(&a, op->started_at_ms);
        pg_int(&a, op->finished_at_ms);
        pg_text(&a, op->params);
        pg_text(&a, op->result);
        pg_text(&a, op->snapshot_id);
        pg_text(&a, op->project_id);
        int r = pg_exec(st,
                        "INSERT INTO operations(" OP_COLUMNS
                        ") VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,"
                        " COALESCE(NULLIF($13, ''), (SELECT project_id FROM sandboxes WHERE id=$3),"
                        " (SELECT project_id FROM templates WHERE name=$3), (SELECT project_id FROM snapshots WHERE id=$3), ''))",
                        &a, NULL, NULL);
        if (r < 0 || !op->params[0])
                return r;
        return insert_refs_locked(st, op);
}

int pg_operation_insert(struct state_store *st, const struct operation *op)
{
        pthread_mutex_lock(&st->lock);
        /* The op and its refs are one: in a transaction. */
        int r = pg_begin(st);
        if (r == 0)
                r = pg_operation_insert_locked(st, op);
        if (r == 0)
                r = pg_commit(st);
        else
                pg_rollback(st);
        pthread_mutex_unlock(&st->lock);
        return r;
}

int pg_operation_refers(struct state_store *st, const char *id, bool *ret)
{
        struct pg_args a = { 0 };
        int64_t v = 0;
        pg_text(&a, id);
        pthread_mutex_lock(&st->lock);
        int r = pg_query_int(st,
                             "SELECT (EXISTS (SELECT 1 FROM operations WHERE target = $1 AND state IN ('pending', 'running'))"
                             " OR EXISTS (SELECT 1 FROM operation_refs f JOIN operations o ON o.id = f.operation_id"
                             "            WHERE f.ref = $1 AND o.state IN ('pending', 'running')))::int",
                             &a, &v);
        pthread_mutex_unlock(&st->lock);
        if (r == 0)
                *ret = v != 0;
        return r;
}

int pg_operation_update(struct state_store *st, const struct operation *op)
{
        struct pg_args a = { 0 };
        pg_text(&a, operation_state_name(op->state));
        pg_text(&a, op->error_code);
        pg_text(&a, op->error_message);
        pg_int(&a, op->started_at_ms);
        pg_int(&a, op->finished_at_ms);
        pg_text(&a, op->result);
        pg_text(&a, op->id);
        pg_text(&a, op->claim_token);
        int r = pg_write(st,
                         "UPDATE operations SET state=$1, error_code=$2, error_message=$3, started_at=$4, finished_at=$5,"
                         " result=$6 WHERE id=$7 AND ($8 = '' OR claim_token = $8)",
                         &a, true);
        return r == -ENOENT && op->claim_token[0] ? -ESTALE : r; /* another node holds it now */
}

int pg_operation_get(struct state_store *st, const char *id, struct operation *ret)
{
        struct pg_args a = { 0 };
        pg_text(&a, id);
        return pg_get(st, "SELECT " STORE_OP_READ " FROM operations WHERE id=$1", &a, store_row_operation, ret);
}

int pg_operation_list(struct state_store *st, const char *target, int state, bool unfinished_only, const char *project_id,
                      const struct store_page *page, struct operation **ret, size_t *ret_n)
{
        struct pg_args a = { 0 };
        if (unfinished_only)
                return pg_list(st,
                               "SELECT " STORE_OP_READ
                               " FROM operations WHERE state IN ('pending','running')"
                               " ORDER BY created_at ASC, id ASC",
                               &a, sizeof(struct operation), store_row_operation, NULL, (void **)ret, ret_n);
        pg_text(&a, target ? target : "");
        pg_text(&a, state >= 0 ? operation_state_name((enum operation_state)state) : "");
        pg_nullable(&a, project_id);
        pg_page(&a, page);
        return pg_list(
                st,
                "SELECT " STORE_OP_READ
                " FROM operations WHERE ($1 = '' OR target = $1) AND ($2 = '' OR state = $2)"
                " AND ($3::text IS NULL OR project_id = $3)"
                " AND " PG_PAGE_AFTER("created_at, id", "<", "4", "5") " ORDER BY created_at DESC, id DESC" PG_PAGE_LIMIT("6"),
                &a, sizeof(struct operation), store_row_operation, NULL, (void **)ret, ret_n);
}
