/* See approval_json.h. */
#include "service/approval_json.h"

#include "spaced/wallclock.h"

/* New references: s, or JSON null for "". */
static json_t *text_or_null(const char *s)
{
        return s[0] ? json_string(s) : json_null();
}

static json_t *member_or_null(const json_t *o, const char *key)
{
        json_t *v = json_object_get(o, key);
        return v ? json_incref(v) : json_null();
}

static json_t *time_or_null(int64_t ms)
{
        if (ms <= 0)
                return json_null();
        char buf[32];
        wallclock_format(ms, buf, sizeof(buf));
        return json_string(buf);
}

json_t *approval_json(const struct approval_record *a)
{
        const json_t *rq = a->request;
        return json_pack("{s:s, s:s, s:s, s:s, s:o, s:s, s:o, s:s, s:s, s:{s:o, s:o, s:o}, s:o, s:o, s:o, s:o, s:o}", "id", a->id,
                         "project", a->project_id, "sandbox_id", a->sandbox_id, "command_id", a->command_id, "requested_by",
                         text_or_null(a->key_id), "policy_id", a->policy_id, "rule_id", text_or_null(a->rule_id), "reason",
                         a->reason, "state", approval_state_name(a->state), "command", "argv", member_or_null(rq, "argv"), "cwd",
                         member_or_null(rq, "cwd"), "user", member_or_null(rq, "user"), "decided_by", text_or_null(a->decided_by),
                         "comment", text_or_null(a->comment), "created_at", time_or_null(a->created_at_ms), "expires_at",
                         time_or_null(a->expires_at_ms), "decided_at", time_or_null(a->decided_at_ms));
}
