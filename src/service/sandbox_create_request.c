#include "service/sandbox_create_request.h"

#include <stdio.h>
#include <string.h>

#include "controller/warm_pool.h"
#include "operations/credential_binding.h"
#include "operations/sandbox_lifecycle.h"
#include "operations/sandbox_memory.h"
#include "runtime/platform_ca.h"
#include "runtime/runtime_registry.h"
#include "service/policy_gate.h"
#include "service/sandbox_network_request.h"
#include "service/snapshot_access.h"
#include "service/template_access.h"
#include "spaced/spaced_context.h"
#include "templates/template_ref.h"

void sandbox_create_request_init(const struct spaced_context *ctx, struct sandbox_create_request *req)
{
        *req = (struct sandbox_create_request){
                .template_ref = "busybox",
                .resources = { .cpus = 1.0,
                               .memory_mb = 512,
                               .pids = 256,
                               .disk_mb = ctx->cfg.disk_quota ? ctx->cfg.sandbox_disk_mb : 0 },
                .on_timeout = "stop",
        };
}

void sandbox_create_request_release(struct sandbox_create_request *req)
{
        if (!req)
                return;
        json_decref(req->env);
        json_decref(req->metadata);
        json_decref(req->rolling);
        json_decref(req->idle);
        json_decref(req->network);
        req->env = req->metadata = req->rolling = req->network = req->idle = NULL;
}

static int validate(const struct spaced_context *ctx, const struct sandbox_create_request *req, struct space_error *err)
{
        if (req->disk_given && !ctx->cfg.disk_quota)
                return space_error_set(err, SPACE_E_UNSUPPORTED,
                                       "resources.disk_mb: disk quotas are off on this server (--disk-quota off)");
        if (req->snapshot_id && req->template_ref)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "give template or snapshot_id, not both");
        if (!req->snapshot_id && !req->template_ref)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "give template or snapshot_id");
        if (req->template_ref && !template_ref_ok(req->template_ref))
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "template name \"%.160s\" is not valid", req->template_ref);
        if (req->runtime && strcmp(req->runtime, "namespaces") && strcmp(req->runtime, "gvisor") &&
            strcmp(req->runtime, "microvm"))
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "runtime must be namespaces, gvisor or microvm");
        if (req->runtime && !runtime_registry_find(&ctx->runtimes, req->runtime))
                return space_error_set(err, SPACE_E_UNSUPPORTED,
                                       strcmp(req->runtime, "gvisor") == 0
                                               ? "the gvisor runtime is not available on this server: it needs runsc with the "
                                                 "systrap platform (Debian package runsc, from bookworm-backports; "
                                                 "scripts/install-deps installs it)"
                                               : strcmp(req->runtime, "microvm") == 0
                                               ? "the microvm runtime is not available on this server: it needs QEMU (Debian "
                                                 "package qemu-system-x86) and a Debian kernel (linux-image-cloud-amd64); "
                                                 "scripts/install-deps installs both"
                                               : "the %s runtime is not available on this server",
                                       req->runtime);
        if (strcmp(req->on_timeout, "pause") && strcmp(req->on_timeout, "stop") && strcmp(req->on_timeout, "destroy"))
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "on_timeout must be pause, stop or destroy");
        return 0;
}

/* name@digest: the row it names now, and the digest it must still have when the row is
 * stored (sandbox_lifecycle_create compares it with the template's). */
static int bind_template(struct spaced_context *ctx, const char *ref, struct sandbox *sb, struct space_error *err)
{
        const char *at = strchr(ref, '@');
        snprintf(sb->template_name, sizeof(sb->template_name), "%s", ref);
        if (!at)
                return 0;
        struct template_record t;
        if (template_ref_resolve(ctx, ref, &t) < 0)
                return space_error_set(err, SPACE_E_NOT_FOUND, "template %.160s not found", ref);
        snprintf(sb->template_name, sizeof(sb->template_name), "%s", t.name);
        template_record_release(&t);
        sb->environment = json_pack("{s:s}", "pinned_digest", at + 1);
        return sb->environment ? 0 : space_error_set(err, SPACE_E_INTERNAL, "out of memory");
}

