#include "operations/sandbox_network.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress/egress_profiles.h"
#include "operations/credential_binding.h"
#include "runtime/egress_gateway.h"
#include "spaced/log.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

/* A new reference: the profile's definition with the sandbox's lists. A profile the server
 * no longer has (the file changed) denies everything: fail closed. */
static json_t *policy_new(struct spaced_context *ctx, const struct sandbox *sb)
{
        const char *profile = json_string_value(json_object_get(sb->network, "profile"));
        const json_t *def = egress_profiles_find(ctx->egress_profiles, profile);
        json_t *p = def ? json_deep_copy(def) : json_pack("{s:s, s:s}", "profile", profile ? profile : "", "default", "deny");
        if (!def)
                log_warn("sandbox.egress_profile_missing", "sandbox=%s profile=\"%s\" effect=\"all egress denied\"", sb->id,
                         LOG_ESC(profile ? profile : ""));
        if (p) {
                json_object_set(p, "allow", json_object_get(sb->network, "allow"));
                json_object_set(p, "deny", json_object_get(sb->network, "deny"));
                /* read-only: the profile's or the sandbox's own (which can only add it) */
                if (json_is_true(json_object_get(sb->network, "read_only")))
                        json_object_set_new(p, "read_only", json_true());
                /* The credentials its bindings put on its requests (plaintext: this line goes
                 * to the gateway alone). Unreadable bindings: none, logged. */
                json_t *creds = credential_binding_gateway_new(ctx, sb);
                if (!creds)
                        log_warn("sandbox.credentials_unread", "sandbox=%s effect=\"no credentials injected\"", sb->id);
                json_object_set_new(p, "credentials", creds ? creds : json_array());
        }
        return p;
}

int sandbox_network_attach(struct spaced_context *ctx, const struct sandbox *sb, struct space_error *err)
{
        if (!sb->network)
                return 0;
        const struct runtime_driver *d = runtime_registry_for(&ctx->runtimes, sb, err);
        if (!d)
                return -1;
        if (!d->ops->network_attach || !ctx->egress)
                return space_error_set(err, SPACE_E_UNSUPPORTED, "runtime %s has no egress network", d->ops->name);
        char addr[16];
        if (d->ops->network_attach(d, sb, addr, sizeof(addr), err) < 0)
                return -1;
        json_t *policy = policy_new(ctx, sb);
        int r = policy ? egress_gateway_set(ctx->egress, addr, sb->id, policy) : -ENOMEM;
        json_decref(policy);
        if (r < 0)
                return space_error_errno(err, r, "hand the egress policy of %s to the gateway", sb->id);
        log_info("sandbox.network_attached", "sandbox=%s addr=%s", sb->id, addr);
        return 0;
}

int sandbox_network_update(struct spaced_context *ctx, const struct sandbox *sb, struct space_error *err)
{
        char addr[16];
        if (!sb->network || !ctx->egress || egress_gateway_addr_of(ctx->egress, sb->id, addr) < 0)
                return 0;
        json_t *policy = policy_new(ctx, sb);
        int r = policy ? egress_gateway_set(ctx->egress, addr, sb->id, policy) : -ENOMEM;
        json_decref(policy);
        if (r < 0)
                return space_error_errno(err, r, "hand the new egress policy of %s to the gateway", sb->id);
        log_info("sandbox.network_changed", "sandbox=%s addr=%s", sb->id, addr);
        return 0;
}

void sandbox_network_forget(struct spaced_context *ctx, const struct sandbox *sb)
{
        if (sb->network && ctx->egress)
                egress_gateway_forget(ctx->egress, sb->id);
}

/* The gateway put a credential on a request of sandbox (once per binding and connection):
 * an audit row secret.used, its detail the binding, secret name, destination, port and
 * method (the gateway never sends the value back). */
