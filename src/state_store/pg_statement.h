/* Internals of the PostgreSQL backend of state_store (libpq): the connection, statement
 * helpers and the functions of each area's file. Not for use outside src/state_store.
 *
 * A statement's parameters are collected in a struct pg_args in $1, $2, … order, all sent
 * as text; SQL casts where PostgreSQL cannot infer a type ($2::text IS NULL). Running a
 * statement consumes its pg_args (the text it owns is freed): fill a new one for each. */
#pragma once

#include <jansson.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "state_store/state_store.h"
#include "state_store/store_record_rows.h"

struct state_store {
        PGconn *conn;
        pthread_mutex_t lock;
        char conninfo[1024];
        bool power;   /* set_durability: re-applied after a reconnect */
        bool in_tx;   /* between pg_begin and pg_commit / pg_rollback */
        bool tx_lost; /* the connection broke inside that transaction: it can only fail */
};

/* pg_store.c: what a new (or re-made) connection needs before its first statement: the
 * durability. */
int pg_connection_setup(struct state_store *st);

#define PG_MAX_ARGS 32
struct pg_args {
        int n;
        const char *v[PG_MAX_ARGS];
        char *owned[PG_MAX_ARGS];
        char num[PG_MAX_ARGS][24];
};

void pg_text(struct pg_args *a, const char *v);     /* NULL is '' */
void pg_optional(struct pg_args *a, const char *v); /* NULL or '' is NULL */
void pg_nullable(struct pg_args *a, const char *v); /* NULL is NULL */
void pg_int(struct pg_args *a, int64_t v);
void pg_json(struct pg_args *a, const json_t *v);          /* NULL is '{}' */
void pg_json_or_empty(struct pg_args *a, const json_t *v); /* NULL is '' */
/* Three parameters for a page (after_ms, after_id or NULL, limit or NULL for all), in the
 * positions PG_PAGE_AFTER / PG_PAGE_LIMIT name. */
void pg_page(struct pg_args *a, const struct store_page *page);
#define PG_PAGE_AFTER(cols, cmp, ms, id) "($" id "::text IS NULL OR (" cols ") " cmp " ($" ms "::bigint, $" id "::text))"
#define PG_PAGE_AFTER_NAME(col, id) "($" id "::text IS NULL OR " col " > $" id "::text)"
#define PG_PAGE_LIMIT(n) " LIMIT $" n "::bigint"

/* Runs sql with a's parameters: 0 and, when ret is given, the result (PQclear it); -errno on
 * failure (-EEXIST on a uniqueness conflict, -EIO else). *ret_changed, when given, is the
 * number of rows the statement changed. The caller holds st->lock. */
int pg_exec(struct state_store *st, const char *sql, struct pg_args *a, PGresult **ret, int *ret_changed);
/* As pg_exec; -ENOENT when it changed no row. */
int pg_exec_one(struct state_store *st, const char *sql, struct pg_args *a);
/* Runs a query and decodes every row into a growing array (elements of elem_size), as
 * sq_collect does for SQLite. */
int pg_collect(struct state_store *st, const char *sql, struct pg_args *a, size_t elem_size, store_row_decode decode,
               void (*release_fn)(void *elem), void **ret, size_t *ret_n);
/* The first row into *elem; -ENOENT when there is none. */
int pg_fetch_one(struct state_store *st, const char *sql, struct pg_args *a, store_row_decode decode, void *elem);
/* As pg_collect / pg_fetch_one, taking and releasing st->lock. */
int pg_list(struct state_store *st, const char *sql, struct pg_args *a, size_t elem_size, store_row_decode decode,
            void (*release_fn)(void *elem), void **ret, size_t *ret_n);
int pg_get(struct state_store *st, const char *sql, struct pg_args *a, store_row_decode decode, void *elem);
/* A single statement taking and releasing st->lock; with must_change, -ENOENT when it
 * changed no row. */
int pg_write(struct state_store *st, const char *sql, struct pg_args *a, bool must_change);
/* An integer result of one row and column (COUNT, EXISTS as 0/1). */
int pg_query_int(struct state_store *st, const char *sql, struct pg_args *a, int64_t *ret);

