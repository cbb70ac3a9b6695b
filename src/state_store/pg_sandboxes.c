/* The PostgreSQL backend's sandboxes table: inserts, reads, state transitions (the row is
 * locked FOR UPDATE for the transaction that moves it) and the settings writes. */
#include "state_store/pg_statement.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SB_COLUMNS STORE_SB_COLUMNS

static int sb_insert_locked(struct state_store *st, const struct sandbox *sb)
{
        struct pg_args a = { 0 };
        pg_text(&a, sb->id);
        pg_text(&a, sandbox_state_name(sb->state));
        pg_text(&a, sb->state_reason);
        pg_text(&a, sb->template_name);
        pg_json(&a, sb->environment);
        char cpus[32];
        snprintf(cpus, sizeof(cpus), "%.17g", sb->resources.cpus);
        pg_text(&a, cpus);
        pg_int(&a, sb->resources.memory_mb);
        pg_int(&a, sb->resources.pids);
        pg_int(&a, sb->resources.disk_mb);
        pg_json(&a, sb->env);
        pg_json(&a, sb->metadata);
        pg_int(&a, sb->timeout_s);
        pg_text(&a, sb->on_timeout);
        pg_int(&a, sb->expires_at_ms);
        pg_int(&a, sb->created_at_ms);
        pg_int(&a, sb->updated_at_ms);
        pg_text(&a, sb->runtime);
        pg_text(&a, sb->runtime_state);
        pg_text(&a, sb->parent_sandbox_id);
        pg_text(&a, sb->parent_snapshot_id);
        pg_text(&a, sb->head_snapshot_id);
        pg_json_or_empty(&a, sb->rolling);
        pg_text(&a, sb->project_id);
        pg_json_or_empty(&a, sb->network);
        pg_json_or_empty(&a, sb->idle);
        pg_text(&a, sb->node_id);
        pg_int(&a, sb->private_ports ? 1 : 0);
        /* A fork given no project takes its parent's; nothing else is left without one. */
        return pg_exec(st,
                       "INSERT INTO sandboxes(" SB_COLUMNS
                       ", node_id, private_ports) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,"
                       "$17,$18,$19,$20,$21,$22, COALESCE(NULLIF($23, ''), (SELECT project_id FROM sandboxes WHERE id=$19), ''),"
                       " $24, $25, $26, $27)",
                       &a, NULL, NULL);
}

int pg_insert_batch(struct state_store *st, const struct sandbox *sbs, size_t nsb, const struct snapshot *snaps, size_t nsnap,
                    const struct operation *op)
{
        pthread_mutex_lock(&st->lock);
        int r = pg_begin(st);
        if (r < 0)
                goto out;
        for (size_t i = 0; r == 0 && i < nsb; i++)
                r = sb_insert_locked(st, &sbs[i]);
        for (size_t i = 0; r == 0 && i < nsnap; i++)
                r = pg_snapshot_insert_locked(st, &snaps[i]);
        if (r == 0 && op)
                r = pg_operation_insert_locked(st, op);
        if (r == 0)
                r = pg_commit(st);
        if (r < 0)
                pg_rollback(st);
out:
        pthread_mutex_unlock(&st->lock);
        return r;
}

int pg_sandbox_insert(struct state_store *st, const struct sandbox *sb, const struct operation *op)
{
        return pg_insert_batch(st, sb, 1, NULL, 0, op);
}

int pg_sandbox_get(struct state_store *st, const char *id, struct sandbox *ret)
{
        struct pg_args a = { 0 };
        pg_text(&a, id);
        return pg_get(st, "SELECT " STORE_SB_READ " FROM sandboxes WHERE id=$1", &a, store_row_sandbox, ret);
}

