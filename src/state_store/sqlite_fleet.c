/* The SQLite backend's fleet: the nodes table and the claims on operations (store_sql.h
 * holds the SQL both backends run). SQLite has one writer at a time: a claim is a BEGIN
 * IMMEDIATE transaction that picks the row, takes it and moves its sandboxes, so two
 * claimants (threads of one spaced, or two processes on one file) never take the same row;
 * the rules of what is claimable are PostgreSQL's. */
#include "state_store/sqlite_statement.h"
#include "state_store/store_sql.h"

#include <errno.h>
#include <string.h>

#include "spaced/wallclock.h"

/* The SQL of store_sql.h numbers its parameters $1, $2, … as PostgreSQL does, not always
 * first used in that order: bound by name. */
static void bind_text(sqlite3_stmt *s, int n, const char *v)
{
        char name[8];
        snprintf(name, sizeof(name), "$%d", n);
        int i = sqlite3_bind_parameter_index(s, name);
        if (i > 0)
                sq_bind_text(s, i, v);
}

static void bind_int(sqlite3_stmt *s, int n, int64_t v)
{
        char name[8];
        snprintf(name, sizeof(name), "$%d", n);
        int i = sqlite3_bind_parameter_index(s, name);
        if (i > 0)
                sqlite3_bind_int64(s, i, v);
}

/* Runs sql with text parameters t[0..nt) then integer ones i[0..ni), $1 … in that order. */
static int run_locked(struct state_store *st, const char *sql, const char *const *t, int nt, const int64_t *i, int ni,
                      int *ret_changed)
{
        sqlite3_stmt *s;
        int r = sq_prepare(st, sql, &s);
        if (r < 0)
                return r;
        for (int k = 0; k < nt; k++)
                bind_text(s, k + 1, t[k]);
        for (int k = 0; k < ni; k++)
                bind_int(s, nt + k + 1, i[k]);
        r = sq_exec_done(s);
        if (r == 0 && ret_changed)
                *ret_changed = sqlite3_changes(st->db);
        return r;
}

int sqlite_node_register(struct state_store *st, const struct node_record *n)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_begin(st);
        if (r < 0)
                goto out;
        r = sq_prepare(st, STORE_SQL_NODE_UPSERT, &s);
        if (r == 0) {
                bind_text(s, 1, n->id);
                bind_text(s, 2, n->address);
                bind_int(s, 3, n->capacity);
                bind_text(s, 4, n->labels[0] ? n->labels : "{}");
                bind_text(s, 5, "ready");
                bind_int(s, 6, n->started_at_ms);
                bind_int(s, 7, n->started_at_ms);
                r = sq_exec_done(s);
        }
        const char *id[] = { n->id };
        if (r == 0)
                r = run_locked(st, STORE_SQL_NODE_RELEASE_CLAIMS, id, 1, NULL, 0, NULL);
        if (r == 0)
                r = sq_commit(st);
        if (r < 0)
                sq_rollback(st);
out:
        pthread_mutex_unlock(&st->lock);
        return r;
}

int sqlite_node_heartbeat(struct state_store *st, const char *id, int64_t now_ms)
{
        const char *t[] = { id };
        int changed = 0;
        pthread_mutex_lock(&st->lock);
        int r = run_locked(st, STORE_SQL_NODE_HEARTBEAT, t, 1, &now_ms, 1, &changed);
        pthread_mutex_unlock(&st->lock);
        return r == 0 && changed == 0 ? -ENOENT : r;
}

int sqlite_node_list(struct state_store *st, struct node_record **ret, size_t *ret_n)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st, STORE_SQL_NODE_LIST, &s);
        if (r == 0)
                r = sq_collect(s, sizeof(struct node_record), store_row_node, NULL, (void **)ret, ret_n);
        pthread_mutex_unlock(&st->lock);
        return r;
}

int sqlite_node_mark_lost(struct state_store *st, int64_t before_ms, int *ret_n)
{
        int changed = 0;
        pthread_mutex_lock(&st->lock);
        int r = run_locked(st, STORE_SQL_NODE_MARK_LOST, NULL, 0, &before_ms, 1, &changed);
        pthread_mutex_unlock(&st->lock);
        if (r == 0 && ret_n)
                *ret_n = changed;
        return r;
}

int sqlite_operation_claim(struct state_store *st, const char *owner, const char *id, int64_t live_after_ms, int64_t now_ms,
                           struct operation *ret)
{
        char token[40], picked[32] = "";
        struct operation op;
        if (!owner || !owner[0])
                return -EINVAL;
        random_id("ct-", 12, token, sizeof(token));
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_begin(st);
        if (r < 0)
                goto out;
        r = sq_prepare(st, STORE_SQL_CLAIMABLE, &s);
        if (r == 0) {
                bind_text(s, 1, owner);
                bind_int(s, 2, live_after_ms);
                bind_text(s, 3, id ? id : "");
                int rc = sqlite3_step(s);
                if (rc == SQLITE_ROW)
                        sq_copy_col(s, 0, picked, sizeof(picked));
                r = rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? -ENOENT : sq_error(rc);
                sqlite3_finalize(s);
        }
        if (r == 0) {
                r = sq_prepare(st, STORE_SQL_CLAIM_TAKE, &s);
                if (r == 0) {
                        bind_text(s, 1, owner);
                        bind_text(s, 2, token);
                        bind_int(s, 3, now_ms);
                        bind_text(s, 4, picked);
                        r = sq_exec_done(s);
                }
        }
        if (r == 0) {
                r = sq_prepare(st, STORE_SQL_CLAIM_MOVE_SANDBOXES, &s);
                if (r == 0) {
                        bind_text(s, 1, owner);
                        bind_int(s, 2, live_after_ms);
                        bind_text(s, 3, picked);
                        r = sq_exec_done(s);
                }
        }
        if (r == 0) {
                r = sq_prepare(st, "SELECT " STORE_OP_READ " FROM operations WHERE id = $1", &s);
                if (r == 0) {
                        bind_text(s, 1, picked);
                        r = sq_fetch_one(s, store_row_operation, &op);
                }
        }
        if (r == 0)
                r = sq_commit(st);
        if (r < 0)
                sq_rollback(st);
        else
                *ret = op;
out:
        pthread_mutex_unlock(&st->lock);
        return r;
}
