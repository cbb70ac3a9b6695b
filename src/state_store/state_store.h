/* state_store: durable records of sandboxes, operations, templates and API keys.
 * A const table of functions per backend (sqlite now, postgres later). Functions return 0
 * or -errno: -ENOENT unknown id, -EEXIST duplicate, -ESTALE when a compare-and-set
 * transition finds another state (the current state is then returned). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum sandbox_state {
        SANDBOX_CREATING = 0,
        SANDBOX_RUNNING,
        SANDBOX_PAUSED,
        SANDBOX_STOPPING,
        SANDBOX_STOPPED,
        SANDBOX_STARTING,
        SANDBOX_DESTROYING,
        SANDBOX_DESTROYED,
        SANDBOX_FAILED,
        SANDBOX_RESTORING,
        _SANDBOX_STATE_MAX,
};
const char *sandbox_state_name(enum sandbox_state s);
int sandbox_state_from_name(const char *name, enum sandbox_state *ret);

enum operation_state { OPERATION_PENDING = 0, OPERATION_RUNNING, OPERATION_SUCCEEDED, OPERATION_FAILED };
const char *operation_state_name(enum operation_state s);
int operation_state_from_name(const char *name, enum operation_state *ret);

/* A window of a list, in the list's order: the rows after the one at (after_ms, after_id),
 * at most limit of them. For lists ordered by (created_at, id) after_ms is a created_at;
 * templates are ordered by name (after_id) alone; operations newest first, so "after"
 * is older. NULL (or after_id NULL) starts at the first row; limit 0 means all. */
struct store_page {
        int64_t after_ms;
        const char *after_id;
        int limit;
};

struct sandbox_resources {
        double cpus;
        int64_t memory_mb;
        int64_t pids;
        int64_t disk_mb;
};

struct sandbox {
        char id[32];
        char project_id[32]; /* the project it belongs to (forks: the parent's) */
        enum sandbox_state state;
        char state_reason[256];
        char template_name[64];
        json_t *environment; /* template binding, copied at create */
        struct sandbox_resources resources;
        json_t *env;      /* object of strings */
        json_t *metadata; /* object of strings */
        int64_t timeout_s;
        char on_timeout[12];
        int64_t expires_at_ms; /* 0 = never */
        int64_t created_at_ms;
        int64_t updated_at_ms;
        /* runtime: the driver it runs on (runtime_registry.h) and that driver's own handle of
         * it (JSON text only the driver reads; "" when it has none) */
        char runtime[32];
        char runtime_state[512];
        /* lineage */
        char parent_sandbox_id[32];  /* set on forks */
        char parent_snapshot_id[32]; /* the snapshot it was forked from */
        char head_snapshot_id[32];   /* the latest snapshot taken or restored: parent of the next */
        json_t *rolling;             /* rolling snapshot policy object, or NULL for none */
        /* egress: {"profile", "allow", "deny"} (egress/egress_policy.h), NULL for the profile
         * none (only lo, no host interface) */
        json_t *network;
        /* idle policy {"after_s", "action"} (controller/idle_policy.h), NULL for none of its
         * own (the server's --hibernate-idle applies) */
        json_t *idle;
        /* the node it lives on (docs/fleet.md): as inserted ("" none yet: the node that claims
         * its create takes it), and moved by operation_claim */
        char node_id[32];
        /* E2B's network.allowPublicTraffic false: its ports answer only requests that carry its
         * traffic access token (e2b_ingress.c); fixed at create */
        bool private_ports;
};
void sandbox_release(struct sandbox *s);
void sandbox_array_free(struct sandbox *arr, size_t n);

struct operation {
        char id[32];
        char kind[32];   /* sandbox.create, sandbox.stop, … template.build */
        char target[64]; /* sandbox id or template name */
        enum operation_state state;
        char error_code[32];
        char error_message[512];
        int64_t created_at_ms, started_at_ms, finished_at_ms;
        char params[1024]; /* JSON object text, "" for none: what the handler needs to redo it */
        char result[1024]; /* JSON object text, "" until it succeeds */
        /* The snapshot it needs until it ends ("" none): inserting it fails with -ENOENT when
         * that snapshot is gone, and the snapshot cannot be deleted while it is unfinished. */
        char snapshot_id[32];
        /* Its project: "" at insert takes the target's (sandbox, template or snapshot). */
        char project_id[32];
        /* The claim (operation_claim; read only, the inserts leave it empty): the node that
         * holds it ("" none), the token that fences the holder's writes, when it was taken
         * and how many times it has been. An update or a settle of an operation whose
         * claim_token is set changes the row only while that token still holds it (-ESTALE
         * else): a node whose claim was taken over cannot write an end. */
        char claim_owner[32];
        char claim_token[40];
        int64_t claimed_at_ms;
        int64_t claims;
};

