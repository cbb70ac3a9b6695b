/* Internals of the SQLite backend of state_store, shared by sqlite_store.c and
 * sqlite_catalog.c. Not for use outside src/state_store. */
#pragma once

#include <jansson.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>

#include "state_store/state_store.h"
#include "state_store/store_record_rows.h"

struct state_store {
        sqlite3 *db;
        pthread_mutex_t lock;
};

int64_t sq_now_ms(void);
int sq_error(int rc);
int sq_prepare(struct state_store *st, const char *sql, sqlite3_stmt **ret);
void sq_bind_text(sqlite3_stmt *s, int i, const char *v);
void sq_bind_json(sqlite3_stmt *s, int i, const json_t *v);
void sq_copy_col(sqlite3_stmt *s, int i, char *dst, size_t size);
int sq_exec_done(sqlite3_stmt *s);
/* Steps a prepared statement to the end, filling a growing array with one element per row
 * (decode reads a row into an element; release_fn, if any, frees one). Finalizes the
 * statement. On failure frees what it had and leaves *ret untouched. */
int sq_collect(sqlite3_stmt *s, size_t elem_size, store_row_decode decode, void (*release_fn)(void *elem), void **ret,
               size_t *ret_n);
/* Steps s once: a row is read into *elem with decode (0), no row gives -ENOENT. Finalizes s. */
int sq_fetch_one(sqlite3_stmt *s, store_row_decode decode, void *elem);
/* Decodes the row s is on (store_record_rows.h). */
void sq_decode(sqlite3_stmt *s, store_row_decode decode, void *elem);
int sq_begin(struct state_store *st);
int sq_commit(struct state_store *st);
void sq_rollback(struct state_store *st);

/* Paging in SQL: a list statement puts SQ_PAGE_AFTER(order columns) in its WHERE and
 * SQ_PAGE_LIMIT at its end, and sq_bind_page() binds parameters ?61-?63 (page NULL: all). */
#define SQ_PAGE_AFTER(cols, cmp) "(?62 IS NULL OR (" cols ") " cmp " (?61, ?62))"
#define SQ_PAGE_AFTER_NAME(col) "(?62 IS NULL OR " col " > ?62)"
#define SQ_PAGE_LIMIT " LIMIT ?63"
void sq_bind_page(sqlite3_stmt *s, const struct store_page *page);

/* sqlite_catalog.c: templates and API keys */
int sqlite_template_upsert(struct state_store *st, const struct template_record *t);
int sqlite_template_get(struct state_store *st, const char *name, struct template_record *ret);
int sqlite_template_list(struct state_store *st, const char *project_id, const struct store_page *page,
                         struct template_record **ret, size_t *ret_n);
int sqlite_template_delete(struct state_store *st, const char *name);
int sqlite_key_insert(struct state_store *st, const struct api_key *k);
int sqlite_key_list(struct state_store *st, const char *project_id, const struct store_page *page, struct api_key **ret,
                    size_t *ret_n);
int sqlite_key_get(struct state_store *st, const char *id, struct api_key *ret);
int sqlite_key_delete(struct state_store *st, const char *id, int64_t now_ms);
int sqlite_key_authenticate(struct state_store *st, const char *hash, struct api_key *ret);
int sqlite_key_count(struct state_store *st, int64_t *ret);

/* sqlite_projects.c */
int sqlite_project_insert(struct state_store *st, const struct project *p);
int sqlite_project_get(struct state_store *st, const char *id, struct project *ret);
int sqlite_probe_write(struct state_store *st, int64_t now_ms);
int sqlite_sandbox_tally(struct state_store *st, struct store_tally **ret, size_t *ret_n);
int sqlite_operation_tally(struct state_store *st, struct store_tally **ret, size_t *ret_n);
int sqlite_project_list(struct state_store *st, const char *project_id, const struct store_page *page, struct project **ret,
                        size_t *ret_n);

/* sqlite_snapshots.c */
int sq_snapshot_insert_locked(struct state_store *st, const struct snapshot *snap);
int sqlite_snapshot_get(struct state_store *st, const char *id, struct snapshot *ret);
int sqlite_snapshot_list(struct state_store *st, const char *sandbox_id, const char *project_id, const struct store_page *page,
                         struct snapshot **ret, size_t *ret_n);
