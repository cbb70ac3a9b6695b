/* The PostgreSQL backend's secrets and credential bindings, as SQLite's (sqlite_secrets.c). */
#include "state_store/pg_statement.h"

#include <errno.h>
#include <stdlib.h>

int pg_secret_data_key(struct state_store *st, const char *project_id, const char *candidate, char **ret)
{
        struct pg_args a = { 0 };
        pg_text(&a, project_id);
        pg_text(&a, candidate);
        pg_int(&a, pg_now_ms());
        char *sealed = NULL;
        pthread_mutex_lock(&st->lock);
        int r = pg_exec(st,
                        "INSERT INTO secret_data_keys(project_id, sealed, created_at) VALUES ($1, $2, $3)"
                        " ON CONFLICT (project_id) DO NOTHING",
                        &a, NULL, NULL);
        if (r == 0) {
                struct pg_args q = { 0 };
                pg_text(&q, project_id);
                r = pg_fetch_one(st, "SELECT sealed FROM secret_data_keys WHERE project_id = $1", &q, store_row_first_text,
                                 &sealed);
        }
        pthread_mutex_unlock(&st->lock);
        if (r == 0 && !sealed)
                r = -ENOMEM;
        if (r == 0)
                *ret = sealed;
        return r;
}

int pg_secret_insert(struct state_store *st, const struct secret_record *s)
{
        struct pg_args a = { 0 };
        pg_text(&a, s->id);
        pg_text(&a, s->project_id);
        pg_text(&a, s->name);
        pg_text(&a, s->sealed);
        pg_int(&a, s->created_at_ms);
        return pg_write(st, "INSERT INTO secrets(" STORE_SECRET_COLUMNS ") VALUES ($1,$2,$3,$4,$5)", &a, false);
}

int pg_secret_get(struct state_store *st, const char *project_id, const char *name, struct secret_record *ret)
{
        struct pg_args a = { 0 };
        pg_text(&a, project_id);
        pg_text(&a, name);
        return pg_get(st, "SELECT " STORE_SECRET_COLUMNS " FROM secrets WHERE project_id = $1 AND name = $2", &a,
                      store_row_secret, ret);
}

int pg_secret_list(struct state_store *st, const char *project_id, struct secret_record **ret, size_t *ret_n)
{
        struct pg_args a = { 0 };
        pg_text(&a, project_id);
        return pg_list(st, "SELECT " STORE_SECRET_COLUMNS " FROM secrets WHERE project_id = $1 ORDER BY created_at, id", &a,
                       sizeof(struct secret_record), store_row_secret, store_release_secret, (void **)ret, ret_n);
}

int pg_secret_delete(struct state_store *st, const char *project_id, const char *name)
{
        struct pg_args a = { 0 };
        pg_text(&a, project_id);
        pg_text(&a, name);
        return pg_write(st, "DELETE FROM secrets WHERE project_id = $1 AND name = $2", &a, true);
}

int pg_binding_insert(struct state_store *st, const struct binding_record *b)
{
        struct pg_args a = { 0 };
        pg_text(&a, b->id);
        pg_text(&a, b->project_id);
        pg_text(&a, b->sandbox_id);
        pg_text(&a, b->secret_name);
        pg_json(&a, b->spec);
        pg_int(&a, b->created_at_ms);
        return pg_write(st, "INSERT INTO credential_bindings(" STORE_BINDING_COLUMNS ") VALUES ($1,$2,$3,$4,$5,$6)", &a, false);
}

int pg_binding_list(struct state_store *st, const char *project_id, const char *sandbox_id, struct binding_record **ret,
                    size_t *ret_n)
{
        struct pg_args a = { 0 };
        pg_nullable(&a, project_id);
        pg_nullable(&a, sandbox_id);
        return pg_list(st,
                       "SELECT " STORE_BINDING_COLUMNS
                       " FROM credential_bindings WHERE ($1::text IS NULL OR project_id = $1)"
                       " AND ($2::text IS NULL OR sandbox_id = '' OR sandbox_id = $2) ORDER BY created_at, id",
                       &a, sizeof(struct binding_record), store_row_binding, store_release_binding, (void **)ret, ret_n);
}

int pg_binding_delete(struct state_store *st, const char *project_id, const char *id)
{
        struct pg_args a = { 0 };
        pg_text(&a, project_id);
        pg_text(&a, id);
        return pg_write(st, "DELETE FROM credential_bindings WHERE project_id = $1 AND id = $2", &a, true);
}
