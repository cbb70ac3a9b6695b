/* E2B's egress fields on space's one policy (docs/network.md, docs/e2b.md): at create,
 * allow_internet_access and network {allowOut, denyOut}; later, PUT /sandboxes/{id}/network.
 *
 * E2B's default is the internet on; here a sandbox gets it only where the operator's
 * default profile allows it (--egress-profile): E2B's fields can only narrow that profile.
 *   - allow_internet_access false: the profile none at create (only lo); on a PUT, every
 *     address denied (the profile is kept).
 *   - denyOut with 0.0.0.0/0 ("nothing but allowOut"): allowOut becomes the sandbox's allow
 *     list (nothing: every address denied); other denyOut entries its deny list.
 *   - allowOut without that catch-all has nothing to open (everything the profile allows
 *     is open already) and is dropped; an allowOut exception inside a narrower denyOut
 *     range is denied (space's deny rules come first): stricter than E2B, never wider.
 *   - rules (header transforms) and egressProxy are refused (400), not ignored.
 *   - allowPublicTraffic false makes the sandbox's ports private: the ingress
 *     (e2b_ingress.h) then wants its traffic access token, which create answers with.
 * A sandbox of the profile none has nothing to narrow: a PUT on it changes nothing (204). */
#include <string.h>

#include "cleanup.h"
#include "e2b/e2b_routes.h"
#include "service/sandbox_access.h"
#include "service/sandbox_network_service.h"
#include "spaced/spaced_context.h"

static bool catch_all(const json_t *rule)
{
        const char *s = json_string_value(rule);
        return s && (strcmp(s, "0.0.0.0/0") == 0 || strcmp(s, "0.0.0.0/0:0") == 0);
}

static int string_list(const json_t *v, const char *name, struct space_error *err)
{
        size_t i;
        const json_t *e;
        if (!v || json_is_null(v))
                return 0;
        if (!json_is_array(v))
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "network.%s must be a list of strings", name);
        json_array_foreach(v, i, e)
        {
                if (!json_is_string(e))
                        return space_error_set(err, SPACE_E_INVALID_REQUEST, "network.%s must be a list of strings", name);
        }
        return 0;
}

/* Fills {"allow", "deny"} of space's form from E2B's network object and internet flag. */
static int rules_from_e2b(const json_t *net, bool internet, json_t *ret, struct space_error *err)
{
        const json_t *allow_out = json_object_get(net, "allowOut"), *deny_out = json_object_get(net, "denyOut");
        if (net && !json_is_null(net) && !json_is_object(net))
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "network must be an object {\"allowOut\", \"denyOut\"}");
        if (string_list(allow_out, "allowOut", err) < 0 || string_list(deny_out, "denyOut", err) < 0)
                return -1;
        const json_t *rules = json_object_get(net, "rules"), *proxy = json_object_get(net, "egressProxy");
        if (json_object_size(rules) > 0 || json_array_size(rules) > 0 || (proxy && !json_is_null(proxy)))
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "network.rules and network.egressProxy are not supported");
        const json_t *public_traffic = json_object_get(net, "allowPublicTraffic");
        if (public_traffic && !json_is_null(public_traffic) && !json_is_boolean(public_traffic))
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "network.allowPublicTraffic must be true or false");
        json_t *allow = json_array(), *deny = json_array();
        if (json_object_set_new(ret, "allow", allow) < 0 || json_object_set_new(ret, "deny", deny) < 0)
                return space_error_set(err, SPACE_E_INTERNAL, "out of memory");
        bool only_allowed = !internet;
        size_t i;
        const json_t *e;
        json_array_foreach(deny_out, i, e)
        {
                if (catch_all(e))
                        only_allowed = true;
                else
                        json_array_append(deny, (json_t *)e);
        }
        if (only_allowed) {
                if (internet)
                        json_array_foreach(allow_out, i, e) json_array_append(allow, (json_t *)e);
                if (json_array_size(allow) == 0)
                        json_array_append_new(deny, json_string("0.0.0.0/0"));
        }
        return 0;
}

static int internet_flag(const json_t *body, bool *ret, struct space_error *err)
{
        const char *names[] = { "allow_internet_access", "allowInternetAccess" };
        *ret = true;
        for (size_t i = 0; i < 2; i++) {
                const json_t *v = json_object_get(body, names[i]);
                if (!v || json_is_null(v))
                        continue;
                if (!json_is_boolean(v))
                        return space_error_set(err, SPACE_E_INVALID_REQUEST, "%s must be true or false", names[i]);
                *ret = *ret && json_is_true(v);
        }
        return 0;
}

int e2b_network_for_create(const struct spaced_context *ctx, const json_t *body, json_t **ret, bool *ret_private_ports,
                           struct space_error *err)
{
        bool internet;
        *ret = NULL;
        const json_t *net = json_object_get(body, "network");
        *ret_private_ports = json_is_false(json_object_get(net, "allowPublicTraffic"));
        if (internet_flag(body, &internet, err) < 0)
                return -1;
        _cleanup_json_ json_t *out = json_object();
        if (!out)
                return space_error_set(err, SPACE_E_INTERNAL, "out of memory");
        if (rules_from_e2b(net, true, out, err) < 0)
                return -1;
        /* The server's default profile none, or no internet asked for: nothing to narrow. */
        if (!internet || strcmp(ctx->cfg.egress_profile, "none") == 0) {
                *ret = json_pack("{s:s}", "profile", "none");
                return *ret ? 0 : space_error_set(err, SPACE_E_INTERNAL, "out of memory");
        }
        if (json_array_size(json_object_get(out, "allow")) == 0 && json_array_size(json_object_get(out, "deny")) == 0)
                return 0; /* the server's default, as a create without the fields */
        *ret = TAKE_PTR(out);
        return 0;
}

void e2b_sandbox_network_update(struct e2b_call *call, struct api_response *resp)
{
        struct space_error err = { 0 };
        _cleanup_json_ json_t *body = NULL, *rules = json_object();
        struct sandbox sb;
        bool internet;
        if (e2b_body_object(call, &body, resp) < 0)
                return;
        if (!rules || internet_flag(body, &internet, &err) < 0 || rules_from_e2b(body, internet, rules, &err) < 0)
                return e2b_reply_space_error(resp, &err);
        if (sandbox_access_load(call->req.ctx, &call->req.principal, call->sandbox_id, &sb, &err) < 0)
                return e2b_reply_space_error(resp, &err);
        bool none = !sb.network;
        sandbox_release(&sb);
        if (none)
                return e2b_reply_empty(resp);
        if (sandbox_network_service_replace(call->req.ctx, &call->req.principal, call->sandbox_id, rules, &sb, &err) < 0)
                return e2b_reply_space_error(resp, &err);
        sandbox_release(&sb);
        e2b_reply_empty(resp);
}