int pg_sandbox_list(struct state_store *st, int state_filter, const char *project_id, const struct store_page *page,
                    struct sandbox **ret, size_t *ret_n)
{
        struct pg_args a = { 0 };
        pg_nullable(&a, state_filter >= 0 ? sandbox_state_name((enum sandbox_state)state_filter) : NULL);
        pg_nullable(&a, project_id);
        pg_page(&a, page);
        return pg_list(st,
                       "SELECT " STORE_SB_READ
                       " FROM sandboxes WHERE ($1::text IS NULL AND state != 'destroyed' OR state = $1)"
                       " AND ($2::text IS NULL OR project_id = $2)"
                       " AND " PG_PAGE_AFTER("created_at, id", ">", "3", "4") " ORDER BY created_at, id" PG_PAGE_LIMIT("5"),
                       &a, sizeof(struct sandbox), store_row_sandbox, store_release_sandbox, (void **)ret, ret_n);
}

static void state_row(const struct store_row *r, void *elem)
{
        const char *v = r->text(r->row, 0);
        sandbox_state_from_name(v ? v : "", elem);
}

/* Moves the sandbox if it is in from_mask; the caller holds the lock and a transaction. */
static int transition_locked(struct state_store *st, const char *id, unsigned from_mask, enum sandbox_state to,
                             const char *reason, enum sandbox_state *ret_current)
{
        enum sandbox_state cur = SANDBOX_CREATING;
        struct pg_args a = { 0 };
        pg_text(&a, id);
        int r = pg_fetch_one(st, "SELECT state FROM sandboxes WHERE id=$1 FOR UPDATE", &a, state_row, &cur);
        if (r < 0)
                return r;
        if (!(from_mask & (1u << cur))) {
                if (ret_current)
                        *ret_current = cur;
                return -ESTALE;
        }
        struct pg_args u = { 0 };
        pg_text(&u, sandbox_state_name(to));
        pg_text(&u, reason ? reason : "");
        pg_int(&u, pg_now_ms());
        pg_text(&u, id);
        return pg_exec(st, "UPDATE sandboxes SET state=$1, state_reason=$2, updated_at=$3 WHERE id=$4", &u, NULL, NULL);
}

/* -EBUSY while an unfinished fork or snapshot of the sandbox waits to capture it. */
static int capture_pending_locked(struct state_store *st, const char *id)
{
        struct pg_args a = { 0 };
        int64_t n = 0;
        pg_text(&a, id);
        int r = pg_query_int(st,
                             "SELECT count(*) FROM operations WHERE target=$1 AND state IN ('pending', 'running')"
                             " AND kind IN ('sandbox.fork', 'sandbox.snapshot')",
                             &a, &n);
        return r < 0 ? r : n ? -EBUSY : 0;
}