int pg_begin(struct state_store *st);
int pg_commit(struct state_store *st);
void pg_rollback(struct state_store *st);
int64_t pg_now_ms(void);

/* pg_migrations.c */
int pg_migrations_apply(PGconn *conn, int *ret_version);
int pg_migrations_apply_upto(PGconn *conn, int target, int *ret_version);

/* pg_sandboxes.c */
int pg_sandbox_insert(struct state_store *st, const struct sandbox *sb, const struct operation *op);
int pg_insert_batch(struct state_store *st, const struct sandbox *sbs, size_t nsb, const struct snapshot *snaps, size_t nsnap,
                    const struct operation *op);
int pg_sandbox_get(struct state_store *st, const char *id, struct sandbox *ret);
int pg_sandbox_list(struct state_store *st, int state_filter, const char *project_id, const struct store_page *page,
                    struct sandbox **ret, size_t *ret_n);
int pg_sandbox_transition(struct state_store *st, const char *id, unsigned from_mask, enum sandbox_state to, const char *reason,
                          const struct operation *op, enum sandbox_state *ret_current);
int pg_sandbox_settle(struct state_store *st, const char *id, const struct sandbox_settlement *s,
                      enum sandbox_state *ret_current);
int pg_sandbox_set_runtime(struct state_store *st, const char *id, const char *runtime_state);
int pg_sandbox_set_expiry(struct state_store *st, const char *id, int64_t expires_at_ms);
int pg_sandbox_set_head(struct state_store *st, const char *id, const char *snapshot_id);
int pg_sandbox_set_settings(struct state_store *st, const struct sandbox *sb, bool set_expiry);
int pg_sandbox_set_network(struct state_store *st, const char *id, const json_t *network);

/* pg_operations.c */
int pg_operation_insert_locked(struct state_store *st, const struct operation *op);
int pg_operation_insert(struct state_store *st, const struct operation *op);
int pg_operation_update(struct state_store *st, const struct operation *op);
int pg_operation_get(struct state_store *st, const char *id, struct operation *ret);
int pg_operation_list(struct state_store *st, const char *target, int state, bool unfinished_only, const char *project_id,
                      const struct store_page *page, struct operation **ret, size_t *ret_n);
int pg_operation_refers(struct state_store *st, const char *id, bool *ret);

/* pg_snapshots.c */
int pg_snapshot_insert_locked(struct state_store *st, const struct snapshot *snap);
int pg_snapshot_get(struct state_store *st, const char *id, struct snapshot *ret);
int pg_snapshot_list(struct state_store *st, const char *sandbox_id, const char *project_id, const struct store_page *page,
                     struct snapshot **ret, size_t *ret_n);
int pg_snapshot_update(struct state_store *st, const struct snapshot *snap);
int pg_snapshot_delete(struct state_store *st, const char *id, bool if_unused, char *ret_user);

/* pg_retention.c */
int pg_sandbox_purge_destroyed(struct state_store *st, int64_t before_ms, int limit, int *ret_n);
int pg_operation_purge_finished(struct state_store *st, int64_t before_ms, int limit, int *ret_n);

/* pg_catalog.c: templates, API keys, projects */
int pg_template_upsert(struct state_store *st, const struct template_record *t);
int pg_template_get(struct state_store *st, const char *name, struct template_record *ret);
int pg_template_list(struct state_store *st, const char *project_id, const struct store_page *page, struct template_record **ret,
                     size_t *ret_n);
int pg_template_delete(struct state_store *st, const char *name);
int pg_key_insert(struct state_store *st, const struct api_key *k);
int pg_key_list(struct state_store *st, const char *project_id, const struct store_page *page, struct api_key **ret,
                size_t *ret_n);
int pg_key_get(struct state_store *st, const char *id, struct api_key *ret);
int pg_key_delete(struct state_store *st, const char *id, int64_t now_ms);
int pg_key_authenticate(struct state_store *st, const char *hash, struct api_key *ret);
int pg_key_count(struct state_store *st, int64_t *ret);
int pg_project_insert(struct state_store *st, const struct project *p);
int pg_project_get(struct state_store *st, const char *id, struct project *ret);
int pg_project_list(struct state_store *st, const char *project_id, const struct store_page *page, struct project **ret,
                    size_t *ret_n);

