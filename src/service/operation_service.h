/* operation_service: operations as a caller sees them (one at a time: operation_access.h). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "auth/principal.h"
#include "spaced/space_error.h"
#include "state_store/state_store.h"

struct spaced_context;

/* The operations p sees in project (as project_service_scope), on target (NULL: any), in
 * state (< 0: any), newest first, paged. free(*ret). */
int operation_service_list(struct spaced_context *ctx, const struct principal *p, const char *project, const char *target,
                           int state, const struct store_page *page, struct operation **ret, size_t *ret_n,
                           struct space_error *err);
/* A template build (an operation of kind template.build): not_found ("build <id> not
 * found") when unknown, malformed, another kind or another project's. */
int operation_service_get_build(struct spaced_context *ctx, const struct principal *p, const char *id, struct operation *ret,
                                struct space_error *err);
/* Whether operation id has ended (succeeded or failed) or is gone for p, with the row when
 * it is still there (*ret zeroed otherwise): what a stream that follows it asks. */
bool operation_service_over(struct spaced_context *ctx, const struct principal *p, const char *id, struct operation *ret);