int pg_sandbox_transition(struct state_store *st, const char *id, unsigned from_mask, enum sandbox_state to, const char *reason,
                          const struct operation *op, enum sandbox_state *ret_current)
{
        pthread_mutex_lock(&st->lock);
        int r = pg_begin(st);
        if (r == 0) {
                if (op && strcmp(op->kind, "sandbox.destroy") == 0)
                        r = capture_pending_locked(st, id);
                if (r == 0)
                        r = transition_locked(st, id, from_mask, to, reason, ret_current);
                if (r == 0 && op)
                        r = pg_operation_insert_locked(st, op);
                if (r == 0)
                        r = pg_commit(st);
                if (r < 0)
                        pg_rollback(st);
                else if (ret_current)
                        *ret_current = to;
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}

int pg_sandbox_settle(struct state_store *st, const char *id, const struct sandbox_settlement *set,
                      enum sandbox_state *ret_current)
{
        pthread_mutex_lock(&st->lock);
        int r = pg_begin(st);
        if (r < 0)
                goto out;
        r = transition_locked(st, id, set->from_mask, set->to, set->reason, ret_current);
        if (r == 0 && set->set_runtime) {
                struct pg_args a = { 0 };
                pg_text(&a, set->runtime_state ? set->runtime_state : "");
                pg_text(&a, id);
                r = pg_exec(st, "UPDATE sandboxes SET runtime_state=$1 WHERE id=$2", &a, NULL, NULL);
        }
        if (r == 0 && set->set_expiry) {
                struct pg_args a = { 0 };
                pg_int(&a, set->expires_at_ms);
                pg_int(&a, pg_now_ms());
                pg_text(&a, id);
                r = pg_exec(st, "UPDATE sandboxes SET expires_at=$1, updated_at=$2 WHERE id=$3", &a, NULL, NULL);
        }
        if (r == 0 && set->head_snapshot_id) {
                struct pg_args a = { 0 };
                pg_text(&a, set->head_snapshot_id);
                pg_text(&a, id);
                r = pg_exec(st, "UPDATE sandboxes SET head_snapshot_id=$1 WHERE id=$2", &a, NULL, NULL);
        }
        if (r == 0 && set->op) {
                struct pg_args a = { 0 };
                pg_text(&a, operation_state_name(set->op->state));
                pg_text(&a, set->op->error_code);
                pg_text(&a, set->op->error_message);
                pg_int(&a, set->op->finished_at_ms);
                pg_text(&a, set->op->result);
                pg_text(&a, set->op->id);
                pg_text(&a, set->op->claim_token);
                r = pg_exec_one(st,
                                "UPDATE operations SET state=$1, error_code=$2, error_message=$3, finished_at=$4, result=$5"
                                " WHERE id=$6 AND ($7 = '' OR claim_token = $7)",
                                &a);
                if (r == -ENOENT && set->op->claim_token[0])
                        r = -ESTALE; /* another node holds it now */
        }
        if (r == 0)
                r = pg_commit(st);
        if (r < 0)
                pg_rollback(st);
        else if (ret_current)
                *ret_current = set->to;
out:
        pthread_mutex_unlock(&st->lock);
        return r;
}

int pg_sandbox_set_runtime(struct state_store *st, const char *id, const char *runtime_state)
{
        struct pg_args a = { 0 };
        pg_text(&a, runtime_state ? runtime_state : "");
        pg_text(&a, id);
        return pg_write(st, "UPDATE sandboxes SET runtime_state=$1 WHERE id=$2", &a, true);
}

int pg_sandbox_set_expiry(struct state_store *st, const char *id, int64_t expires_at_ms)
{
        struct pg_args a = { 0 };
        pg_int(&a, expires_at_ms);
        pg_int(&a, pg_now_ms());
        pg_text(&a, id);
        return pg_write(st, "UPDATE sandboxes SET expires_at=$1, updated_at=$2 WHERE id=$3", &a, true);
}

int pg_sandbox_set_head(struct state_store *st, const char *id, const char *snapshot_id)
{
        struct pg_args a = { 0 };
        pg_text(&a, snapshot_id ? snapshot_id : "");
        pg_text(&a, id);
        return pg_write(st, "UPDATE sandboxes SET head_snapshot_id=$1 WHERE id=$2", &a, true);
}

int pg_sandbox_set_network(struct state_store *st, const char *id, const json_t *network)
{
        struct pg_args a = { 0 };
        pg_json_or_empty(&a, network);
        pg_int(&a, pg_now_ms());
        pg_text(&a, id);
        return pg_write(st, "UPDATE sandboxes SET network=$1, updated_at=$2 WHERE id=$3", &a, true);
}

int pg_sandbox_set_settings(struct state_store *st, const struct sandbox *sb, bool set_expiry)
{
        struct pg_args a = { 0 };
        pg_json(&a, sb->metadata);
        pg_int(&a, sb->timeout_s);
        pg_text(&a, sb->on_timeout);
        pg_json_or_empty(&a, sb->rolling);
        pg_int(&a, pg_now_ms());
        pg_text(&a, sb->id);
        pg_int(&a, set_expiry ? 1 : 0);
        pg_int(&a, sb->expires_at_ms);
        pg_json_or_empty(&a, sb->idle);
        return pg_write(st,
                        "UPDATE sandboxes SET metadata=$1, timeout_s=$2, on_timeout=$3, rolling=$4, updated_at=$5,"
                        " expires_at = CASE WHEN $7::int <> 0 THEN $8::bigint ELSE expires_at END, idle=$9 WHERE id=$6",
                        &a, true);
}