/* A node of the fleet (docs/fleet.md): a spaced that runs operations and sandboxes,
 * heartbeating in the store. state: ready | lost. labels: a JSON object's text. */
struct node_record {
        char id[32];
        char address[128];
        int64_t capacity;
        char labels[512];
        char state[16];
        int64_t started_at_ms;
        int64_t heartbeat_at_ms;
};

struct snapshot {
        char id[32];
        char project_id[32]; /* "" at insert: its sandbox's */
        char sandbox_id[32];
        char state[16]; /* creating | ready */
        char label[128];
        char kind[16]; /* filesystem | memory */
        char parent_snapshot_id[32];
        int64_t bytes_exclusive; /* -1 when not measured */
        int64_t pause_us;        /* how long the sandbox was frozen for it */
        int64_t created_at_ms;
        bool rolling; /* taken by the rolling schedule, deleted by its retention */
};

struct template_record {
        char name[64];
        char project_id[32]; /* "" = shared (built in, or from before projects); set at the first insert only */
        char state[16];      /* ready | building | not_built | failed */
        json_t *environment;
        char state_reason[256];
        int64_t updated_at_ms;
};
void template_record_release(struct template_record *t);

struct api_key {
        char id[32];
        char name[64];
        char hash[65]; /* hex sha256 of the secret */
        int64_t created_at_ms;
        int64_t last_used_at_ms;
        char project_id[32];
        char role[16];         /* auth/principal.h role name */
        uint32_t permissions;  /* mask of enum permission the role is narrowed to (all bits: not narrowed) */
        int64_t expires_at_ms; /* 0 = never */
};

/* A tenant: every sandbox, snapshot, private template, command, session, operation and key
 * belongs to one. "default" holds what existed before projects and the first admin key. */
#define PROJECT_DEFAULT "default"
struct project {
        char id[32];
        int64_t created_at_ms;
};

/* A data-plane attach session: its token grants one sandbox's data plane until it expires
 * or is revoked. Only the token's SHA-256 is stored. */
struct attach_session {
        char id[32];
        char sandbox_id[32];
        char token_hash[65];
        int64_t created_at_ms;
        int64_t expires_at_ms;
        int64_t revoked_at_ms; /* 0 = not revoked */
        char project_id[32];   /* its sandbox's, set by the store at insert */
        char key_id[32];       /* the API key that opened it: revoking the key revokes it */
};

/* A command started through the data plane. Its output lives in the command log
 * (data_plane/command_log.h); this row says what it is and how it ended. */
enum command_state { COMMAND_STARTING = 0, COMMAND_RUNNING, COMMAND_EXITED, COMMAND_LOST, COMMAND_PENDING_APPROVAL };
const char *command_state_name(enum command_state s);
int command_state_from_name(const char *name, enum command_state *ret);

struct command_record {
        char id[32];
        char sandbox_id[32];
        char tag[128];
        json_t *spec; /* what was asked: argv, env, cwd, user, tty, stdin, timeout_s */
        enum command_state state;
        int32_t pid;
        int32_t exit_code;
        int32_t term_signal;
        bool timed_out;
        char reason[256]; /* why it was lost, or why it could not start; pending_approval: the approval's id */
        int64_t created_at_ms, started_at_ms, finished_at_ms;
};
void command_record_release(struct command_record *c);
void command_record_array_free(struct command_record *arr, size_t n);

/* One row of the audit log: a mutating call or a refused one, written once at the end of
 * the request. Never a secret, a header or a body. Empty strings are absent values. */
struct audit_record {
        char id[32];
        int64_t created_at_ms;
        char request_id[72];
        char key_id[32];  /* the principal: the authenticated key, "" when none */
        char project[64]; /* "" until requests carry a project */
        char role[32];    /* "" until requests carry a role */
        char action[48];  /* a stable name from the route table: sandbox.create */
        char target[72];  /* the id in the path, "" for none */
        char method[8];
        int status;          /* the HTTP status answered */
        char error_code[32]; /* the error's code, "" on success */
        char source[64];     /* the client's address */
        char detail[640];    /* a JSON object of what else happened, "" for none (egress.connection) */
};

