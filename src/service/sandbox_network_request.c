#include "service/sandbox_network_request.h"

#include <stdlib.h>
#include <string.h>

#include "egress/egress_policy.h"
#include "egress/egress_profiles.h"
#include "spaced/spaced_context.h"

int sandbox_network_request_parse(const struct spaced_context *ctx, const json_t *request, json_t **ret, struct space_error *err)
{
        *ret = NULL;
        const char *profile = ctx->cfg.egress_profile;
        const json_t *allow = NULL, *deny = NULL;
        bool read_only = false;
        if (request && !json_is_null(request)) {
                const char *key;
                json_t *value;
                if (!json_is_object(request))
                        return space_error_set(err, SPACE_E_INVALID_REQUEST,
                                               "network must be an object {\"profile\", \"allow\", \"deny\"}");
                json_object_foreach((json_t *)request, key, value)
                {
                        if (strcmp(key, "profile") && strcmp(key, "allow") && strcmp(key, "deny") && strcmp(key, "read_only"))
                                return space_error_set(err, SPACE_E_INVALID_REQUEST, "network.%.64s is not a known field", key);
                }
                const json_t *p = json_object_get(request, "profile");
                if (p && !json_is_null(p) && !json_is_string(p))
                        return space_error_set(err, SPACE_E_INVALID_REQUEST, "network.profile must be a string");
                if (json_is_string(p))
                        profile = json_string_value(p);
                allow = json_object_get(request, "allow");
                deny = json_object_get(request, "deny");
                const json_t *ro = json_object_get(request, "read_only");
                if (ro && !json_is_boolean(ro))
                        return space_error_set(err, SPACE_E_INVALID_REQUEST, "network.read_only must be true or false");
                read_only = json_is_true(ro);
        }
        if (!egress_profiles_find(ctx->egress_profiles, profile))
                return space_error_set(err, SPACE_E_INVALID_REQUEST,
                                       "network.profile: no egress profile \"%.64s\" on this server", profile);
        /* Both lists checked by the one parser space-egress uses. */
        struct egress_rule *rules;
        size_t n_allow, n_deny;
        char why[256];
        if (egress_rules_from_json(allow, EGRESS_ALLOW, "network.allow", &rules, &n_allow, why, sizeof(why)) < 0)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "%s", why);
        free(rules);
        if (egress_rules_from_json(deny, EGRESS_DENY, "network.deny", &rules, &n_deny, why, sizeof(why)) < 0)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "%s", why);
        free(rules);
        if (egress_profile_is_none(profile)) {
                if (n_allow || n_deny || read_only)
                        return space_error_set(err, SPACE_E_INVALID_REQUEST,
                                               "network: the profile none has no egress for allow or deny rules to narrow");
                return 0;
        }
        json_t *net = json_pack("{s:s, s:o, s:o}", "profile", profile, "allow", n_allow ? json_deep_copy(allow) : json_array(),
                                "deny", n_deny ? json_deep_copy(deny) : json_array());
        if (net && read_only)
                json_object_set_new(net, "read_only", json_true());
        if (!net)
                return space_error_set(err, SPACE_E_INTERNAL, "out of memory");
        *ret = net;
        return 0;
}
