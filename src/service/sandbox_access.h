/* sandbox_access: a sandbox as a caller may see it. */
#pragma once

#include "auth/principal.h"
#include "spaced/space_error.h"
#include "state_store/state_store.h"

struct spaced_context;

/* Loads sandbox id for p: not_found ("sandbox <id> not found") when unknown, malformed or
 * another project's. */
int sandbox_access_load(struct spaced_context *ctx, const struct principal *p, const char *id, struct sandbox *ret,
                        struct space_error *err);
