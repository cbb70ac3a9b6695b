/* session_service: a sandbox's attach sessions as a caller sees them. Opening, renewing
 * and revoking them, and their tokens, are data_plane/attach_session.h's. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "auth/principal.h"
#include "spaced/space_error.h"
#include "state_store/state_store.h"

struct spaced_context;

/* The sessions of sandbox_id, which p must see (not_found as sandbox_access_load), paged.
 * free(*ret). */
int session_service_list(struct spaced_context *ctx, const struct principal *p, const char *sandbox_id,
                         const struct store_page *page, struct attach_session **ret, size_t *ret_n, struct space_error *err);
/* Whether session id is still open (not revoked, not expired): what a stream opened with
 * its token asks now and then. */
bool session_service_active(struct spaced_context *ctx, const char *id);
