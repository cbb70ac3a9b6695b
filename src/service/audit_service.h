/* audit_service: the audit log (api/request_trail.h says what is recorded and when). */
#pragma once

#include <stddef.h>

#include "auth/principal.h"
#include "spaced/space_error.h"
#include "state_store/state_store.h"

struct spaced_context;

/* Appends one row. */
int audit_service_record(struct spaced_context *ctx, const struct audit_record *a, struct space_error *err);
/* The rows p may read that match f, oldest first, paged: an admin reads every project's, an
 * owner its own project's (f->project naming another one is not_found, as on every list).
 * f->project is replaced by the scope. free(*ret). */
int audit_service_list(struct spaced_context *ctx, const struct principal *p, struct audit_filter *f,
                       const struct store_page *page, struct audit_record **ret, size_t *ret_n, struct space_error *err);
