/* The audit log in PostgreSQL (append-only: a trigger refuses UPDATE, migration 7), the
 * health check's write probe, and the metrics' tallies. */
#include "state_store/pg_statement.h"

#include <errno.h>
#include <string.h>

#include "state_store/store_sql.h"

int pg_audit_insert(struct state_store *st, const struct audit_record *r)
{
        struct pg_args a = { 0 };
        pg_text(&a, r->id);
        pg_int(&a, r->created_at_ms);
        pg_text(&a, r->request_id);
        pg_optional(&a, r->key_id);
        pg_optional(&a, r->project);
        pg_optional(&a, r->role);
        pg_text(&a, r->action);
        pg_optional(&a, r->target);
        pg_text(&a, r->method);
        pg_int(&a, r->status);
        pg_optional(&a, r->error_code);
        pg_optional(&a, r->source);
        pg_optional(&a, r->detail);
        return pg_write(st, "INSERT INTO audit_log(" STORE_AUDIT_COLUMNS ") VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13)",
                        &a, false);
}

int pg_audit_list(struct state_store *st, const struct audit_filter *f, const struct store_page *page, struct audit_record **ret,
                  size_t *ret_n)
{
        struct pg_args a = { 0 };
        pg_optional(&a, f->project);
        pg_optional(&a, f->key_id);
        pg_optional(&a, f->action);
        pg_optional(&a, f->target);
        pg_int(&a, f->since_ms);
        pg_int(&a, f->until_ms);
        pg_page(&a, page);
        return pg_list(st,
                       "SELECT " STORE_AUDIT_COLUMNS
                       " FROM audit_log"
                       " WHERE ($1::text IS NULL OR project = $1) AND ($2::text IS NULL OR key_id = $2)"
                       " AND ($3::text IS NULL OR action = $3) AND ($4::text IS NULL OR target = $4)"
                       " AND ($5::bigint = 0 OR created_at >= $5) AND ($6::bigint = 0 OR created_at < $6)"
                       " AND " PG_PAGE_AFTER("created_at, id", ">", "7", "8") " ORDER BY created_at, id" PG_PAGE_LIMIT("9"),
                       &a, sizeof(struct audit_record), store_row_audit, NULL, (void **)ret, ret_n);
}

int pg_audit_purge(struct state_store *st, int64_t before_ms, int limit, int *ret_n)
{
        struct pg_args a = { 0 };
        int n = 0;
        pg_int(&a, before_ms);
        pg_int(&a, limit);
        pthread_mutex_lock(&st->lock);
        int r = pg_exec(st,
                        "DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE created_at < $1"
                        " ORDER BY created_at LIMIT $2)",
                        &a, NULL, &n);
        pthread_mutex_unlock(&st->lock);
        if (r == 0 && ret_n)
                *ret_n = n;
        return r;
}

int pg_probe_write(struct state_store *st, int64_t now_ms)
{
        struct pg_args a = { 0 };
        pg_int(&a, now_ms);
        return pg_write(st, "INSERT INTO store_probe(id, at) VALUES (1, $1) ON CONFLICT(id) DO UPDATE SET at = excluded.at", &a,
                        false);
}

static int tally(struct state_store *st, const char *sql, struct store_tally **ret, size_t *ret_n)
{
        return pg_list(st, sql, NULL, sizeof(struct store_tally), store_row_tally, NULL, (void **)ret, ret_n);
}

int pg_sandbox_tally(struct state_store *st, struct store_tally **ret, size_t *ret_n)
{
        return tally(st, STORE_SQL_SANDBOX_TALLY, ret, ret_n);
}

int pg_operation_tally(struct state_store *st, struct store_tally **ret, size_t *ret_n)
{
        return tally(st, STORE_SQL_OPERATION_TALLY, ret, ret_n);
}