int sandbox_create_request_submit(struct spaced_context *ctx, struct sandbox_create_request *req, struct sandbox *ret_sb,
                                  struct operation *ret_op, struct space_error *err)
{
        struct sandbox sb = { 0 };
        if (validate(ctx, req, err) < 0)
                return -1;
        if (req->snapshot_id) /* sandbox_lifecycle_create takes the template from the snapshot's origin */
                snprintf(sb.parent_snapshot_id, sizeof(sb.parent_snapshot_id), "%s", req->snapshot_id);
        else if (bind_template(ctx, req->template_ref, &sb, err) < 0)
                goto fail;
        snprintf(sb.on_timeout, sizeof(sb.on_timeout), "%s", req->on_timeout);
        if (req->runtime) /* sandbox_lifecycle_create keeps it instead of the template's binding */
                snprintf(sb.runtime, sizeof(sb.runtime), "%s", req->runtime);
        sb.timeout_s = req->timeout_s;
        sb.resources = req->resources;
        sb.env = req->env ? json_deep_copy(req->env) : json_object();
        sb.metadata = req->metadata ? json_deep_copy(req->metadata) : json_object();
        if (!sb.environment)
                sb.environment = json_object();
        sb.rolling = json_incref(req->rolling);
        sb.idle = json_incref(req->idle);
        sb.private_ports = req->private_ports;
        if (sandbox_network_request_parse(ctx, req->network, &sb.network, err) < 0)
                goto fail;
        if (sb.network && req->runtime && strcmp(req->runtime, "microvm") == 0) {
                space_error_set(err, SPACE_E_UNSUPPORTED, "the %s runtime has no egress network yet: give network profile none",
                                req->runtime);
                goto fail;
        }
        if (!sb.env || !sb.metadata || !sb.environment) {
                space_error_set(err, SPACE_E_INTERNAL, "out of memory");
                goto fail;
        }
        if (!req->caller) {
                space_error_set(err, SPACE_E_INTERNAL, "a create without a caller");
                goto fail;
        }
        snprintf(sb.project_id, sizeof(sb.project_id), "%s", req->caller->project_id);
        /* A sandbox with egress sees the names of its project's bound secrets, never a value:
         * SPACE_SECRET_<NAME>=space-placeholder-<name> (the gateway puts the real one on). */
        if (sb.network) {
                credential_binding_placeholders(ctx, sb.project_id, "", sb.env);
                /* its TLS clients trust the platform CA of HTTPS interception (docs/network.md);
                 * variables the caller gave are left as they are */
                const char *trust[][2] = { { "SSL_CERT_FILE", PLATFORM_CA_SANDBOX_BUNDLE },
                                           { "REQUESTS_CA_BUNDLE", PLATFORM_CA_SANDBOX_BUNDLE },
                                           { "NODE_EXTRA_CA_CERTS", PLATFORM_CA_SANDBOX_CA } };
                for (size_t i = 0; i < sizeof(trust) / sizeof(trust[0]); i++)
                        if (!json_object_get(sb.env, trust[i][0]))
                                json_object_set_new(sb.env, trust[i][0], json_string(trust[i][1]));
        }
        struct snapshot seen;
        if ((sb.parent_snapshot_id[0] ? snapshot_access_load(ctx, req->caller, sb.parent_snapshot_id, &seen, err)
                                      : template_access_check(ctx, req->caller, sb.template_name, false, err)) < 0)
                goto fail;
        if (sandbox_lifecycle_bind(ctx, &sb, err) < 0 || sandbox_memory_rolling_check(ctx, &sb, err) < 0)
                goto fail;
        if (policy_gate_create(ctx, sb.project_id, sb.template_name[0] ? sb.template_name : NULL, err) < 0)
                goto fail;
        /* A warm sandbox made for exactly this create is claimed; otherwise it is made now. */
        if (warm_pool_claim(ctx->warm, &sb)) {
                if (sandbox_lifecycle_insert_running(ctx, &sb, ret_op, err) < 0) {
                        warm_pool_discard(ctx->warm, &sb);
                        goto fail;
                }
        } else if (sandbox_lifecycle_insert(ctx, &sb, ret_op, err) < 0)
                goto fail;
        *ret_sb = sb;
        return 0;
fail:
        sandbox_release(&sb);
        return -1;
}
