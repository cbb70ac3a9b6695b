/* Row -> struct decoders shared by the SQL backends (store_record_rows.h). */
#include "state_store/store_record_rows.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void copy_col(const struct store_row *r, int i, char *dst, size_t size)
{
        const char *v = r->text(r->row, i);
        snprintf(dst, size, "%s", v ? v : "");
}

/* A JSON column: an object when it is empty or not JSON. */
static json_t *json_col(const struct store_row *r, int i)
{
        const char *v = r->text(r->row, i);
        json_t *j = v ? json_loads(v, 0, NULL) : NULL;
        return j ? j : json_object();
}

/* A JSON column where '' means none (NULL). */
static json_t *optional_json_col(const struct store_row *r, int i)
{
        const char *v = r->text(r->row, i);
        return v && v[0] ? json_loads(v, 0, NULL) : NULL;
}

char *store_json_text(const json_t *v)
{
        char *text = v ? json_dumps(v, JSON_COMPACT) : NULL;
        return text ? text : strdup("{}");
}

void store_row_sandbox(const struct store_row *r, void *elem)
{
        struct sandbox *sb = elem;
        memset(sb, 0, sizeof(*sb));
        copy_col(r, 0, sb->id, sizeof(sb->id));
        const char *state = r->text(r->row, 1);
        sandbox_state_from_name(state ? state : "", &sb->state);
        copy_col(r, 2, sb->state_reason, sizeof(sb->state_reason));
        copy_col(r, 3, sb->template_name, sizeof(sb->template_name));
        sb->environment = json_col(r, 4);
        sb->resources.cpus = r->real(r->row, 5);
        sb->resources.memory_mb = r->integer(r->row, 6);
        sb->resources.pids = r->integer(r->row, 7);
        sb->resources.disk_mb = r->integer(r->row, 8);
        sb->env = json_col(r, 9);
        sb->metadata = json_col(r, 10);
        sb->timeout_s = r->integer(r->row, 11);
        copy_col(r, 12, sb->on_timeout, sizeof(sb->on_timeout));
        sb->expires_at_ms = r->integer(r->row, 13);
        sb->created_at_ms = r->integer(r->row, 14);
        sb->updated_at_ms = r->integer(r->row, 15);
        copy_col(r, 16, sb->runtime, sizeof(sb->runtime));
        copy_col(r, 17, sb->runtime_state, sizeof(sb->runtime_state));
        copy_col(r, 18, sb->parent_sandbox_id, sizeof(sb->parent_sandbox_id));
        copy_col(r, 19, sb->parent_snapshot_id, sizeof(sb->parent_snapshot_id));
        copy_col(r, 20, sb->head_snapshot_id, sizeof(sb->head_snapshot_id));
        sb->rolling = optional_json_col(r, 21);
        copy_col(r, 22, sb->project_id, sizeof(sb->project_id));
        sb->network = optional_json_col(r, 23);
        sb->idle = optional_json_col(r, 24);
        copy_col(r, 25, sb->node_id, sizeof(sb->node_id));
        sb->private_ports = r->integer(r->row, 26) != 0;
}

void store_row_operation(const struct store_row *r, void *elem)
{
        struct operation *op = elem;
        memset(op, 0, sizeof(*op));
        copy_col(r, 0, op->id, sizeof(op->id));
        copy_col(r, 1, op->kind, sizeof(op->kind));
        copy_col(r, 2, op->target, sizeof(op->target));
        const char *state = r->text(r->row, 3);
        operation_state_from_name(state ? state : "", &op->state);
        copy_col(r, 4, op->error_code, sizeof(op->error_code));
        copy_col(r, 5, op->error_message, sizeof(op->error_message));
        op->created_at_ms = r->integer(r->row, 6);
        op->started_at_ms = r->integer(r->row, 7);
        op->finished_at_ms = r->integer(r->row, 8);
        copy_col(r, 9, op->params, sizeof(op->params));
        copy_col(r, 10, op->result, sizeof(op->result));
        copy_col(r, 11, op->snapshot_id, sizeof(op->snapshot_id));
        copy_col(r, 12, op->project_id, sizeof(op->project_id));
        copy_col(r, 13, op->claim_owner, sizeof(op->claim_owner));
        copy_col(r, 14, op->claim_token, sizeof(op->claim_token));
        op->claimed_at_ms = r->integer(r->row, 15);
        op->claims = r->integer(r->row, 16);
}

void store_row_node(const struct store_row *r, void *elem)
{
        struct node_record *n = elem;
        memset(n, 0, sizeof(*n));
        copy_col(r, 0, n->id, sizeof(n->id));
        copy_col(r, 1, n->address, sizeof(n->address));
        n->capacity = r->integer(r->row, 2);
        copy_col(r, 3, n->labels, sizeof(n->labels));
        copy_col(r, 4, n->state, sizeof(n->state));
        n->started_at_ms = r->integer(r->row, 5);
        n->heartbeat_at_ms = r->integer(r->row, 6);
}

