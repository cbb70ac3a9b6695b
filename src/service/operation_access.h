/* operation_access: an operation as a caller may see it. */
#pragma once

#include "auth/principal.h"
#include "spaced/space_error.h"
#include "state_store/state_store.h"

struct spaced_context;

/* not_found ("operation <id> not found") when unknown, malformed or another project's. */
int operation_access_load(struct spaced_context *ctx, const struct principal *p, const char *id, struct operation *ret,
                          struct space_error *err);
