#include "api/api_render.h"

#include <string.h>

#include "api/output_encoding.h"
#include "service/key_service.h"
#include "spaced/wallclock.h"

json_t *api_render_time(int64_t ms)
{
        if (ms <= 0)
                return json_null();
        char buf[32];
        wallclock_format(ms, buf, sizeof(buf));
        return json_string(buf);
}

static json_t *id_or_null(const char *id)
{
        return id[0] ? json_string(id) : json_null();
}

/* What the pool under it says, for a sandbox that still has a filesystem there. */
static json_t *sandbox_storage(const struct sandbox *sb, const struct pool_health *pool)
{
        if (!pool || sb->state == SANDBOX_DESTROYED)
                return json_null();
        return json_pack("{s:s, s:s?}", "condition", pool_condition_name(pool->condition), "reason",
                         pool->condition != POOL_OK && pool->reason[0] ? pool->reason : NULL);
}

json_t *api_render_network(const struct sandbox *sb)
{
        return sb->network ? json_incref(sb->network) : json_pack("{s:s, s:[], s:[]}", "profile", "none", "allow", "deny");
}

json_t *api_render_sandbox(const struct sandbox *sb, const struct pool_health *pool)
{
        json_t *j = json_pack(
                "{s:s, s:s, s:s?, s:s, s:O, s:{s:f, s:I, s:I, s:I}, s:O, s:O, s:I, s:s, s:o, s:o, s:o}", "id", sb->id, "state",
                sandbox_state_name(sb->state), "state_reason", sb->state_reason[0] ? sb->state_reason : NULL, "template",
                sb->template_name, "environment", sb->environment, "resources", "cpus", sb->resources.cpus, "memory_mb",
                (json_int_t)sb->resources.memory_mb, "pids", (json_int_t)sb->resources.pids, "disk_mb",
                (json_int_t)sb->resources.disk_mb, "env", sb->env, "metadata", sb->metadata, "timeout_s",
                (json_int_t)sb->timeout_s, "on_timeout", sb->on_timeout, "expires_at", api_render_time(sb->expires_at_ms),
                "created_at", api_render_time(sb->created_at_ms), "updated_at", api_render_time(sb->updated_at_ms));
        if (j)
                json_object_set_new(j, "rolling_snapshots", sb->rolling ? json_incref(sb->rolling) : json_null());
        if (j) /* its own idle policy; null: the server's --hibernate-idle applies */
                json_object_set_new(j, "idle", sb->idle ? json_incref(sb->idle) : json_null());
        if (j)
                json_object_set_new(j, "lineage",
                                    json_pack("{s:o, s:o, s:o}", "parent_sandbox_id", id_or_null(sb->parent_sandbox_id),
                                              "parent_snapshot_id", id_or_null(sb->parent_snapshot_id), "head_snapshot_id",
                                              id_or_null(sb->head_snapshot_id)));
        if (j)
                json_object_set_new(j, "network", api_render_network(sb));
        if (j)
                json_object_set_new(j, "project", json_string(sb->project_id));
        if (j)
                json_object_set_new(j, "runtime", json_string(sb->runtime));
        if (j)
                json_object_set_new(j, "storage", sandbox_storage(sb, pool));
        if (j) /* the node of the fleet it lives on (docs/fleet.md) */
                json_object_set_new(j, "node", sb->node_id[0] ? json_string(sb->node_id) : json_null());
        return j;
}

json_t *api_render_operation(const struct operation *op)
{
        json_t *j =
                json_pack("{s:s, s:s, s:s, s:s, s:o, s:o, s:o}", "id", op->id, "kind", op->kind, "target", op->target, "state",
                          operation_state_name(op->state), "created_at", api_render_time(op->created_at_ms), "started_at",
                          api_render_time(op->started_at_ms), "finished_at", api_render_time(op->finished_at_ms));
        if (j && op->state == OPERATION_FAILED)
                json_object_set_new(
                        j, "error",
                        json_pack("{s:s, s:o}", "code", op->error_code, "message",
                                  output_encoding_utf8((const uint8_t *)op->error_message, strlen(op->error_message))));
        else if (j)
                json_object_set_new(j, "error", json_null());
        if (j) { /* the node that holds (or last held) its claim, and how many times it was claimed */
                json_object_set_new(j, "node", op->claim_owner[0] ? json_string(op->claim_owner) : json_null());
                json_object_set_new(j, "claims", json_integer(op->claims));
        }
        json_t *result = op->result[0] ? json_loads(op->result, 0, NULL) : NULL;
        if (j)
                json_object_set_new(j, "result", result ? result : json_null());
        return j;
}

json_t *api_render_template(const struct template_record *t)
{
        return json_pack("{s:s, s:s, s:s?, s:O, s:o}", "name", t->name, "state", t->state, "state_reason",
                         t->state_reason[0] ? t->state_reason : NULL, "environment", t->environment, "updated_at",
                         api_render_time(t->updated_at_ms));
}

json_t *api_render_permissions(uint32_t mask)
{
        json_t *perms = json_array();
        for (uint32_t bit = 1; bit & PERM_ALL; bit <<= 1)
                if (mask & bit)
                        json_array_append_new(perms, json_string(permission_name(bit)));
        return perms;
}

json_t *api_render_key(const struct api_key *k)
{
        json_t *perms = api_render_permissions(key_service_permissions(k));
        return json_pack("{s:s, s:s, s:o, s:o, s:s, s:s, s:o, s:o}", "id", k->id, "name", k->name, "created_at",
                         api_render_time(k->created_at_ms), "last_used_at", api_render_time(k->last_used_at_ms), "project",
                         k->project_id, "role", k->role, "permissions", perms, "expires_at", api_render_time(k->expires_at_ms));
}

json_t *api_render_snapshot(const struct snapshot *snap)
{
        return json_pack("{s:s, s:o, s:s, s:s, s:s, s:o, s:o, s:o, s:o}", "id", snap->id, "sandbox_id",
                         id_or_null(snap->sandbox_id), "state", snap->state, "label", snap->label, "kind", snap->kind,
                         "parent_snapshot_id", id_or_null(snap->parent_snapshot_id), "bytes_exclusive",
                         snap->bytes_exclusive >= 0 ? json_integer(snap->bytes_exclusive) : json_null(), "pause_ms",
                         json_real((double)snap->pause_us / 1000.0), "created_at", api_render_time(snap->created_at_ms));
}
