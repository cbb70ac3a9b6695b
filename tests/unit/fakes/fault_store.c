#include "fault_store.h"

#include <errno.h>
#include <stdlib.h>

struct fault_store {
        struct state_handle inner;
        struct fault_plan *plan;
        int64_t age_ms;
};

#define WRITE true
#define READ false
#define FS(st) ((struct fault_store *)(st))

/* What a call the plan stopped returns: -EIO; after a crash a write is lost (success) and
 * a read finds nothing (-ENOENT, which no caller retries: a dead process waits for nothing). */
static int verdict_result(enum fault_verdict v, bool write)
{
        if (v == FAULT_VANISH)
                return write ? 0 : -ENOENT;
        return -EIO;
}

/* The body of a wrapper: ask the plan, then call the inner store's op of the same name. */
#define FORWARD(name, write, ...)                                                     \
        enum fault_verdict v = fault_plan_check(FS(st)->plan, "store", #name, write); \
        if (v != FAULT_PASS)                                                          \
                return verdict_result(v, write);                                      \
        return FS(st)->inner.ops->name(FS(st)->inner.st, __VA_ARGS__)

/* A purge: as FORWARD, and a stopped one purged nothing. */
#define FORWARD_PURGE(name, ...)                                                      \
        enum fault_verdict v = fault_plan_check(FS(st)->plan, "store", #name, WRITE); \
        *ret_n = 0;                                                                   \
        if (v != FAULT_PASS)                                                          \
                return verdict_result(v, WRITE);                                      \
        return FS(st)->inner.ops->name(FS(st)->inner.st, __VA_ARGS__)

int fault_store_wrap(struct state_handle inner, struct fault_plan *plan, struct state_handle *ret)
{
        struct fault_store *fs = calloc(1, sizeof(*fs));
        if (!fs)
                return -ENOMEM;
        fs->inner = inner;
        fs->plan = plan;
        *ret = (struct state_handle){ .ops = &fault_store_ops, .st = (struct state_store *)fs };
        return 0;
}

struct state_handle fault_store_inner(struct state_store *st)
{
        return FS(st)->inner;
}

void fault_store_set_age(struct state_store *st, int64_t age_ms)
{
        FS(st)->age_ms = age_ms;
}

/* Opened by location, it wraps the SQLite backend with no plan. */
static int fs_open(const char *location, struct state_store **ret)
{
        struct state_handle inner = { .ops = &state_store_sqlite }, h;
        int r = inner.ops->open(location, &inner.st);
        if (r < 0)
                return r;
        r = fault_store_wrap(inner, NULL, &h);
        if (r < 0) {
                inner.ops->close(inner.st);
                return r;
        }
        *ret = h.st;
        return 0;
}

static void fs_close(struct state_store *st)
{
        if (!st)
                return;
        FS(st)->inner.ops->close(FS(st)->inner.st);
        free(st);
}

static int fs_sandbox_get(struct state_store *st, const char *id, struct sandbox *ret)
{
        enum fault_verdict v = fault_plan_check(FS(st)->plan, "store", "sandbox_get", READ);
        if (v != FAULT_PASS)
                return verdict_result(v, READ);
        int r = FS(st)->inner.ops->sandbox_get(FS(st)->inner.st, id, ret);
        if (r == 0)
                ret->updated_at_ms -= FS(st)->age_ms;
        return r;
}

static int fs_sandbox_list(struct state_store *st, int state_filter, const char *project_id, const struct store_page *page,
                           struct sandbox **ret, size_t *ret_n)
{
        enum fault_verdict v = fault_plan_check(FS(st)->plan, "store", "sandbox_list", READ);
        if (v != FAULT_PASS)
                return verdict_result(v, READ);
        int r = FS(st)->inner.ops->sandbox_list(FS(st)->inner.st, state_filter, project_id, page, ret, ret_n);
        for (size_t i = 0; r == 0 && i < *ret_n; i++)
                (*ret)[i].updated_at_ms -= FS(st)->age_ms;
        return r;
}

static int fs_snapshot_get(struct state_store *st, const char *id, struct snapshot *ret)
{
        enum fault_verdict v = fault_plan_check(FS(st)->plan, "store", "snapshot_get", READ);
        if (v != FAULT_PASS)
                return verdict_result(v, READ);
        int r = FS(st)->inner.ops->snapshot_get(FS(st)->inner.st, id, ret);
        if (r == 0)
                ret->created_at_ms -= FS(st)->age_ms;
        return r;
}

static int fs_snapshot_list(struct state_store *st, const char *sandbox_id, const char *project_id, const struct store_page *page,
                            struct snapshot **ret, size_t *ret_n)
{
        enum fault_verdict v = fault_plan_check(FS(st)->plan, "store", "snapshot_list", READ);
        if (v != FAULT_PASS)
                return verdict_result(v, READ);
        int r = FS(st)->inner.ops->snapshot_list(FS(st)->inner.st, sandbox_id, project_id, page, ret, ret_n);
        for (size_t i = 0; r == 0 && i < *ret_n; i++)
                (*ret)[i].created_at_ms -= FS(st)->age_ms;
        return r;
}

static int fs_sandbox_purge_destroyed(struct state_store *st, int64_t before_ms, int limit, int *ret_n)
{
        FORWARD_PURGE(sandbox_purge_destroyed, before_ms, limit, ret_n);
}

static int fs_operation_purge_finished(struct state_store *st, int64_t before_ms, int limit, int *ret_n)
{
        FORWARD_PURGE(operation_purge_finished, before_ms, limit, ret_n);
}

static int fs_audit_purge(struct state_store *st, int64_t before_ms, int limit, int *ret_n)
{
        FORWARD_PURGE(audit_purge, before_ms, limit, ret_n);
}

static int fs_set_durability(struct state_store *st, bool power)
{
        FORWARD(set_durability, WRITE, power);
}

static int fs_sandbox_insert(struct state_store *st, const struct sandbox *sb, const struct operation *op)
{
        FORWARD(sandbox_insert, WRITE, sb, op);
}

static int fs_insert_batch(struct state_store *st, const struct sandbox *sbs, size_t nsb, const struct snapshot *snaps,
                           size_t nsnap, const struct operation *op)
{
        FORWARD(insert_batch, WRITE, sbs, nsb, snaps, nsnap, op);
}

static int fs_sandbox_transition(struct state_store *st, const char *id, unsigned from_mask, enum sandbox_state to,
                                 const char *reason, const struct operation *op, enum sandbox_state *ret_current)
{
        FORWARD(sandbox_transition, WRITE, id, from_mask, to, reason, op, ret_current);
}

static int fs_sandbox_settle(struct state_store *st, const char *id, const struct sandbox_settlement *s,
                             enum sandbox_state *ret_current)
{
        FORWARD(sandbox_settle, WRITE, id, s, ret_current);
}

static int fs_sandbox_set_runtime(struct state_store *st, const char *id, const char *runtime_state)
{
        FORWARD(sandbox_set_runtime, WRITE, id, runtime_state);
}

static int fs_sandbox_set_expiry(struct state_store *st, const char *id, int64_t expires_at_ms)
{
        FORWARD(sandbox_set_expiry, WRITE, id, expires_at_ms);
}

static int fs_sandbox_set_head(struct state_store *st, const char *id, const char *snapshot_id)
{
        FORWARD(sandbox_set_head, WRITE, id, snapshot_id);
}

static int fs_sandbox_set_network(struct state_store *st, const char *id, const json_t *network)
{
        FORWARD(sandbox_set_network, WRITE, id, network);
}

static int fs_sandbox_set_settings(struct state_store *st, const struct sandbox *sb, bool set_expiry)
{
        FORWARD(sandbox_set_settings, WRITE, sb, set_expiry);
}

static int fs_snapshot_update(struct state_store *st, const struct snapshot *snap)
{
        FORWARD(snapshot_update, WRITE, snap);
}

static int fs_snapshot_delete(struct state_store *st, const char *id, bool if_unused, char *ret_user)
{
        FORWARD(snapshot_delete, WRITE, id, if_unused, ret_user);
}

static int fs_operation_insert(struct state_store *st, const struct operation *op)
{
        FORWARD(operation_insert, WRITE, op);
}

static int fs_operation_update(struct state_store *st, const struct operation *op)
{
        FORWARD(operation_update, WRITE, op);
}

static int fs_operation_get(struct state_store *st, const char *id, struct operation *ret)
{
        FORWARD(operation_get, READ, id, ret);
}

static int fs_operation_list(struct state_store *st, const char *target, int state, bool unfinished_only, const char *project_id,
                             const struct store_page *page, struct operation **ret, size_t *ret_n)
{
        FORWARD(operation_list, READ, target, state, unfinished_only, project_id, page, ret, ret_n);
}

static int fs_operation_refers(struct state_store *st, const char *id, bool *ret)
{
        FORWARD(operation_refers, READ, id, ret);
}

static int fs_template_upsert(struct state_store *st, const struct template_record *t)
{
        FORWARD(template_upsert, WRITE, t);
}

static int fs_template_get(struct state_store *st, const char *name, struct template_record *ret)
{
        FORWARD(template_get, READ, name, ret);
}

static int fs_template_list(struct state_store *st, const char *project_id, const struct store_page *page,
                            struct template_record **ret, size_t *ret_n)
{
        FORWARD(template_list, READ, project_id, page, ret, ret_n);
}

static int fs_template_delete(struct state_store *st, const char *name)
{
        FORWARD(template_delete, WRITE, name);
}

static int fs_key_insert(struct state_store *st, const struct api_key *k)
{
        FORWARD(key_insert, WRITE, k);
}

static int fs_key_list(struct state_store *st, const char *project_id, const struct store_page *page, struct api_key **ret,
                       size_t *ret_n)
{
        FORWARD(key_list, READ, project_id, page, ret, ret_n);
}

static int fs_key_get(struct state_store *st, const char *id, struct api_key *ret)
{
        FORWARD(key_get, READ, id, ret);
}

static int fs_key_delete(struct state_store *st, const char *id, int64_t now_ms)
{
        FORWARD(key_delete, WRITE, id, now_ms);
}

static int fs_key_authenticate(struct state_store *st, const char *hash, struct api_key *ret)
{
        FORWARD(key_authenticate, WRITE, hash, ret);
}

static int fs_key_count(struct state_store *st, int64_t *ret)
{
        FORWARD(key_count, READ, ret);
}

static int fs_project_insert(struct state_store *st, const struct project *p)
{
        FORWARD(project_insert, WRITE, p);
}

static int fs_project_get(struct state_store *st, const char *id, struct project *ret)
{
        FORWARD(project_get, READ, id, ret);
}

static int fs_project_list(struct state_store *st, const char *project_id, const struct store_page *page, struct project **ret,
                           size_t *ret_n)
{
        FORWARD(project_list, READ, project_id, page, ret, ret_n);
}

static int fs_probe_write(struct state_store *st, int64_t now_ms)
{
        FORWARD(probe_write, WRITE, now_ms);
}

static int fs_sandbox_tally(struct state_store *st, struct store_tally **ret, size_t *ret_n)
{
        FORWARD(sandbox_tally, READ, ret, ret_n);
}

static int fs_operation_tally(struct state_store *st, struct store_tally **ret, size_t *ret_n)
{
        FORWARD(operation_tally, READ, ret, ret_n);
}

static int fs_session_insert(struct state_store *st, const struct attach_session *s)
{
        FORWARD(session_insert, WRITE, s);
}

static int fs_session_get(struct state_store *st, const char *id, struct attach_session *ret)
{
        FORWARD(session_get, READ, id, ret);
}

static int fs_session_find_by_hash(struct state_store *st, const char *hash, struct attach_session *ret)
{
        FORWARD(session_find_by_hash, READ, hash, ret);
}

static int fs_session_list(struct state_store *st, const char *sandbox_id, const struct store_page *page,
                           struct attach_session **ret, size_t *ret_n)
{
        FORWARD(session_list, READ, sandbox_id, page, ret, ret_n);
}

static int fs_session_update(struct state_store *st, const struct attach_session *s)
{
        FORWARD(session_update, WRITE, s);
}

static int fs_command_insert(struct state_store *st, const struct command_record *c)
{
        FORWARD(command_insert, WRITE, c);
}

static int fs_command_update(struct state_store *st, const struct command_record *c)
{
        FORWARD(command_update, WRITE, c);
}

static int fs_command_get(struct state_store *st, const char *sandbox_id, const char *id, struct command_record *ret)
{
        FORWARD(command_get, READ, sandbox_id, id, ret);
}

static int fs_command_delete(struct state_store *st, const char *sandbox_id, const char *id)
{
        FORWARD(command_delete, WRITE, sandbox_id, id);
}

static int fs_command_list(struct state_store *st, const char *sandbox_id, bool unfinished_only, const struct store_page *page,
                           struct command_record **ret, size_t *ret_n)
{
        FORWARD(command_list, READ, sandbox_id, unfinished_only, page, ret, ret_n);
}

static int fs_audit_insert(struct state_store *st, const struct audit_record *a)
{
        FORWARD(audit_insert, WRITE, a);
}

static int fs_audit_list(struct state_store *st, const struct audit_filter *f, const struct store_page *page,
                         struct audit_record **ret, size_t *ret_n)
{
        FORWARD(audit_list, READ, f, page, ret, ret_n);
}

static int fs_policy_insert(struct state_store *st, const struct policy_record *p)
{
        FORWARD(policy_insert, WRITE, p);
}

static int fs_policy_get(struct state_store *st, const char *project_id, const char *id, struct policy_record *ret)
{
        FORWARD(policy_get, READ, project_id, id, ret);
}

static int fs_policy_list(struct state_store *st, const char *project_id, struct policy_record **ret, size_t *ret_n)
{
        FORWARD(policy_list, READ, project_id, ret, ret_n);
}

static int fs_policy_update(struct state_store *st, const struct policy_record *p)
{
        FORWARD(policy_update, WRITE, p);
}

static int fs_policy_delete(struct state_store *st, const char *project_id, const char *id)
{
        FORWARD(policy_delete, WRITE, project_id, id);
}

static int fs_approval_hold(struct state_store *st, const struct approval_record *a, const struct command_record *c)
{
        FORWARD(approval_hold, WRITE, a, c);
}

static int fs_approval_get(struct state_store *st, const char *project_id, const char *id, struct approval_record *ret)
{
        FORWARD(approval_get, READ, project_id, id, ret);
}

static int fs_approval_list(struct state_store *st, const char *project_id, int state, const struct store_page *page,
                            struct approval_record **ret, size_t *ret_n)
{
        FORWARD(approval_list, READ, project_id, state, page, ret, ret_n);
}

static int fs_approval_decide(struct state_store *st, const char *id, enum approval_state to, const char *decided_by,
                              const char *comment, int64_t at_ms)
{
        FORWARD(approval_decide, WRITE, id, to, decided_by, comment, at_ms);
}

static int fs_node_register(struct state_store *st, const struct node_record *n)
{
        FORWARD(node_register, WRITE, n);
}

static int fs_node_heartbeat(struct state_store *st, const char *id, int64_t now_ms)
{
        FORWARD(node_heartbeat, WRITE, id, now_ms);
}

static int fs_node_list(struct state_store *st, struct node_record **ret, size_t *ret_n)
{
        FORWARD(node_list, READ, ret, ret_n);
}

static int fs_node_mark_lost(struct state_store *st, int64_t before_ms, int *ret_n)
{
        FORWARD(node_mark_lost, WRITE, before_ms, ret_n);
}

static int fs_operation_claim(struct state_store *st, const char *owner, const char *id, int64_t live_after_ms, int64_t now_ms,
                              struct operation *ret)
{
        FORWARD(operation_claim, WRITE, owner, id, live_after_ms, now_ms, ret);
}

static int fs_secret_data_key(struct state_store *st, const char *project_id, const char *candidate, char **ret)
{
        FORWARD(secret_data_key, WRITE, project_id, candidate, ret);
}

static int fs_secret_insert(struct state_store *st, const struct secret_record *s)
{
        FORWARD(secret_insert, WRITE, s);
}

static int fs_secret_get(struct state_store *st, const char *project_id, const char *name, struct secret_record *ret)
{
        FORWARD(secret_get, READ, project_id, name, ret);
}

static int fs_secret_list(struct state_store *st, const char *project_id, struct secret_record **ret, size_t *ret_n)
{
        FORWARD(secret_list, READ, project_id, ret, ret_n);
}

static int fs_secret_delete(struct state_store *st, const char *project_id, const char *name)
{
        FORWARD(secret_delete, WRITE, project_id, name);
}

static int fs_binding_insert(struct state_store *st, const struct binding_record *b)
{
        FORWARD(binding_insert, WRITE, b);
}

static int fs_binding_list(struct state_store *st, const char *project_id, const char *sandbox_id, struct binding_record **ret,
                           size_t *ret_n)
{
        FORWARD(binding_list, READ, project_id, sandbox_id, ret, ret_n);
}

static int fs_binding_delete(struct state_store *st, const char *project_id, const char *id)
{
        FORWARD(binding_delete, WRITE, project_id, id);
}

const struct state_store_ops fault_store_ops = {
        .name = "fault",
        .open = fs_open,
        .close = fs_close,
        .set_durability = fs_set_durability,
        .sandbox_insert = fs_sandbox_insert,
        .insert_batch = fs_insert_batch,
        .sandbox_get = fs_sandbox_get,
        .sandbox_list = fs_sandbox_list,
        .sandbox_transition = fs_sandbox_transition,
        .sandbox_settle = fs_sandbox_settle,
        .sandbox_set_runtime = fs_sandbox_set_runtime,
        .sandbox_purge_destroyed = fs_sandbox_purge_destroyed,
        .sandbox_set_expiry = fs_sandbox_set_expiry,
        .sandbox_set_head = fs_sandbox_set_head,
        .sandbox_set_settings = fs_sandbox_set_settings,
        .sandbox_set_network = fs_sandbox_set_network,
        .snapshot_get = fs_snapshot_get,
        .snapshot_list = fs_snapshot_list,
        .snapshot_update = fs_snapshot_update,
        .snapshot_delete = fs_snapshot_delete,
        .operation_insert = fs_operation_insert,
        .operation_update = fs_operation_update,
        .operation_get = fs_operation_get,
        .operation_list = fs_operation_list,
        .operation_purge_finished = fs_operation_purge_finished,
        .operation_refers = fs_operation_refers,
        .template_upsert = fs_template_upsert,
        .template_get = fs_template_get,
        .template_list = fs_template_list,
        .template_delete = fs_template_delete,
        .key_insert = fs_key_insert,
        .key_list = fs_key_list,
        .key_get = fs_key_get,
        .key_delete = fs_key_delete,
        .key_authenticate = fs_key_authenticate,
        .key_count = fs_key_count,
        .project_insert = fs_project_insert,
        .project_get = fs_project_get,
        .project_list = fs_project_list,
        .session_insert = fs_session_insert,
        .session_get = fs_session_get,
        .session_find_by_hash = fs_session_find_by_hash,
        .session_list = fs_session_list,
        .session_update = fs_session_update,
        .command_insert = fs_command_insert,
        .command_update = fs_command_update,
        .command_get = fs_command_get,
        .command_delete = fs_command_delete,
        .command_list = fs_command_list,
        .audit_insert = fs_audit_insert,
        .audit_list = fs_audit_list,
        .audit_purge = fs_audit_purge,
        .probe_write = fs_probe_write,
        .sandbox_tally = fs_sandbox_tally,
        .operation_tally = fs_operation_tally,
        .policy_insert = fs_policy_insert,
        .policy_get = fs_policy_get,
        .policy_list = fs_policy_list,
        .policy_update = fs_policy_update,
        .policy_delete = fs_policy_delete,
        .approval_hold = fs_approval_hold,
        .approval_get = fs_approval_get,
        .approval_list = fs_approval_list,
        .approval_decide = fs_approval_decide,
        .node_register = fs_node_register,
        .node_heartbeat = fs_node_heartbeat,
        .node_list = fs_node_list,
        .node_mark_lost = fs_node_mark_lost,
        .operation_claim = fs_operation_claim,
        .secret_data_key = fs_secret_data_key,
        .secret_insert = fs_secret_insert,
        .secret_get = fs_secret_get,
        .secret_list = fs_secret_list,
        .secret_delete = fs_secret_delete,
        .binding_insert = fs_binding_insert,
        .binding_list = fs_binding_list,
        .binding_delete = fs_binding_delete,
};

/* Every member of the table is forwarded: a verb added to struct state_store_ops fails the
 * build here until it is (a NULL entry would crash only the test that reaches it). */
_Static_assert(sizeof(struct state_store_ops) == 77 * sizeof(void *), "fault_store: forward the new state_store_ops verb");
