/* sandbox_commands: the commands of a sandbox as a caller sees them. Starting, following
 * and signalling them are data_plane/command_service.h's. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "auth/principal.h"
#include "spaced/space_error.h"
#include "state_store/state_store.h"

struct spaced_context;

/* The commands of sandbox_id, which p must see (not_found as sandbox_access_load): only the
 * unfinished ones with unfinished_only; paged (page NULL: all). command_record_array_free. */
int sandbox_commands_list(struct spaced_context *ctx, const struct principal *p, const char *sandbox_id, bool unfinished_only,
                          const struct store_page *page, struct command_record **ret, size_t *ret_n, struct space_error *err);