void store_row_snapshot(const struct store_row *r, void *elem)
{
        struct snapshot *snap = elem;
        memset(snap, 0, sizeof(*snap));
        copy_col(r, 0, snap->id, sizeof(snap->id));
        copy_col(r, 1, snap->sandbox_id, sizeof(snap->sandbox_id));
        copy_col(r, 2, snap->state, sizeof(snap->state));
        copy_col(r, 3, snap->label, sizeof(snap->label));
        copy_col(r, 4, snap->kind, sizeof(snap->kind));
        copy_col(r, 5, snap->parent_snapshot_id, sizeof(snap->parent_snapshot_id));
        snap->bytes_exclusive = r->integer(r->row, 6);
        snap->pause_us = r->integer(r->row, 7);
        snap->created_at_ms = r->integer(r->row, 8);
        snap->rolling = r->integer(r->row, 9) != 0;
        copy_col(r, 10, snap->project_id, sizeof(snap->project_id));
}

void store_row_template(const struct store_row *r, void *elem)
{
        struct template_record *t = elem;
        memset(t, 0, sizeof(*t));
        copy_col(r, 0, t->name, sizeof(t->name));
        copy_col(r, 1, t->state, sizeof(t->state));
        t->environment = json_col(r, 2);
        copy_col(r, 3, t->state_reason, sizeof(t->state_reason));
        t->updated_at_ms = r->integer(r->row, 4);
        copy_col(r, 5, t->project_id, sizeof(t->project_id));
}

void store_row_key(const struct store_row *r, void *elem)
{
        struct api_key *k = elem;
        memset(k, 0, sizeof(*k));
        copy_col(r, 0, k->id, sizeof(k->id));
        copy_col(r, 1, k->name, sizeof(k->name));
        copy_col(r, 2, k->hash, sizeof(k->hash));
        k->created_at_ms = r->integer(r->row, 3);
        k->last_used_at_ms = r->integer(r->row, 4);
        copy_col(r, 5, k->project_id, sizeof(k->project_id));
        copy_col(r, 6, k->role, sizeof(k->role));
        k->permissions = (uint32_t)r->integer(r->row, 7);
        k->expires_at_ms = r->integer(r->row, 8);
}

void store_row_project(const struct store_row *r, void *elem)
{
        struct project *p = elem;
        memset(p, 0, sizeof(*p));
        copy_col(r, 0, p->id, sizeof(p->id));
        p->created_at_ms = r->integer(r->row, 1);
}

void store_row_session(const struct store_row *r, void *elem)
{
        struct attach_session *a = elem;
        memset(a, 0, sizeof(*a));
        copy_col(r, 0, a->id, sizeof(a->id));
        copy_col(r, 1, a->sandbox_id, sizeof(a->sandbox_id));
        copy_col(r, 2, a->token_hash, sizeof(a->token_hash));
        a->created_at_ms = r->integer(r->row, 3);
        a->expires_at_ms = r->integer(r->row, 4);
        a->revoked_at_ms = r->integer(r->row, 5);
        copy_col(r, 6, a->key_id, sizeof(a->key_id));
        copy_col(r, 7, a->project_id, sizeof(a->project_id));
}

void store_row_command(const struct store_row *r, void *elem)
{
        struct command_record *c = elem;
        char state[24];
        memset(c, 0, sizeof(*c));
        copy_col(r, 0, c->id, sizeof(c->id));
        copy_col(r, 1, c->sandbox_id, sizeof(c->sandbox_id));
        copy_col(r, 2, c->tag, sizeof(c->tag));
        c->spec = json_col(r, 3);
        copy_col(r, 4, state, sizeof(state));
        if (command_state_from_name(state, &c->state) < 0)
                c->state = COMMAND_LOST;
        c->pid = (int32_t)r->integer(r->row, 5);
        c->exit_code = (int32_t)r->integer(r->row, 6);
        c->term_signal = (int32_t)r->integer(r->row, 7);
        c->timed_out = r->integer(r->row, 8) != 0;
        copy_col(r, 9, c->reason, sizeof(c->reason));
        c->created_at_ms = r->integer(r->row, 10);
        c->started_at_ms = r->integer(r->row, 11);
        c->finished_at_ms = r->integer(r->row, 12);
}

