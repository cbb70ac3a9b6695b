#include "egress/egress_policy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"

void egress_policy_release(struct egress_policy *p)
{
        if (!p)
                return;
        free(p->rules);
        free(p->allow);
        free(p->deny);
        memset(p, 0, sizeof(*p));
}

int egress_rules_from_json(const json_t *list, enum egress_action action, const char *where, struct egress_rule **ret,
                           size_t *ret_n, char *why, size_t why_size)
{
        *ret = NULL;
        *ret_n = 0;
        if (!list || json_is_null(list))
                return 0;
        if (!json_is_array(list) || json_array_size(list) > EGRESS_RULES_MAX) {
                snprintf(why, why_size, "%s must be an array of at most %d rule strings", where, EGRESS_RULES_MAX);
                return -EINVAL;
        }
        size_t n = json_array_size(list);
        if (n == 0)
                return 0;
        _cleanup_free_ struct egress_rule *rules = calloc(n, sizeof(*rules));
        if (!rules)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                const char *text = json_string_value(json_array_get(list, i));
                char inner[200];
                if (!text) {
                        snprintf(why, why_size, "%s[%zu] must be a string", where, i);
                        return -EINVAL;
                }
                if (egress_rule_parse(text, action, &rules[i], inner, sizeof(inner)) < 0) {
                        snprintf(why, why_size, "%s[%zu]: %s", where, i, inner);
                        return -EINVAL;
                }
        }
        *ret = TAKE_PTR(rules);
        *ret_n = n;
        return 0;
}

static int profile_rules(const json_t *list, struct egress_policy *p, char *why, size_t why_size)
{
        if (!list || json_is_null(list))
                return 0;
        if (!json_is_array(list) || json_array_size(list) > EGRESS_RULES_MAX) {
                snprintf(why, why_size, "rules must be an array of at most %d {\"allow\"|\"deny\": RULE} objects",
                         EGRESS_RULES_MAX);
                return -EINVAL;
        }
        size_t n = json_array_size(list);
        p->rules = n ? calloc(n, sizeof(*p->rules)) : NULL;
        if (n && !p->rules)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                const json_t *o = json_array_get(list, i);
                const char *allow = json_string_value(json_object_get(o, "allow"));
                const char *deny = json_string_value(json_object_get(o, "deny"));
                char inner[200];
                if (!json_is_object(o) || json_object_size(o) != 1 || (!allow && !deny)) {
                        snprintf(why, why_size, "rules[%zu] must be {\"allow\": RULE} or {\"deny\": RULE}", i);
                        return -EINVAL;
                }
                if (egress_rule_parse(allow ? allow : deny, allow ? EGRESS_ALLOW : EGRESS_DENY, &p->rules[i], inner,
                                      sizeof(inner)) < 0) {
                        snprintf(why, why_size, "rules[%zu]: %s", i, inner);
                        return -EINVAL;
                }
                p->n_rules = i + 1;
        }
        return 0;
}

int egress_policy_from_json(const json_t *j, struct egress_policy *ret, char *why, size_t why_size)
{
        struct egress_policy p = { 0 };
        int r = -EINVAL;
        if (!json_is_object(j)) {
                snprintf(why, why_size, "an egress policy must be an object");
                return -EINVAL;
        }
        const json_t *profile = json_object_get(j, "profile"), *def = json_object_get(j, "default");
        if (profile && (!json_is_string(profile) || json_string_length(profile) >= sizeof(p.profile))) {
                snprintf(why, why_size, "profile must be a name of at most %zu characters", sizeof(p.profile) - 1);
                goto fail;
        }
        snprintf(p.profile, sizeof(p.profile), "%s", profile ? json_string_value(profile) : "");
        if (def &&
            (!json_is_string(def) || (strcmp(json_string_value(def), "deny") && strcmp(json_string_value(def), "public")))) {
                snprintf(why, why_size, "default must be \"deny\" or \"public\"");
                goto fail;
        }
        p.default_public = def && strcmp(json_string_value(def), "public") == 0;
        const json_t *ro = json_object_get(j, "read_only");
        if (ro && !json_is_boolean(ro)) {
                snprintf(why, why_size, "read_only must be true or false");
                goto fail;
        }
        p.read_only = json_is_true(ro);
        if ((r = profile_rules(json_object_get(j, "rules"), &p, why, why_size)) < 0 ||
            (r = egress_rules_from_json(json_object_get(j, "allow"), EGRESS_ALLOW, "allow", &p.allow, &p.n_allow, why,
                                        why_size)) < 0 ||
            (r = egress_rules_from_json(json_object_get(j, "deny"), EGRESS_DENY, "deny", &p.deny, &p.n_deny, why, why_size)) < 0)
                goto fail;
        *ret = p;
        return 0;
fail:
        egress_policy_release(&p);
        return r;
}

static bool any_matches(const struct egress_rule *rules, size_t n, const char *name, uint32_t addr, bool has_addr, uint16_t port)
{
        for (size_t i = 0; i < n; i++)
                if (egress_rule_matches_name(&rules[i], name, port) ||
                    (has_addr && egress_rule_matches_addr(&rules[i], addr, port)))
                        return true;
        return false;
}

/* The first profile rule of the kind that matches: 1 allow, -1 deny, 0 none. */
static int first_name_rule(const struct egress_policy *p, const char *name, uint16_t port)
{
        for (size_t i = 0; name && i < p->n_rules; i++)
                if (egress_rule_matches_name(&p->rules[i], name, port))
                        return p->rules[i].action == EGRESS_ALLOW ? 1 : -1;
        return 0;
}

static int first_addr_rule(const struct egress_policy *p, uint32_t addr, uint16_t port)
{
        for (size_t i = 0; i < p->n_rules; i++)
                if (egress_rule_matches_addr(&p->rules[i], addr, port))
                        return p->rules[i].action == EGRESS_ALLOW ? 1 : -1;
        return 0;
}

enum egress_action egress_policy_decide(const struct egress_policy *p, const char *name, uint32_t addr, uint16_t port)
{
        if (any_matches(p->deny, p->n_deny, name, addr, true, port))
                return EGRESS_DENY;
        if (p->n_allow && !any_matches(p->allow, p->n_allow, name, addr, true, port))
                return EGRESS_DENY;
        int by_addr = first_addr_rule(p, addr, port);
        if (by_addr < 0 || (by_addr == 0 && egress_addr_is_special(addr)))
                return EGRESS_DENY;
        int by_name = first_name_rule(p, name, port);
        if (by_name)
                return by_name > 0 ? EGRESS_ALLOW : EGRESS_DENY;
        if (by_addr > 0 || p->default_public)
                return EGRESS_ALLOW;
        return EGRESS_DENY;
}

bool egress_policy_name_denied(const struct egress_policy *p, const char *name)
{
        if (any_matches(p->deny, p->n_deny, name, 0, false, 0))
                return true;
        bool sandbox_nets = false;
        for (size_t i = 0; i < p->n_allow; i++)
                sandbox_nets |= p->allow[i].kind == EGRESS_RULE_CIDR;
        if (p->n_allow && !sandbox_nets && !any_matches(p->allow, p->n_allow, name, 0, false, 0))
                return true;
        return first_name_rule(p, name, 0) < 0;
}