/* What GET /v1/audit filters on; NULL or 0 fields match everything. */
struct audit_filter {
        const char *project, *key_id, *action, *target;
        int64_t since_ms, until_ms; /* created_at in [since, until); 0: open */
};

/* A policy document of a project (docs/governance.md): what src/policy/ compiles. The store
 * keeps it as given and checks nothing in it but the name's uniqueness in its project. */
struct policy_record {
        char id[32];
        char project_id[32];
        char name[64];       /* unique in its project */
        char sandbox_id[32]; /* "" for the whole project */
        int64_t version;     /* 1 at insert, one more at each update */
        json_t *document;    /* the JSON object as validated */
        int64_t created_at_ms;
        int64_t updated_at_ms;
};
void policy_record_release(struct policy_record *p);
void policy_record_array_free(struct policy_record *arr, size_t n);

/* A command held by a require_approval rule (docs/governance.md): what was asked, which
 * rule held it, and how it was decided. Its command row is pending_approval until then. */
enum approval_state { APPROVAL_PENDING = 0, APPROVAL_APPROVED, APPROVAL_DENIED, APPROVAL_EXPIRED };
const char *approval_state_name(enum approval_state s);
int approval_state_from_name(const char *name, enum approval_state *ret);

struct approval_record {
        char id[32];
        char project_id[32];
        char sandbox_id[32];
        char command_id[32];
        char key_id[32];    /* the key that asked ("" for the platform) */
        char policy_id[32]; /* the deciding policy and rule */
        char rule_id[64];
        char reason[512]; /* the sentence the caller was shown */
        enum approval_state state;
        json_t *request;     /* what starts the command once approved (data_plane/command_approval.h) */
        char decided_by[32]; /* the key that decided; "" while pending or when it expired */
        char comment[512];
        int64_t created_at_ms, expires_at_ms, decided_at_ms;
};
void approval_record_release(struct approval_record *a);
void approval_record_array_free(struct approval_record *arr, size_t n);

/* A platform-held secret of a project (docs/network.md): its value sealed under the
 * project's data key (auth/secret_keyring.h); nothing above the store ever returns it. */
struct secret_record {
        char id[32];
        char project_id[32];
        char name[64]; /* unique in its project */
        char *sealed;  /* malloc'd text */
        int64_t created_at_ms;
};
void secret_record_release(struct secret_record *s);
void secret_record_array_free(struct secret_record *arr, size_t n);

/* Where the gateway puts a secret (docs/network.md): on a project (sandbox_id "") or one
 * sandbox. spec: {"destination", "port", "header", "format", "template", "methods"} as the
 * service validated it; the store checks nothing in it. */
struct binding_record {
        char id[32];
        char project_id[32];
        char sandbox_id[32];
        char secret_name[64];
        json_t *spec;
        int64_t created_at_ms;
};
void binding_record_release(struct binding_record *b);
void binding_record_array_free(struct binding_record *arr, size_t n);

struct state_store;

/* The end of an operation's handler, written in one transaction (sandbox_settle): the
 * sandbox's move from one of `from_mask` to `to`, the parts of its row that go with it, and
 * the operation's final row. A crash leaves all of it or none, so a re-run never finds the
 * change made but the operation unfinished. */
struct sandbox_settlement {
        unsigned from_mask;
        enum sandbox_state to;
        const char *reason;
        bool set_runtime; /* runtime_state */
        const char *runtime_state;
        bool set_expiry; /* expires_at_ms (0: none) */
        int64_t expires_at_ms;
        const char *head_snapshot_id; /* NULL: unchanged */
        const struct operation *op;   /* its final state, error, finished_at and result; or NULL */
};

/* How many rows share two values (metrics): sandboxes by state and runtime, unfinished
 * operations by kind and state. */
struct store_tally {
        char a[32];
        char b[32];
        int64_t n;
};

struct state_store_ops {
        const char *name;
        int (*open)(const char *location, struct state_store **ret);
        /* power: every commit is on disk before it returns (SQLite synchronous=FULL); else a
         * commit survives a crash of the process, not of the machine (NORMAL, the default). */
        int (*set_durability)(struct state_store *st, bool power);
        void (*close)(struct state_store *st);

