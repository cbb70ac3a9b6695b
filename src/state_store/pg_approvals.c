/* The PostgreSQL backend's approvals table, as SQLite's (sqlite_approvals.c): the hold
 * writes the approval and its pending_approval command in one transaction; a decision is
 * one UPDATE whose WHERE names the pending state, so of two deciders exactly one changes
 * the row and the other gets -EALREADY. */
#include "state_store/pg_statement.h"

#include <errno.h>

/* The approval's row; the caller holds st->lock, in a transaction. */
static int insert_locked(struct state_store *st, const struct approval_record *a)
{
        struct pg_args q = { 0 };
        pg_text(&q, a->id);
        pg_text(&q, a->project_id);
        pg_text(&q, a->sandbox_id);
        pg_text(&q, a->command_id);
        pg_text(&q, a->key_id);
        pg_text(&q, a->policy_id);
        pg_text(&q, a->rule_id);
        pg_text(&q, a->reason);
        pg_text(&q, approval_state_name(a->state));
        pg_json(&q, a->request);
        pg_text(&q, a->decided_by);
        pg_text(&q, a->comment);
        pg_int(&q, a->created_at_ms);
        pg_int(&q, a->expires_at_ms);
        pg_int(&q, a->decided_at_ms);
        return pg_exec(st,
                       "INSERT INTO approvals(" STORE_APPROVAL_COLUMNS
                       ") VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15)",
                       &q, NULL, NULL);
}

int pg_approval_hold(struct state_store *st, const struct approval_record *a, const struct command_record *c)
{
        pthread_mutex_lock(&st->lock);
        int r = pg_begin(st);
        if (r == 0)
                r = insert_locked(st, a);
        if (r == 0)
                r = pg_command_insert_locked(st, c);
        if (r == 0)
                r = pg_commit(st);
        else
                pg_rollback(st);
        pthread_mutex_unlock(&st->lock);
        return r;
}

int pg_approval_get(struct state_store *st, const char *project_id, const char *id, struct approval_record *ret)
{
        struct pg_args a = { 0 };
        pg_text(&a, id);
        pg_nullable(&a, project_id);
        return pg_get(st,
                      "SELECT " STORE_APPROVAL_COLUMNS " FROM approvals WHERE id = $1 AND ($2::text IS NULL OR project_id = $2)",
                      &a, store_row_approval, ret);
}

int pg_approval_list(struct state_store *st, const char *project_id, int state, const struct store_page *page,
                     struct approval_record **ret, size_t *ret_n)
{
        struct pg_args a = { 0 };
        pg_nullable(&a, project_id);
        pg_nullable(&a, state >= 0 ? approval_state_name((enum approval_state)state) : NULL);
        pg_page(&a, page);
        return pg_list(st,
                       "SELECT " STORE_APPROVAL_COLUMNS
                       " FROM approvals WHERE ($1::text IS NULL OR project_id = $1)"
                       " AND ($2::text IS NULL OR state = $2) AND " PG_PAGE_AFTER(
                               "created_at, id", ">", "3", "4") " ORDER BY created_at, id" PG_PAGE_LIMIT("5"),
                       &a, sizeof(struct approval_record), store_row_approval, store_release_approval, (void **)ret, ret_n);
}

int pg_approval_decide(struct state_store *st, const char *id, enum approval_state to, const char *decided_by,
                       const char *comment, int64_t at_ms)
{
        struct pg_args a = { 0 };
        pg_text(&a, id);
        pg_text(&a, approval_state_name(to));
        pg_text(&a, decided_by);
        pg_text(&a, comment);
        pg_int(&a, at_ms);
        int changed = 0;
        pthread_mutex_lock(&st->lock);
        int r = pg_exec(st,
                        "UPDATE approvals SET state = $2, decided_by = $3, comment = $4, decided_at = $5"
                        " WHERE id = $1 AND state = 'pending'",
                        &a, NULL, &changed);
        if (r == 0 && changed == 0) {
                struct pg_args q = { 0 };
                pg_text(&q, id);
                int64_t n = 0;
                r = pg_query_int(st, "SELECT count(*) FROM approvals WHERE id = $1", &q, &n);
                if (r == 0)
                        r = n > 0 ? -EALREADY : -ENOENT;
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}
