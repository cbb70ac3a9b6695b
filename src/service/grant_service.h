/* grant_service: just-in-time access (docs/network.md, "Grants"): a grant puts one credential
 * binding on one sandbox for a bounded time. A grant is a sandbox-scoped binding row whose
 * spec says what it was granted from and until when ({"grant": {"of", "expires_at_ms"}}),
 * so the gateway path is the bindings' own; a binding made with "grant_only" acts through
 * grants alone. Expiry needs nobody: the gateway stops using a grant at its deadline, and a
 * thread here removes it (audit row secret.grant_expired) and sends the sandbox's
 * credentials again. Grant and revoke are audited as their routes (grant.create,
 * grant.delete); each use as secret.used. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "auth/principal.h"
#include "spaced/space_error.h"
#include "state_store/state_store.h"

struct spaced_context;

#define GRANT_TTL_MAX_S (7 * 86400)

/* Grants binding (an id of the sandbox's project, not itself a grant) to sandbox_id for
 * ttl_s seconds (1..GRANT_TTL_MAX_S). */
int grant_service_create(struct spaced_context *ctx, const struct principal *p, const char *sandbox_id, const char *binding,
                         int64_t ttl_s, struct binding_record *ret, struct space_error *err);
/* The sandbox's grants that have not expired. binding_record_array_free. */
int grant_service_list(struct spaced_context *ctx, const struct principal *p, const char *sandbox_id, struct binding_record **ret,
                       size_t *ret_n, struct space_error *err);
int grant_service_revoke(struct spaced_context *ctx, const struct principal *p, const char *sandbox_id, const char *grant_id,
                         struct space_error *err);
/* Removes the grants past their deadline (of every project), each audited; spaced runs it
 * every second (service/periodic_task.h). */
void grant_service_expire(struct spaced_context *ctx);