        /* Inserts the sandbox and its create operation atomically. */
        int (*sandbox_insert)(struct state_store *st, const struct sandbox *sb, const struct operation *op);
        /* Inserts sandboxes, snapshots and an operation (each part optional) in one transaction. */
        int (*insert_batch)(struct state_store *st, const struct sandbox *sbs, size_t nsb, const struct snapshot *snaps,
                            size_t nsnap, const struct operation *op);
        int (*sandbox_get)(struct state_store *st, const char *id, struct sandbox *ret);
        /* state_filter < 0: all but destroyed. project_id NULL: every project's. page NULL: all. */
        int (*sandbox_list)(struct state_store *st, int state_filter, const char *project_id, const struct store_page *page,
                            struct sandbox **ret, size_t *ret_n);
        /* If the sandbox is in one of `from` (mask of 1<<state), moves it to `to` with reason and,
         * if op != NULL, inserts op, all in one transaction. Otherwise -ESTALE and *ret_current.
         * A sandbox.destroy is refused with -EBUSY while a fork or snapshot of the sandbox that
         * was accepted before it is unfinished (they need the sandbox as it is). */
        int (*sandbox_transition)(struct state_store *st, const char *id, unsigned from_mask, enum sandbox_state to,
                                  const char *reason, const struct operation *op, enum sandbox_state *ret_current);
        /* As sandbox_transition, with what struct sandbox_settlement says, in one transaction.
         * -ESTALE and *ret_current when the sandbox is not in from_mask (nothing written). */
        int (*sandbox_settle)(struct state_store *st, const char *id, const struct sandbox_settlement *s,
                              enum sandbox_state *ret_current);
        /* The driver's handle of the sandbox (sb->runtime_state). */
        int (*sandbox_set_runtime)(struct state_store *st, const char *id, const char *runtime_state);
        /* Deletes up to `limit` rows of sandboxes destroyed before before_ms (by updated_at)
         * that no snapshot names and no unfinished operation targets, with their commands,
         * sessions and operations; *ret_n how many. */
        int (*sandbox_purge_destroyed)(struct state_store *st, int64_t before_ms, int limit, int *ret_n);
        int (*sandbox_set_expiry)(struct state_store *st, const char *id, int64_t expires_at_ms);
        int (*sandbox_set_head)(struct state_store *st, const char *id, const char *snapshot_id);
        /* Writes the settings a client may change later: metadata, timeout_s, on_timeout, rolling, idle. */
        /* With set_expiry, sb->expires_at_ms too, in the same statement (a new timeout and the
         * deadline it arms are never apart). */
        int (*sandbox_set_settings)(struct state_store *st, const struct sandbox *sb, bool set_expiry);
        /* Replaces the sandbox's network (sb->network; NULL: none) and its updated_at. */
        int (*sandbox_set_network)(struct state_store *st, const char *id, const json_t *network);

        int (*snapshot_get)(struct state_store *st, const char *id, struct snapshot *ret);
        /* sandbox_id NULL: all; project_id NULL: every project's. Oldest first. */
        int (*snapshot_list)(struct state_store *st, const char *sandbox_id, const char *project_id,
                             const struct store_page *page, struct snapshot **ret, size_t *ret_n);
        int (*snapshot_update)(struct state_store *st, const struct snapshot *snap);
        /* With if_unused, refuses (-EBUSY, the operation's id in ret_user[32] when given)
         * while an unfinished operation needs the snapshot; checked in the same transaction. */
        int (*snapshot_delete)(struct state_store *st, const char *id, bool if_unused, char *ret_user);

        int (*operation_insert)(struct state_store *st, const struct operation *op);
        int (*operation_update)(struct state_store *st, const struct operation *op);
        int (*operation_get)(struct state_store *st, const char *id, struct operation *ret);
        /* target/state/project_id may be NULL / < 0 for any, newest first; unfinished_only
         * returns pending+running oldest first (of every project; it takes no page). */
        int (*operation_list)(struct state_store *st, const char *target, int state, bool unfinished_only, const char *project_id,
                              const struct store_page *page, struct operation **ret, size_t *ret_n);
        /* Deletes up to `limit` operations that finished before before_ms, never an unfinished
         * one nor the newest operation of a target that exists (a sandbox not destroyed, a
         * template); *ret_n how many. */
        int (*operation_purge_finished)(struct state_store *st, int64_t before_ms, int limit, int *ret_n);
        /* *ret: an unfinished operation targets id, or names it in its parameters (a fork's
         * children, the snapshot it takes or restores). */
        int (*operation_refers)(struct state_store *st, const char *id, bool *ret);

