/* The PostgreSQL backend's templates, API keys and projects tables. */
#include "state_store/pg_statement.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int pg_template_upsert(struct state_store *st, const struct template_record *t)
{
        struct pg_args a = { 0 };
        pg_text(&a, t->name);
        pg_text(&a, t->state);
        pg_json(&a, t->environment);
        pg_text(&a, t->state_reason);
        pg_int(&a, t->updated_at_ms ? t->updated_at_ms : pg_now_ms());
        pg_text(&a, t->project_id);
        /* The project is the first writer's: a rebuild never moves a template. */
        return pg_write(st,
                        "INSERT INTO templates(" STORE_TEMPLATE_COLUMNS
                        ") VALUES ($1,$2,$3,$4,$5,$6)"
                        " ON CONFLICT(name) DO UPDATE SET state=excluded.state, environment=excluded.environment,"
                        " state_reason=excluded.state_reason, updated_at=excluded.updated_at",
                        &a, false);
}

int pg_template_get(struct state_store *st, const char *name, struct template_record *ret)
{
        struct pg_args a = { 0 };
        pg_text(&a, name);
        return pg_get(st, "SELECT " STORE_TEMPLATE_COLUMNS " FROM templates WHERE name=$1", &a, store_row_template, ret);
}

int pg_template_list(struct state_store *st, const char *project_id, const struct store_page *page, struct template_record **ret,
                     size_t *ret_n)
{
        struct pg_args a = { 0 };
        pg_nullable(&a, project_id);
        pg_page(&a, page);
        /* $2 (after_ms) is not used by a list by name: compared to itself to give it a type. */
        return pg_list(st,
                       "SELECT " STORE_TEMPLATE_COLUMNS
                       " FROM templates"
                       " WHERE ($1::text IS NULL OR project_id = $1 OR project_id = '') AND $2::bigint = $2::bigint"
                       " AND " PG_PAGE_AFTER_NAME("name", "3") " ORDER BY name" PG_PAGE_LIMIT("4"),
                       &a, sizeof(struct template_record), store_row_template, store_release_template, (void **)ret, ret_n);
}

int pg_template_delete(struct state_store *st, const char *name)
{
        struct pg_args a = { 0 };
        pg_text(&a, name);
        return pg_write(st, "DELETE FROM templates WHERE name=$1", &a, true);
}

int pg_key_insert(struct state_store *st, const struct api_key *k)
{
        struct pg_args a = { 0 };
        pg_text(&a, k->id);
        pg_text(&a, k->name);
        pg_text(&a, k->hash);
        pg_int(&a, k->created_at_ms);
        pg_text(&a, k->project_id);
        pg_text(&a, k->role);
        pg_int(&a, (int64_t)k->permissions);
        pg_int(&a, k->expires_at_ms);
        return pg_write(st, "INSERT INTO api_keys(" STORE_KEY_COLUMNS ") VALUES ($1,$2,$3,$4,0,$5,$6,$7,$8)", &a, false);
}

int pg_key_get(struct state_store *st, const char *id, struct api_key *ret)
{
        struct pg_args a = { 0 };
        pg_text(&a, id);
        return pg_get(st, "SELECT " STORE_KEY_COLUMNS " FROM api_keys WHERE id=$1", &a, store_row_key, ret);
}

int pg_key_list(struct state_store *st, const char *project_id, const struct store_page *page, struct api_key **ret,
                size_t *ret_n)
{
        struct pg_args a = { 0 };
        pg_nullable(&a, project_id);
        pg_page(&a, page);
        return pg_list(st,
                       "SELECT " STORE_KEY_COLUMNS
                       " FROM api_keys WHERE ($1::text IS NULL OR project_id = $1) AND " PG_PAGE_AFTER(
                               "created_at, id", ">", "2", "3") " ORDER BY created_at, id" PG_PAGE_LIMIT("4"),
                       &a, sizeof(struct api_key), store_row_key, NULL, (void **)ret, ret_n);
}

int pg_key_delete(struct state_store *st, const char *id, int64_t now_ms)
{
        pthread_mutex_lock(&st->lock);
        int r = pg_begin(st);
        if (r < 0)
                goto out;
        struct pg_args a = { 0 };
        pg_text(&a, id);
        r = pg_exec_one(st, "DELETE FROM api_keys WHERE id=$1", &a);
        if (r == 0) {
                struct pg_args u = { 0 };
                pg_text(&u, id);
                pg_int(&u, now_ms);
                r = pg_exec(st, "UPDATE attach_sessions SET revoked_at=$2 WHERE key_id=$1 AND revoked_at=0", &u, NULL, NULL);
        }
        if (r == 0)
                r = pg_commit(st);
        else
                pg_rollback(st);
out:
        pthread_mutex_unlock(&st->lock);
        return r;
}

int pg_key_authenticate(struct state_store *st, const char *hash, struct api_key *ret)
{
        struct pg_args a = { 0 };
        pg_text(&a, hash);
        pthread_mutex_lock(&st->lock);
        int r = pg_fetch_one(st, "SELECT " STORE_KEY_COLUMNS " FROM api_keys WHERE hash=$1", &a, store_row_key, ret);
        /* Record use at most once a minute so authentication stays a read on the hot path. */
        if (r == 0 && pg_now_ms() - ret->last_used_at_ms > 60000) {
                struct pg_args u = { 0 };
                pg_int(&u, pg_now_ms());
                pg_text(&u, ret->id);
                pg_exec(st, "UPDATE api_keys SET last_used_at=$1 WHERE id=$2", &u, NULL, NULL);
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}

int pg_key_count(struct state_store *st, int64_t *ret)
{
        pthread_mutex_lock(&st->lock);
        int r = pg_query_int(st, "SELECT count(*) FROM api_keys", NULL, ret);
        pthread_mutex_unlock(&st->lock);
        return r;
}

int pg_project_insert(struct state_store *st, const struct project *p)
{
        struct pg_args a = { 0 };
        pg_text(&a, p->id);
        pg_int(&a, p->created_at_ms);
        return pg_write(st, "INSERT INTO projects(" STORE_PROJECT_COLUMNS ") VALUES ($1,$2)", &a, false);
}

int pg_project_get(struct state_store *st, const char *id, struct project *ret)
{
        struct pg_args a = { 0 };
        pg_text(&a, id);
        return pg_get(st, "SELECT " STORE_PROJECT_COLUMNS " FROM projects WHERE id=$1", &a, store_row_project, ret);
}

int pg_project_list(struct state_store *st, const char *project_id, const struct store_page *page, struct project **ret,
                    size_t *ret_n)
{
        struct pg_args a = { 0 };
        pg_nullable(&a, project_id);
        pg_page(&a, page);
        return pg_list(st,
                       "SELECT " STORE_PROJECT_COLUMNS " FROM projects WHERE ($1::text IS NULL OR id = $1) AND " PG_PAGE_AFTER(
                               "created_at, id", ">", "2", "3") " ORDER BY created_at, id" PG_PAGE_LIMIT("4"),
                       &a, sizeof(struct project), store_row_project, NULL, (void **)ret, ret_n);
}
