/* The PostgreSQL backend's fleet: the nodes table and the claims on operations, with the
 * SQL of store_sql.h. A claim picks its row FOR UPDATE SKIP LOCKED: of two control
 * processes claiming at once, each takes a different row (or none), neither waits for the
 * other, and the row lock holds until the claim's transaction commits. */
#include "state_store/pg_statement.h"
#include "state_store/store_sql.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spaced/wallclock.h"

int pg_node_register(struct state_store *st, const struct node_record *n)
{
        pthread_mutex_lock(&st->lock);
        int r = pg_begin(st);
        if (r == 0) {
                struct pg_args a = { 0 };
                pg_text(&a, n->id);
                pg_text(&a, n->address);
                pg_int(&a, n->capacity);
                pg_text(&a, n->labels[0] ? n->labels : "{}");
                pg_text(&a, "ready");
                pg_int(&a, n->started_at_ms);
                pg_int(&a, n->started_at_ms);
                r = pg_exec(st, STORE_SQL_NODE_UPSERT, &a, NULL, NULL);
        }
        if (r == 0) {
                struct pg_args a = { 0 };
                pg_text(&a, n->id);
                r = pg_exec(st, STORE_SQL_NODE_RELEASE_CLAIMS, &a, NULL, NULL);
        }
        if (r == 0)
                r = pg_commit(st);
        else
                pg_rollback(st);
        pthread_mutex_unlock(&st->lock);
        return r;
}

int pg_node_heartbeat(struct state_store *st, const char *id, int64_t now_ms)
{
        struct pg_args a = { 0 };
        pg_text(&a, id);
        pg_int(&a, now_ms);
        return pg_write(st, STORE_SQL_NODE_HEARTBEAT, &a, true);
}

int pg_node_list(struct state_store *st, struct node_record **ret, size_t *ret_n)
{
        struct pg_args a = { 0 };
        return pg_list(st, STORE_SQL_NODE_LIST, &a, sizeof(struct node_record), store_row_node, NULL, (void **)ret, ret_n);
}

int pg_node_mark_lost(struct state_store *st, int64_t before_ms, int *ret_n)
{
        struct pg_args a = { 0 };
        pg_int(&a, before_ms);
        int changed = 0;
        pthread_mutex_lock(&st->lock);
        int r = pg_exec(st, STORE_SQL_NODE_MARK_LOST, &a, NULL, &changed);
        pthread_mutex_unlock(&st->lock);
        if (r == 0 && ret_n)
                *ret_n = changed;
        return r;
}

int pg_operation_claim(struct state_store *st, const char *owner, const char *id, int64_t live_after_ms, int64_t now_ms,
                       struct operation *ret)
{
        char token[40], picked[32] = "";
        struct operation op;
        if (!owner || !owner[0])
                return -EINVAL;
        random_id("ct-", 12, token, sizeof(token));
        pthread_mutex_lock(&st->lock);
        int r = pg_begin(st);
        if (r == 0) {
                struct pg_args a = { 0 };
                PGresult *res = NULL;
                pg_text(&a, owner);
                pg_int(&a, live_after_ms);
                pg_text(&a, id ? id : "");
                r = pg_exec(st, STORE_SQL_CLAIMABLE " FOR UPDATE OF o SKIP LOCKED", &a, &res, NULL);
                if (r == 0 && PQntuples(res) != 1)
                        r = -ENOENT;
                if (r == 0)
                        snprintf(picked, sizeof(picked), "%s", PQgetvalue(res, 0, 0));
                PQclear(res);
        }
        if (r == 0) {
                struct pg_args a = { 0 };
                pg_text(&a, owner);
                pg_text(&a, token);
                pg_int(&a, now_ms);
                pg_text(&a, picked);
                r = pg_exec(st, STORE_SQL_CLAIM_TAKE, &a, NULL, NULL);
        }
        if (r == 0) {
                struct pg_args a = { 0 };
                pg_text(&a, owner);
                pg_int(&a, live_after_ms);
                pg_text(&a, picked);
                r = pg_exec(st, STORE_SQL_CLAIM_MOVE_SANDBOXES, &a, NULL, NULL);
        }
        if (r == 0) {
                struct pg_args a = { 0 };
                pg_text(&a, picked);
                r = pg_fetch_one(st, "SELECT " STORE_OP_READ " FROM operations WHERE id = $1", &a, store_row_operation, &op);
        }
        if (r == 0)
                r = pg_commit(st);
        else
                pg_rollback(st);
        if (r == 0)
                *ret = op;
        pthread_mutex_unlock(&st->lock);
        return r;
}