        int (*template_upsert)(struct state_store *st, const struct template_record *t);
        int (*template_get)(struct state_store *st, const char *name, struct template_record *ret);
        /* project_id NULL: all; else that project's and the shared ones. By name. */
        int (*template_list)(struct state_store *st, const char *project_id, const struct store_page *page,
                             struct template_record **ret, size_t *ret_n);
        int (*template_delete)(struct state_store *st, const char *name);

        int (*key_insert)(struct state_store *st, const struct api_key *k);
        /* project_id NULL: every project's. */
        int (*key_list)(struct state_store *st, const char *project_id, const struct store_page *page, struct api_key **ret,
                        size_t *ret_n);
        int (*key_get)(struct state_store *st, const char *id, struct api_key *ret);
        /* Deletes the key and, in the same transaction, revokes (at now_ms) every attach
         * session it opened that is not revoked yet. */
        int (*key_delete)(struct state_store *st, const char *id, int64_t now_ms);
        /* Finds by hash and records last use. */
        int (*key_authenticate)(struct state_store *st, const char *hash, struct api_key *ret);
        int (*key_count)(struct state_store *st, int64_t *ret);

        /* -EEXIST when the id is taken. */
        int (*project_insert)(struct state_store *st, const struct project *p);
        int (*project_get)(struct state_store *st, const char *id, struct project *ret);
        /* project_id NULL: all; else only that one. Oldest first. */
        int (*project_list)(struct state_store *st, const char *project_id, const struct store_page *page, struct project **ret,
                            size_t *ret_n);

        int (*session_insert)(struct state_store *st, const struct attach_session *s);
        int (*session_get)(struct state_store *st, const char *id, struct attach_session *ret);
        int (*session_find_by_hash)(struct state_store *st, const char *hash, struct attach_session *ret);
        /* Oldest first. */
        int (*session_list)(struct state_store *st, const char *sandbox_id, const struct store_page *page,
                            struct attach_session **ret, size_t *ret_n);
        /* Writes expires_at and revoked_at. */
        int (*session_update)(struct state_store *st, const struct attach_session *s);

        int (*command_insert)(struct state_store *st, const struct command_record *c);
        /* Writes state, pid, exit status, reason and times. */
        int (*command_update)(struct state_store *st, const struct command_record *c);
        int (*command_get)(struct state_store *st, const char *sandbox_id, const char *id, struct command_record *ret);
        /* Only for a command that never started. */
        int (*command_delete)(struct state_store *st, const char *sandbox_id, const char *id);
        /* sandbox_id NULL: all; unfinished_only: starting + running. Oldest first. */
        int (*command_list)(struct state_store *st, const char *sandbox_id, bool unfinished_only, const struct store_page *page,
                            struct command_record **ret, size_t *ret_n);

        /* Rewrites the store's probe row (at = now_ms) in a transaction of its own: 0 when the
         * store still takes writes, -errno when not (the health check). */
        int (*probe_write)(struct state_store *st, int64_t now_ms);
        /* Sandboxes not destroyed, by (state, runtime); unfinished operations by (kind, state). */
        int (*sandbox_tally)(struct state_store *st, struct store_tally **ret, size_t *ret_n);
        int (*operation_tally)(struct state_store *st, struct store_tally **ret, size_t *ret_n);

        /* The audit log is append-only: rows are inserted, listed, and purged by age. */
        int (*audit_insert)(struct state_store *st, const struct audit_record *a);
        /* Oldest first, by (created_at, id), after page's row, at most page->limit (0: all). */
        int (*audit_list)(struct state_store *st, const struct audit_filter *f, const struct store_page *page,
                          struct audit_record **ret, size_t *ret_n);
        /* Deletes up to limit rows written before before_ms; *ret_n how many. */
        int (*audit_purge)(struct state_store *st, int64_t before_ms, int limit, int *ret_n);

        /* Policies (struct policy_record). Insert: -EEXIST when the project has one of that
         * name. Update writes name, sandbox_id, document, version and updated_at of the row
         * with p->id and p->project_id if its version is p->version - 1, else -ESTALE (a
         * concurrent update won); -ENOENT when there is none; -EEXIST for a taken name. */
        int (*policy_insert)(struct state_store *st, const struct policy_record *p);
        /* project_id NULL: whatever its project. */
        int (*policy_get)(struct state_store *st, const char *project_id, const char *id, struct policy_record *ret);
        /* project_id NULL: every project's. By (created_at, id). */
        int (*policy_list)(struct state_store *st, const char *project_id, struct policy_record **ret, size_t *ret_n);
        int (*policy_update)(struct state_store *st, const struct policy_record *p);
        /* -ENOENT when the project has no such policy. */
        int (*policy_delete)(struct state_store *st, const char *project_id, const char *id);