static void secret_used_record(struct spaced_context *ctx, const char *sandbox, const json_t *record)
{
        struct audit_record a = { .created_at_ms = wallclock_now_ms() };
        random_id("aud-", 12, a.id, sizeof(a.id));
        snprintf(a.action, sizeof(a.action), "secret.used");
        snprintf(a.target, sizeof(a.target), "%s", sandbox);
        struct sandbox sb;
        if (STORE(ctx, sandbox_get, sandbox, &sb) == 0) {
                snprintf(a.project, sizeof(a.project), "%s", sb.project_id);
                sandbox_release(&sb);
        }
        json_t *d = json_pack("{s:s, s:s, s:s, s:O, s:s}", "binding", json_string_value(json_object_get(record, "binding")) ?: "",
                              "secret", json_string_value(json_object_get(record, "secret")) ?: "", "name",
                              json_string_value(json_object_get(record, "name")) ?: "", "port",
                              json_object_get(record, "port") ?: json_null(), "method",
                              json_string_value(json_object_get(record, "method")) ?: "");
        char *text = d ? json_dumps(d, JSON_COMPACT) : NULL;
        json_decref(d);
        if (text && strlen(text) < sizeof(a.detail))
                memcpy(a.detail, text, strlen(text) + 1);
        free(text);
        int r = STORE(ctx, audit_insert, &a);
        if (r < 0)
                log_error("audit.write_failed", "error=\"%s\" action=secret.used target=%s", strerror(-r), sandbox);
}

void sandbox_network_record(void *arg, const json_t *record)
{
        struct spaced_context *ctx = arg;
        const char *sandbox = json_string_value(json_object_get(record, "sandbox"));
        const char *decision = json_string_value(json_object_get(record, "decision"));
        const char *op = json_string_value(json_object_get(record, "op")) ?: "";
        if (sandbox && strcmp(op, "secret_used") == 0)
                return secret_used_record(ctx, sandbox, record);
        if (!sandbox || !decision || strcmp(op, "connection") != 0)
                return;
        struct audit_record a = { .created_at_ms = wallclock_now_ms() };
        random_id("aud-", 12, a.id, sizeof(a.id));
        snprintf(a.action, sizeof(a.action), "egress.connection");
        snprintf(a.target, sizeof(a.target), "%s", sandbox);
        snprintf(a.source, sizeof(a.source), "%s", json_string_value(json_object_get(record, "src")) ?: "");
        if (strcmp(decision, "deny") == 0)
                snprintf(a.error_code, sizeof(a.error_code), "egress_denied");
        struct sandbox sb;
        if (STORE(ctx, sandbox_get, sandbox, &sb) == 0) {
                snprintf(a.project, sizeof(a.project), "%s", sb.project_id);
                sandbox_release(&sb);
        }
        /* The detail is the record less what the row's columns hold; a name longer than the
         * column allows is cut (the log line keeps it whole). */
        json_t *d = json_deep_copy(record);
        json_object_del(d, "op");
        json_object_del(d, "sandbox");
        json_object_del(d, "src");
        char *text = d ? json_dumps(d, JSON_COMPACT) : NULL;
        if (text && strlen(text) >= sizeof(a.detail)) {
                json_object_set_new(d, "name", json_stringn(json_string_value(json_object_get(d, "name")) ?: "", 200));
                json_object_set_new(d, "reason", json_stringn(json_string_value(json_object_get(d, "reason")) ?: "", 100));
                free(text);
                text = json_dumps(d, JSON_COMPACT);
        }
        json_decref(d);
        if (text && strlen(text) < sizeof(a.detail))
                memcpy(a.detail, text, strlen(text) + 1);
        free(text);
        int r = STORE(ctx, audit_insert, &a);
        if (r < 0)
                log_error("audit.write_failed",
                          "error=\"%s\" action=egress.connection target=%s decision=%s note=\"the gateway's "
                          "log line is the record\"",
                          strerror(-r), sandbox, decision);
}

void sandbox_network_restore(struct spaced_context *ctx)
{
        struct sandbox *all = NULL;
        size_t n = 0;
        if (STORE(ctx, sandbox_list, -1, NULL, NULL, &all, &n) < 0)
                return;
        for (size_t i = 0; i < n; i++) {
                struct space_error err = { 0 };
                if (!all[i].network || (all[i].state != SANDBOX_RUNNING && all[i].state != SANDBOX_PAUSED) ||
                    !spaced_node_owns(ctx, &all[i]))
                        continue;
                if (sandbox_network_attach(ctx, &all[i], &err) < 0)
                        log_warn("sandbox.network_restore_failed", "sandbox=%s error=\"%s\" effect=\"no egress\"", all[i].id,
                                 LOG_ESC(err.message));
        }
        sandbox_array_free(all, n);
}
