/* The PostgreSQL backend's data-plane tables: attach sessions and commands. */
#include "state_store/pg_statement.h"

#include <errno.h>
#include <string.h>

int pg_session_insert(struct state_store *st, const struct attach_session *s)
{
        struct pg_args a = { 0 };
        pg_text(&a, s->id);
        pg_text(&a, s->sandbox_id);
        pg_text(&a, s->token_hash);
        pg_int(&a, s->created_at_ms);
        pg_int(&a, s->expires_at_ms);
        pg_int(&a, s->revoked_at_ms);
        pg_text(&a, s->key_id);
        /* The project is the sandbox's. */
        return pg_write(st,
                        "INSERT INTO attach_sessions(" STORE_SESSION_COLUMNS
                        ", project_id) VALUES ($1,$2,$3,$4,$5,$6,$7,"
                        " COALESCE((SELECT project_id FROM sandboxes WHERE id=$2), ''))",
                        &a, false);
}

int pg_session_get(struct state_store *st, const char *id, struct attach_session *ret)
{
        struct pg_args a = { 0 };
        pg_text(&a, id);
        return pg_get(st, "SELECT " STORE_SESSION_READ " FROM attach_sessions WHERE id=$1", &a, store_row_session, ret);
}

int pg_session_find_by_hash(struct state_store *st, const char *hash, struct attach_session *ret)
{
        struct pg_args a = { 0 };
        pg_text(&a, hash);
        return pg_get(st, "SELECT " STORE_SESSION_READ " FROM attach_sessions WHERE token_hash=$1", &a, store_row_session, ret);
}

int pg_session_list(struct state_store *st, const char *sandbox_id, const struct store_page *page, struct attach_session **ret,
                    size_t *ret_n)
{
        struct pg_args a = { 0 };
        pg_text(&a, sandbox_id);
        pg_page(&a, page);
        return pg_list(st,
                       "SELECT " STORE_SESSION_READ " FROM attach_sessions WHERE sandbox_id=$1 AND " PG_PAGE_AFTER(
                               "created_at, id", ">", "2", "3") " ORDER BY created_at, id" PG_PAGE_LIMIT("4"),
                       &a, sizeof(struct attach_session), store_row_session, NULL, (void **)ret, ret_n);
}

int pg_session_update(struct state_store *st, const struct attach_session *s)
{
        struct pg_args a = { 0 };
        pg_int(&a, s->expires_at_ms);
        pg_int(&a, s->revoked_at_ms);
        pg_text(&a, s->id);
        return pg_write(st, "UPDATE attach_sessions SET expires_at=$1, revoked_at=$2 WHERE id=$3", &a, true);
}

int pg_command_insert(struct state_store *st, const struct command_record *c)
{
        pthread_mutex_lock(&st->lock);
        int r = pg_command_insert_locked(st, c);
        pthread_mutex_unlock(&st->lock);
        return r;
}

int pg_command_insert_locked(struct state_store *st, const struct command_record *c)
{
        struct pg_args a = { 0 };
        pg_text(&a, c->id);
        pg_text(&a, c->sandbox_id);
        pg_text(&a, c->tag);
        pg_json(&a, c->spec);
        pg_text(&a, command_state_name(c->state));
        pg_int(&a, c->pid);
        pg_int(&a, c->exit_code);
        pg_int(&a, c->term_signal);
        pg_int(&a, c->timed_out ? 1 : 0);
        pg_text(&a, c->reason);
        pg_int(&a, c->created_at_ms);
        pg_int(&a, c->started_at_ms);
        pg_int(&a, c->finished_at_ms);
        return pg_exec(st,
                       "INSERT INTO commands(" STORE_COMMAND_COLUMNS
                       ", project_id) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,"
                       "$11,$12,$13, COALESCE((SELECT project_id FROM sandboxes WHERE id=$2), ''))",
                       &a, NULL, NULL);
}

int pg_command_update(struct state_store *st, const struct command_record *c)
{
        struct pg_args a = { 0 };
        pg_text(&a, command_state_name(c->state));
        pg_int(&a, c->pid);
        pg_int(&a, c->exit_code);
        pg_int(&a, c->term_signal);
        pg_int(&a, c->timed_out ? 1 : 0);
        pg_text(&a, c->reason);
        pg_int(&a, c->started_at_ms);
        pg_int(&a, c->finished_at_ms);
        pg_text(&a, c->id);
        pg_text(&a, c->sandbox_id);
        return pg_write(st,
                        "UPDATE commands SET state=$1, pid=$2, exit_code=$3, term_signal=$4, timed_out=$5, reason=$6,"
                        " started_at=$7, finished_at=$8 WHERE id=$9 AND sandbox_id=$10",
                        &a, true);
}

int pg_command_get(struct state_store *st, const char *sandbox_id, const char *id, struct command_record *ret)
{
        struct pg_args a = { 0 };
        pg_text(&a, id);
        pg_text(&a, sandbox_id);
        return pg_get(st, "SELECT " STORE_COMMAND_COLUMNS " FROM commands WHERE id=$1 AND sandbox_id=$2", &a, store_row_command,
                      ret);
}

int pg_command_delete(struct state_store *st, const char *sandbox_id, const char *id)
{
        struct pg_args a = { 0 };
        pg_text(&a, id);
        pg_text(&a, sandbox_id);
        return pg_write(st, "DELETE FROM commands WHERE id=$1 AND sandbox_id=$2", &a, false);
}

int pg_command_list(struct state_store *st, const char *sandbox_id, bool unfinished_only, const struct store_page *page,
                    struct command_record **ret, size_t *ret_n)
{
        struct pg_args a = { 0 };
        pg_nullable(&a, sandbox_id);
        pg_int(&a, unfinished_only ? 1 : 0);
        pg_page(&a, page);
        return pg_list(st,
                       "SELECT " STORE_COMMAND_COLUMNS
                       " FROM commands WHERE ($1::text IS NULL OR sandbox_id=$1)"
                       " AND ($2::int = 0 OR state IN ('starting','running')) AND " PG_PAGE_AFTER(
                               "created_at, id", ">", "3", "4") " ORDER BY created_at, id" PG_PAGE_LIMIT("5"),
                       &a, sizeof(struct command_record), store_row_command, store_release_command, (void **)ret, ret_n);
}
