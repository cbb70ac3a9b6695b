/* The SQLite backend's approvals table: a command held by a require_approval rule. The hold
 * writes the approval and its pending_approval command in one transaction, so neither is
 * ever there without the other; a decision is a compare-and-set on the pending state, so of
 * two deciders (or a decider and the expiry) exactly one wins. */
#include "state_store/sqlite_statement.h"

#include <errno.h>
#include <string.h>

/* The approval's row; the caller holds st->lock, in a transaction. */
static int insert_locked(struct state_store *st, const struct approval_record *a)
{
        sqlite3_stmt *s;
        int r = sq_prepare(st, "INSERT INTO approvals(" STORE_APPROVAL_COLUMNS ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", &s);
        if (r < 0)
                return r;
        sq_bind_text(s, 1, a->id);
        sq_bind_text(s, 2, a->project_id);
        sq_bind_text(s, 3, a->sandbox_id);
        sq_bind_text(s, 4, a->command_id);
        sq_bind_text(s, 5, a->key_id);
        sq_bind_text(s, 6, a->policy_id);
        sq_bind_text(s, 7, a->rule_id);
        sq_bind_text(s, 8, a->reason);
        sq_bind_text(s, 9, approval_state_name(a->state));
        sq_bind_json(s, 10, a->request);
        sq_bind_text(s, 11, a->decided_by);
        sq_bind_text(s, 12, a->comment);
        sqlite3_bind_int64(s, 13, a->created_at_ms);
        sqlite3_bind_int64(s, 14, a->expires_at_ms);
        sqlite3_bind_int64(s, 15, a->decided_at_ms);
        return sq_exec_done(s);
}

int sqlite_approval_hold(struct state_store *st, const struct approval_record *a, const struct command_record *c)
{
        pthread_mutex_lock(&st->lock);
        int r = sq_begin(st);
        if (r == 0) {
                r = insert_locked(st, a);
                if (r == 0)
                        r = sqlite_command_insert_locked(st, c);
                if (r == 0)
                        r = sq_commit(st);
                else
                        sq_rollback(st);
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}

int sqlite_approval_get(struct state_store *st, const char *project_id, const char *id, struct approval_record *ret)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(
                st, "SELECT " STORE_APPROVAL_COLUMNS " FROM approvals WHERE id = ?1 AND (?2 IS NULL OR project_id = ?2)", &s);
        if (r == 0) {
                sq_bind_text(s, 1, id);
                if (project_id)
                        sq_bind_text(s, 2, project_id);
                r = sq_fetch_one(s, store_row_approval, ret);
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}

int sqlite_approval_list(struct state_store *st, const char *project_id, int state, const struct store_page *page,
                         struct approval_record **ret, size_t *ret_n)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st,
                           "SELECT " STORE_APPROVAL_COLUMNS
                           " FROM approvals WHERE (?1 IS NULL OR project_id = ?1)"
                           " AND (?2 IS NULL OR state = ?2) AND " SQ_PAGE_AFTER("created_at, id",
                                                                                ">") " ORDER BY created_at, id" SQ_PAGE_LIMIT,
                           &s);
        if (r == 0) {
                if (project_id)
                        sq_bind_text(s, 1, project_id);
                if (state >= 0)
                        sq_bind_text(s, 2, approval_state_name((enum approval_state)state));
                sq_bind_page(s, page);
                r = sq_collect(s, sizeof(struct approval_record), store_row_approval, store_release_approval, (void **)ret,
                               ret_n);
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}

int sqlite_approval_decide(struct state_store *st, const char *id, enum approval_state to, const char *decided_by,
                           const char *comment, int64_t at_ms)
{
        sqlite3_stmt *s;
        pthread_mutex_lock(&st->lock);
        int r = sq_prepare(st,
                           "UPDATE approvals SET state = ?2, decided_by = ?3, comment = ?4, decided_at = ?5"
                           " WHERE id = ?1 AND state = 'pending'",
                           &s);
        if (r == 0) {
                sq_bind_text(s, 1, id);
                sq_bind_text(s, 2, approval_state_name(to));
                sq_bind_text(s, 3, decided_by ? decided_by : "");
                sq_bind_text(s, 4, comment ? comment : "");
                sqlite3_bind_int64(s, 5, at_ms);
                r = sq_exec_done(s);
                if (r == 0 && sqlite3_changes(st->db) == 0) {
                        /* Which: no such approval, or one decided already. */
                        r = sq_prepare(st, "SELECT 1 FROM approvals WHERE id = ?1", &s);
                        if (r == 0) {
                                sq_bind_text(s, 1, id);
                                int rc = sqlite3_step(s);
                                r = rc == SQLITE_ROW ? -EALREADY : rc == SQLITE_DONE ? -ENOENT : sq_error(rc);
                                sqlite3_finalize(s);
                        }
                }
        }
        pthread_mutex_unlock(&st->lock);
        return r;
}