/* pg_data_plane.c: attach sessions and commands */
int pg_session_insert(struct state_store *st, const struct attach_session *s);
int pg_session_get(struct state_store *st, const char *id, struct attach_session *ret);
int pg_session_find_by_hash(struct state_store *st, const char *hash, struct attach_session *ret);
int pg_session_list(struct state_store *st, const char *sandbox_id, const struct store_page *page, struct attach_session **ret,
                    size_t *ret_n);
int pg_session_update(struct state_store *st, const struct attach_session *s);
int pg_command_insert(struct state_store *st, const struct command_record *c);
/* The caller holds st->lock (inside a transaction of its own). */
int pg_command_insert_locked(struct state_store *st, const struct command_record *c);
int pg_command_update(struct state_store *st, const struct command_record *c);
int pg_command_delete(struct state_store *st, const char *sandbox_id, const char *id);
int pg_command_get(struct state_store *st, const char *sandbox_id, const char *id, struct command_record *ret);
int pg_command_list(struct state_store *st, const char *sandbox_id, bool unfinished_only, const struct store_page *page,
                    struct command_record **ret, size_t *ret_n);

/* pg_audit.c: the audit log, the health probe and the tallies */
int pg_audit_insert(struct state_store *st, const struct audit_record *a);
int pg_audit_list(struct state_store *st, const struct audit_filter *f, const struct store_page *page, struct audit_record **ret,
                  size_t *ret_n);
int pg_audit_purge(struct state_store *st, int64_t before_ms, int limit, int *ret_n);
int pg_probe_write(struct state_store *st, int64_t now_ms);
int pg_sandbox_tally(struct state_store *st, struct store_tally **ret, size_t *ret_n);
int pg_operation_tally(struct state_store *st, struct store_tally **ret, size_t *ret_n);

/* pg_secrets.c: secrets and credential bindings */
int pg_secret_data_key(struct state_store *st, const char *project_id, const char *candidate, char **ret);
int pg_secret_insert(struct state_store *st, const struct secret_record *s);
int pg_secret_get(struct state_store *st, const char *project_id, const char *name, struct secret_record *ret);
int pg_secret_list(struct state_store *st, const char *project_id, struct secret_record **ret, size_t *ret_n);
int pg_secret_delete(struct state_store *st, const char *project_id, const char *name);
int pg_binding_insert(struct state_store *st, const struct binding_record *b);
int pg_binding_list(struct state_store *st, const char *project_id, const char *sandbox_id, struct binding_record **ret,
                    size_t *ret_n);
int pg_binding_delete(struct state_store *st, const char *project_id, const char *id);

/* pg_policies.c: policy documents */
int pg_policy_insert(struct state_store *st, const struct policy_record *p);
int pg_policy_get(struct state_store *st, const char *project_id, const char *id, struct policy_record *ret);
int pg_policy_list(struct state_store *st, const char *project_id, struct policy_record **ret, size_t *ret_n);
int pg_policy_update(struct state_store *st, const struct policy_record *p);
int pg_policy_delete(struct state_store *st, const char *project_id, const char *id);

/* pg_fleet.c: nodes and claims */
int pg_node_register(struct state_store *st, const struct node_record *n);
int pg_node_heartbeat(struct state_store *st, const char *id, int64_t now_ms);
int pg_node_list(struct state_store *st, struct node_record **ret, size_t *ret_n);
int pg_node_mark_lost(struct state_store *st, int64_t before_ms, int *ret_n);
int pg_operation_claim(struct state_store *st, const char *owner, const char *id, int64_t live_after_ms, int64_t now_ms,
                       struct operation *ret);

/* pg_approvals.c */
int pg_approval_hold(struct state_store *st, const struct approval_record *a, const struct command_record *c);
int pg_approval_get(struct state_store *st, const char *project_id, const char *id, struct approval_record *ret);
int pg_approval_list(struct state_store *st, const char *project_id, int state, const struct store_page *page,
                     struct approval_record **ret, size_t *ret_n);
int pg_approval_decide(struct state_store *st, const char *id, enum approval_state to, const char *decided_by,
                       const char *comment, int64_t at_ms);
