#include "operations/idle_policy.h"

#include <string.h>

#include "spaced/spaced_context.h"
#include "state_store/state_store.h"

static const char *const action_names[] = { [IDLE_HIBERNATE] = "hibernate", [IDLE_STOP] = "stop" };

int idle_action_from_name(const char *name, enum idle_action *ret)
{
        for (size_t i = 0; name && i < sizeof(action_names) / sizeof(action_names[0]); i++)
                if (strcmp(name, action_names[i]) == 0) {
                        *ret = (enum idle_action)i;
                        return 0;
                }
        return -1;
}

const char *idle_action_name(enum idle_action a)
{
        return (size_t)a < sizeof(action_names) / sizeof(action_names[0]) ? action_names[a] : "hibernate";
}

json_t *idle_policy_new(int64_t after_s, enum idle_action action)
{
        return json_pack("{s:I, s:s}", "after_s", (json_int_t)after_s, "action", idle_action_name(action));
}

int idle_policy_parse(const json_t *v, const char *field, json_t **ret, struct space_error *err)
{
        if (!v || json_is_null(v)) {
                *ret = NULL;
                return 0;
        }
        if (!json_is_object(v))
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "%s must be an object or null", field);
        const char *key;
        const json_t *value;
        json_object_foreach((json_t *)v, key, value)
        {
                if (strcmp(key, "after_s") && strcmp(key, "action"))
                        return space_error_set(err, SPACE_E_INVALID_REQUEST, "%s has no field %.64s (after_s, action)", field,
                                               key);
        }
        const json_t *after = json_object_get(v, "after_s"), *action = json_object_get(v, "action");
        if (!json_is_integer(after) || json_integer_value(after) < 0 || json_integer_value(after) > IDLE_POLICY_MAX_S)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "%s.after_s is required: seconds, 0 (off) to %d", field,
                                       IDLE_POLICY_MAX_S);
        enum idle_action a = IDLE_HIBERNATE;
        if (action && !json_is_null(action) && idle_action_from_name(json_string_value(action), &a) < 0)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "%s.action must be hibernate or stop", field);
        json_t *p = idle_policy_new(json_integer_value(after), a);
        if (!p)
                return space_error_set(err, SPACE_E_INTERNAL, "out of memory");
        *ret = p;
        return 0;
}

void idle_policy_effective(const struct spaced_context *ctx, const struct sandbox *sb, struct idle_rule *ret)
{
        struct idle_rule r = { .after_s = ctx->cfg.hibernate_idle_s, .action = IDLE_HIBERNATE };
        if (json_is_object(sb->idle)) {
                const json_t *after = json_object_get(sb->idle, "after_s");
                r.after_s = json_is_integer(after) ? json_integer_value(after) : 0;
                if (idle_action_from_name(json_string_value(json_object_get(sb->idle, "action")), &r.action) < 0)
                        r.action = IDLE_HIBERNATE;
        }
        *ret = r;
}
