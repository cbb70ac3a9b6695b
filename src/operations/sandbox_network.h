/* sandbox_network: a sandbox's egress, end to end: its driver's link toward the host
 * (runtime_driver_ops.network_attach) and its policy in the egress gateway's map (the
 * profile's definition plus the sandbox's own allow and deny lists, egress_policy.h). A
 * sandbox of the profile none (sb->network NULL) gets nothing and costs nothing. */
#pragma once

#include "spaced/space_error.h"
#include "state_store/state_store.h"

struct spaced_context;

/* After the driver started sb: 0, or -1 with err (the caller stops the sandbox). */
int sandbox_network_attach(struct spaced_context *ctx, const struct sandbox *sb, struct space_error *err);
/* After sb->network changed in the store: a sandbox with a link gets its new policy in the
 * gateway now (its open connections that the new policy denies are closed there); one
 * without (stopped) gets it at its next start. 0, or -1 with err. */
int sandbox_network_update(struct spaced_context *ctx, const struct sandbox *sb, struct space_error *err);
/* After the driver stopped sb: its policy leaves the gateway's map. */
void sandbox_network_forget(struct spaced_context *ctx, const struct sandbox *sb);
/* egress_gateway_config.on_record (arg: the spaced_context): a connection the gateway decided
 * becomes an audit row, action egress.connection, target the sandbox, in its project; the
 * rest (name, addresses, port, decision, reason, bytes, duration) is its detail. */
void sandbox_network_record(void *arg, const json_t *record);
/* At start of spaced: the links and policies of the sandboxes that ran on without it. */
void sandbox_network_restore(struct spaced_context *ctx);
