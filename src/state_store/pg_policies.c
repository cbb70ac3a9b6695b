/* The PostgreSQL backend's policies table, as SQLite's (sqlite_policies.c): one document
 * per row, its name unique in its project (a taken name is -EEXIST), and an update a
 * compare-and-set on the version: one UPDATE whose WHERE names the version it replaces, so
 * of two writers at the same version exactly one changes the row (the other's WHERE is
 * re-checked on the row the first wrote) and the other gets -ESTALE. */
#include "state_store/pg_statement.h"

#include <errno.h>

int pg_policy_insert(struct state_store *st, const struct policy_record *p)
{
        struct pg_args a = { 0 };
        pg_text(&a, p->id);
        pg_text(&a, p->project_id);
        pg_text(&a, p->name);
        pg_text(&a, p->sandbox_id);
        pg_int(&a, p->version);
        pg_json(&a, p->document);
        pg_int(&a, p->created_at_ms);
        pg_int(&a, p->updated_at_ms);
        return pg_write(st, "INSERT INTO policies(" STORE_POLICY_COLUMNS ") VALUES ($1,$2,$3,$4,$5,$6,$7,$8)", &a, false);
}

int pg_policy_get(struct state_store *st, const char *project_id, const char *id, struct policy_record *ret)
{
        struct pg_args a = { 0 };
        pg_text(&a, id);
        pg_nullable(&a, project_id);
        return pg_get(st, "SELECT " STORE_POLICY_COLUMNS " FROM policies WHERE id = $1 AND ($2::text IS NULL OR project_id = $2)",
                      &a, store_row_policy, ret);
}

int pg_policy_list(struct state_store *st, const char *project_id, struct policy_record **ret, size_t *ret_n)
{
        struct pg_args a = { 0 };
        pg_nullable(&a, project_id);
        return pg_list(st,
                       "SELECT " STORE_POLICY_COLUMNS
                       " FROM policies WHERE ($1::text IS NULL OR project_id = $1) ORDER BY created_at, id",
                       &a, sizeof(struct policy_record), store_row_policy, store_release_policy, (void **)ret, ret_n);
}

int pg_policy_update(struct state_store *st, const struct policy_record *p)
{
        struct pg_args a = { 0 };
        pg_text(&a, p->id);
        pg_text(&a, p->project_id);
        pg_text(&a, p->name);
        pg_text(&a, p->sandbox_id);
        pg_json(&a, p->document);
        pg_int(&a, p->version);
        pg_int(&a, p->updated_at_ms);
        int changed = 0;
        pthread_mutex_lock(&st->lock);
        int r = pg_exec(st,
                        "UPDATE policies SET name = $3, sandbox_id = $4, document = $5, version = $6, updated_at = $7"
                        " WHERE id = $1 AND project_id = $2 AND version = $6::bigint - 1",
                        &a, NULL, &changed);
        if (r == 0 && changed == 0) {
                /* Which: no such row, or another version. */
                struct pg_args q = { 0 };
                pg_text(&q, p->id);
                pg_text(&q, p->project_id);
                int64_t n = 0;
                r = pg_query_int(st, "SELECT count(*) FROM policies WHERE id = $1 AND project_id = $2", &q, &n);
                if (r == 0)
                        r = n > 0 ? -ESTALE : -ENOENT;
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}

int pg_policy_delete(struct state_store *st, const char *project_id, const char *id)
{
        struct pg_args a = { 0 };
        pg_text(&a, id);
        pg_text(&a, project_id);
        return pg_write(st, "DELETE FROM policies WHERE id = $1 AND project_id = $2", &a, true);
}