        /* Approvals (struct approval_record). Hold inserts the approval and its command (state
         * pending_approval) in one transaction. */
        int (*approval_hold)(struct state_store *st, const struct approval_record *a, const struct command_record *c);
        /* project_id NULL: whatever its project. */
        int (*approval_get)(struct state_store *st, const char *project_id, const char *id, struct approval_record *ret);
        /* project_id NULL: all; state < 0: any. Oldest first by (created_at, id), paged. */
        int (*approval_list)(struct state_store *st, const char *project_id, int state, const struct store_page *page,
                             struct approval_record **ret, size_t *ret_n);
        /* Moves a pending approval to `to` (approved, denied, expired) with decided_by, comment
         * and decided_at: -ENOENT when there is none, -EALREADY when it is not pending. */
        int (*approval_decide)(struct state_store *st, const char *id, enum approval_state to, const char *decided_by,
                               const char *comment, int64_t at_ms);

        /* The fleet (docs/fleet.md). A node starts by registering: its row (id, address,
         * capacity, labels, started_at; heartbeat_at = started_at, state ready) is written
         * and every claim it held before (an earlier process of the same node, which is
         * gone) is let go, in one transaction. */
        int (*node_register)(struct state_store *st, const struct node_record *n);
        /* heartbeat_at = now_ms, state ready: -ENOENT when the node has no row. */
        int (*node_heartbeat)(struct state_store *st, const char *id, int64_t now_ms);
        /* Every node, by id. */
        int (*node_list)(struct state_store *st, struct node_record **ret, size_t *ret_n);
        /* Ready nodes whose last heartbeat is before before_ms become lost; *ret_n how many. */
        int (*node_mark_lost)(struct state_store *st, int64_t before_ms, int *ret_n);
        /* Claims one unfinished operation for node `owner` (id: that one; NULL: the oldest
         * claimable), with a new claim token, claimed_at = now_ms and claims + 1, and
         * returns its row. Claimable: nobody holds it or its holder is not live (no ready
         * node row with a heartbeat at or after live_after_ms); every older unfinished
         * operation on its target is held by owner (one operation per target at a time, in
         * order, across nodes); and its target is not a sandbox on another live node. The
         * sandboxes it targets or names (a fork's children) that are on no live node move
         * to owner in the same transaction. A row another claimant is taking is skipped
         * (PostgreSQL: FOR UPDATE SKIP LOCKED). -ENOENT when nothing is claimable. */
        int (*operation_claim)(struct state_store *st, const char *owner, const char *id, int64_t live_after_ms, int64_t now_ms,
                               struct operation *ret);
        /* Secrets. The project's data key as sealed text: the stored one, or candidate when
         * the project had none (stored now; of two racing callers both get the first). */
        int (*secret_data_key)(struct state_store *st, const char *project_id, const char *candidate, char **ret);
        /* -EEXIST when the project has a secret of that name. */
        int (*secret_insert)(struct state_store *st, const struct secret_record *s);
        int (*secret_get)(struct state_store *st, const char *project_id, const char *name, struct secret_record *ret);
        /* By (created_at, id). */
        int (*secret_list)(struct state_store *st, const char *project_id, struct secret_record **ret, size_t *ret_n);
        /* -ENOENT when there is none. */
        int (*secret_delete)(struct state_store *st, const char *project_id, const char *name);

        /* Credential bindings. List: project_id NULL, every project's; sandbox_id NULL, all of
         * them; else the project-wide ones and that sandbox's. By (created_at, id). */
        int (*binding_insert)(struct state_store *st, const struct binding_record *b);
        int (*binding_list)(struct state_store *st, const char *project_id, const char *sandbox_id, struct binding_record **ret,
                            size_t *ret_n);
        /* -ENOENT when the project has no such binding. */
        int (*binding_delete)(struct state_store *st, const char *project_id, const char *id);
};

extern const struct state_store_ops state_store_sqlite;

/* The store in use, chosen at start. */
struct state_handle {
        const struct state_store_ops *ops;
        struct state_store *st;
};