void store_row_audit(const struct store_row *r, void *elem)
{
        struct audit_record *a = elem;
        memset(a, 0, sizeof(*a));
        copy_col(r, 0, a->id, sizeof(a->id));
        a->created_at_ms = r->integer(r->row, 1);
        copy_col(r, 2, a->request_id, sizeof(a->request_id));
        copy_col(r, 3, a->key_id, sizeof(a->key_id));
        copy_col(r, 4, a->project, sizeof(a->project));
        copy_col(r, 5, a->role, sizeof(a->role));
        copy_col(r, 6, a->action, sizeof(a->action));
        copy_col(r, 7, a->target, sizeof(a->target));
        copy_col(r, 8, a->method, sizeof(a->method));
        a->status = (int)r->integer(r->row, 9);
        copy_col(r, 10, a->error_code, sizeof(a->error_code));
        copy_col(r, 11, a->source, sizeof(a->source));
        copy_col(r, 12, a->detail, sizeof(a->detail));
}

void store_row_policy(const struct store_row *r, void *elem)
{
        struct policy_record *p = elem;
        memset(p, 0, sizeof(*p));
        copy_col(r, 0, p->id, sizeof(p->id));
        copy_col(r, 1, p->project_id, sizeof(p->project_id));
        copy_col(r, 2, p->name, sizeof(p->name));
        copy_col(r, 3, p->sandbox_id, sizeof(p->sandbox_id));
        p->version = r->integer(r->row, 4);
        p->document = json_col(r, 5);
        p->created_at_ms = r->integer(r->row, 6);
        p->updated_at_ms = r->integer(r->row, 7);
}

void store_row_approval(const struct store_row *r, void *elem)
{
        struct approval_record *a = elem;
        char state[16];
        memset(a, 0, sizeof(*a));
        copy_col(r, 0, a->id, sizeof(a->id));
        copy_col(r, 1, a->project_id, sizeof(a->project_id));
        copy_col(r, 2, a->sandbox_id, sizeof(a->sandbox_id));
        copy_col(r, 3, a->command_id, sizeof(a->command_id));
        copy_col(r, 4, a->key_id, sizeof(a->key_id));
        copy_col(r, 5, a->policy_id, sizeof(a->policy_id));
        copy_col(r, 6, a->rule_id, sizeof(a->rule_id));
        copy_col(r, 7, a->reason, sizeof(a->reason));
        copy_col(r, 8, state, sizeof(state));
        if (approval_state_from_name(state, &a->state) < 0)
                a->state = APPROVAL_DENIED;
        a->request = json_col(r, 9);
        copy_col(r, 10, a->decided_by, sizeof(a->decided_by));
        copy_col(r, 11, a->comment, sizeof(a->comment));
        a->created_at_ms = r->integer(r->row, 12);
        a->expires_at_ms = r->integer(r->row, 13);
        a->decided_at_ms = r->integer(r->row, 14);
}

void store_row_tally(const struct store_row *r, void *elem)
{
        struct store_tally *t = elem;
        memset(t, 0, sizeof(*t));
        copy_col(r, 0, t->a, sizeof(t->a));
        copy_col(r, 1, t->b, sizeof(t->b));
        t->n = r->integer(r->row, 2);
}

void store_release_sandbox(void *elem)
{
        sandbox_release(elem);
}

void store_release_template(void *elem)
{
        template_record_release(elem);
}

void store_release_command(void *elem)
{
        command_record_release(elem);
}

void store_release_policy(void *elem)
{
        policy_record_release(elem);
}

void store_release_approval(void *elem)
{
        approval_record_release(elem);
}

void store_row_secret(const struct store_row *r, void *elem)
{
        struct secret_record *s = elem;
        memset(s, 0, sizeof(*s));
        copy_col(r, 0, s->id, sizeof(s->id));
        copy_col(r, 1, s->project_id, sizeof(s->project_id));
        copy_col(r, 2, s->name, sizeof(s->name));
        const char *sealed = r->text(r->row, 3);
        s->sealed = strdup(sealed ? sealed : "");
        s->created_at_ms = r->integer(r->row, 4);
}

void store_row_binding(const struct store_row *r, void *elem)
{
        struct binding_record *b = elem;
        memset(b, 0, sizeof(*b));
        copy_col(r, 0, b->id, sizeof(b->id));
        copy_col(r, 1, b->project_id, sizeof(b->project_id));
        copy_col(r, 2, b->sandbox_id, sizeof(b->sandbox_id));
        copy_col(r, 3, b->secret_name, sizeof(b->secret_name));
        b->spec = json_col(r, 4);
        b->created_at_ms = r->integer(r->row, 5);
}

void store_release_secret(void *elem)
{
        secret_record_release(elem);
}

void store_release_binding(void *elem)
{
        binding_record_release(elem);
}

void store_row_first_text(const struct store_row *r, void *elem)
{
        const char *v = r->text(r->row, 0);
        *(char **)elem = strdup(v ? v : "");
}
