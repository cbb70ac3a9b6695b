#include "service/sandbox_network_service.h"

#include <string.h>

#include "auth/principal.h"
#include "cleanup.h"
#include "egress/egress_profiles.h"
#include "operations/sandbox_network.h"
#include "service/sandbox_access.h"
#include "service/sandbox_network_request.h"
#include "spaced/spaced_context.h"

static const char *profile_of(const struct sandbox *sb)
{
        const char *p = json_string_value(json_object_get(sb->network, "profile"));
        return p ? p : "none";
}

/* Another profile than the sandbox's (once the request parsed): a runtime with egress, and
 * a stopped sandbox for a change to or from none (links are made at start; between two
 * profiles with links the gateway takes the new policy at once). */
static int profile_change_check(const struct sandbox *sb, const char *asked, struct space_error *err)
{
        if (strcmp(asked, "none") != 0 && strcmp(sb->runtime, "microvm") == 0)
                return space_error_set(err, SPACE_E_UNSUPPORTED, "the microvm runtime has no egress network yet");
        bool link_change = strcmp(asked, "none") == 0 || strcmp(profile_of(sb), "none") == 0;
        if (link_change && sb->state != SANDBOX_STOPPED)
                return space_error_set(err, SPACE_E_INVALID_STATE,
                                       "sandbox %s is %s: a change to or from the profile none takes effect at a start; stop it "
                                       "first",
                                       sb->id, sandbox_state_name(sb->state));
        return 0;
}

/* A new reference: the request with the profile it names (the sandbox's own when it names
 * none), for the create's parser. */
static json_t *request_for(const struct principal *p, const struct sandbox *sb, const json_t *request, struct space_error *err)
{
        if (request && !json_is_object(request)) {
                space_error_set(err, SPACE_E_INVALID_REQUEST, "the body must be an object {\"allow\", \"deny\"}");
                return NULL;
        }
        const char *asked = json_string_value(json_object_get(request, "profile"));
        const json_t *given = json_object_get(request, "profile");
        if (given && !json_is_null(given) && !asked) {
                space_error_set(err, SPACE_E_INVALID_REQUEST, "network.profile must be a string");
                return NULL;
        }
        /* network.profile: the operator's admins; sandbox.write alone only narrows */
        if (asked && strcmp(asked, profile_of(sb)) != 0 && !principal_may(p, PERM_NETWORK_PROFILE)) {
                space_error_set(err, SPACE_E_FORBIDDEN,
                                "network.profile: giving sandbox %s another profile than %s needs the permission "
                                "network.profile (admin role)",
                                sb->id, profile_of(sb));
                return NULL;
        }
        json_t *r = request ? json_deep_copy(request) : json_object();
        if (!r || json_object_set_new(r, "profile", json_string(asked ? asked : profile_of(sb))) < 0) {
                json_decref(r);
                space_error_set(err, SPACE_E_INTERNAL, "out of memory");
                return NULL;
        }
        return r;
}

int sandbox_network_service_replace(struct spaced_context *ctx, const struct principal *p, const char *id, const json_t *request,
                                    struct sandbox *ret, struct space_error *err)
{
        struct sandbox sb;
        if (sandbox_access_load(ctx, p, id, &sb, err) < 0)
                return -1;
        int r = -1;
        _cleanup_json_ json_t *full = NULL, *net = NULL;
        if (sb.state == SANDBOX_DESTROYED || sb.state == SANDBOX_DESTROYING) {
                space_error_set(err, SPACE_E_INVALID_STATE, "sandbox %s is %s", sb.id, sandbox_state_name(sb.state));
                goto out;
        }
        if (!(full = request_for(p, &sb, request, err)) || sandbox_network_request_parse(ctx, full, &net, err) < 0)
                goto out;
        const char *asked = json_string_value(json_object_get(full, "profile"));
        if (strcmp(asked, profile_of(&sb)) != 0 && profile_change_check(&sb, asked, err) < 0)
                goto out;
        int w = STORE(ctx, sandbox_set_network, sb.id, net);
        if (w < 0) {
                space_error_errno(err, w, "store the network of %s", sb.id);
                goto out;
        }
        json_decref(sb.network);
        sb.network = json_incref(net);
        if (sandbox_network_update(ctx, &sb, err) < 0)
                goto out;
        r = 0;
        *ret = sb;
        return r;
out:
        sandbox_release(&sb);
        return r;
}

json_t *egress_profile_service_list_new(const struct spaced_context *ctx, const char **ret_default)
{
        json_t *list = json_array();
        const char *name;
        json_t *def;
        *ret_default = ctx->cfg.egress_profile;
        /* jansson keeps an object's keys in insertion order: sort them for a stable answer */
        json_object_foreach(ctx->egress_profiles, name, def)
        {
                const char *d = json_string_value(json_object_get(def, "default"));
                json_t *rules = json_object_get(def, "rules");
                json_t *one = json_pack("{s:s, s:s, s:o, s:b}", "name", name, "default", d ? d : "deny", "rules",
                                        rules ? json_incref(rules) : json_array(), "read_only",
                                        json_is_true(json_object_get(def, "read_only")));
                size_t at = 0;
                while (at < json_array_size(list) &&
                       strcmp(json_string_value(json_object_get(json_array_get(list, at), "name")), name) < 0)
                        at++;
                if (!one || json_array_insert_new(list, at, one) < 0) {
                        json_decref(list);
                        return NULL;
                }
        }
        return list;
}