int sqlite_snapshot_update(struct state_store *st, const struct snapshot *snap);
int sqlite_sandbox_purge_destroyed(struct state_store *st, int64_t before_ms, int limit, int *ret_n);
int sqlite_operation_purge_finished(struct state_store *st, int64_t before_ms, int limit, int *ret_n);
int sqlite_snapshot_delete(struct state_store *st, const char *id, bool if_unused, char *ret_user);

/* sqlite_data_plane.c: attach sessions and commands */
int sqlite_session_insert(struct state_store *st, const struct attach_session *s);
int sqlite_session_get(struct state_store *st, const char *id, struct attach_session *ret);
int sqlite_session_find_by_hash(struct state_store *st, const char *hash, struct attach_session *ret);
int sqlite_session_list(struct state_store *st, const char *sandbox_id, const struct store_page *page,
                        struct attach_session **ret, size_t *ret_n);
int sqlite_session_update(struct state_store *st, const struct attach_session *s);
int sqlite_command_insert(struct state_store *st, const struct command_record *c);
/* The caller holds st->lock (inside a transaction of its own). */
int sqlite_command_insert_locked(struct state_store *st, const struct command_record *c);
int sqlite_command_update(struct state_store *st, const struct command_record *c);
int sqlite_command_delete(struct state_store *st, const char *sandbox_id, const char *id);
int sqlite_command_get(struct state_store *st, const char *sandbox_id, const char *id, struct command_record *ret);
int sqlite_command_list(struct state_store *st, const char *sandbox_id, bool unfinished_only, const struct store_page *page,
                        struct command_record **ret, size_t *ret_n);

/* sqlite_audit.c: the audit log */
int sqlite_audit_insert(struct state_store *st, const struct audit_record *a);
int sqlite_audit_list(struct state_store *st, const struct audit_filter *f, const struct store_page *page,
                      struct audit_record **ret, size_t *ret_n);
int sqlite_audit_purge(struct state_store *st, int64_t before_ms, int limit, int *ret_n);

/* sqlite_secrets.c: secrets and credential bindings */
int sqlite_secret_data_key(struct state_store *st, const char *project_id, const char *candidate, char **ret);
int sqlite_secret_insert(struct state_store *st, const struct secret_record *s);
int sqlite_secret_get(struct state_store *st, const char *project_id, const char *name, struct secret_record *ret);
int sqlite_secret_list(struct state_store *st, const char *project_id, struct secret_record **ret, size_t *ret_n);
int sqlite_secret_delete(struct state_store *st, const char *project_id, const char *name);
int sqlite_binding_insert(struct state_store *st, const struct binding_record *b);
int sqlite_binding_list(struct state_store *st, const char *project_id, const char *sandbox_id, struct binding_record **ret,
                        size_t *ret_n);
int sqlite_binding_delete(struct state_store *st, const char *project_id, const char *id);

/* sqlite_policies.c: policy documents */
int sqlite_policy_insert(struct state_store *st, const struct policy_record *p);
int sqlite_policy_get(struct state_store *st, const char *project_id, const char *id, struct policy_record *ret);
int sqlite_policy_list(struct state_store *st, const char *project_id, struct policy_record **ret, size_t *ret_n);
int sqlite_policy_update(struct state_store *st, const struct policy_record *p);
int sqlite_policy_delete(struct state_store *st, const char *project_id, const char *id);

/* sqlite_fleet.c: nodes and claims */
int sqlite_node_register(struct state_store *st, const struct node_record *n);
int sqlite_node_heartbeat(struct state_store *st, const char *id, int64_t now_ms);
int sqlite_node_list(struct state_store *st, struct node_record **ret, size_t *ret_n);
int sqlite_node_mark_lost(struct state_store *st, int64_t before_ms, int *ret_n);
int sqlite_operation_claim(struct state_store *st, const char *owner, const char *id, int64_t live_after_ms, int64_t now_ms,
                           struct operation *ret);

/* sqlite_approvals.c */
int sqlite_approval_hold(struct state_store *st, const struct approval_record *a, const struct command_record *c);
int sqlite_approval_get(struct state_store *st, const char *project_id, const char *id, struct approval_record *ret);
int sqlite_approval_list(struct state_store *st, const char *project_id, int state, const struct store_page *page,
                         struct approval_record **ret, size_t *ret_n);
int sqlite_approval_decide(struct state_store *st, const char *id, enum approval_state to, const char *decided_by,
                           const char *comment, int64_t at_ms);
