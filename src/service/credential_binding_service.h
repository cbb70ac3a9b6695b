/* credential_binding_service: where the gateway puts a project's secrets (docs/network.md,
 * "Platform-held credentials"): bindings on the whole project or on one of its sandboxes,
 * validated by operations/credential_binding.h. A change reaches the running sandboxes it
 * concerns at once (the gateway's map is sent again); the placeholders a sandbox sees in
 * its environment are set at its create. */
#pragma once

#include <jansson.h>
#include <stddef.h>

#include "auth/principal.h"
#include "spaced/space_error.h"
#include "state_store/state_store.h"

struct spaced_context;

/* body: the binding (credential_binding.h). The secret must exist in the project; a
 * sandbox_id must be one of its sandboxes. */
int credential_binding_service_create(struct spaced_context *ctx, const struct principal *p, const char *project,
                                      const json_t *body, struct binding_record *ret, struct space_error *err);
/* sandbox_id NULL: all of the project's; else the project-wide ones and that sandbox's. */
int credential_binding_service_list(struct spaced_context *ctx, const struct principal *p, const char *project,
                                    const char *sandbox_id, struct binding_record **ret, size_t *ret_n, struct space_error *err);
int credential_binding_service_get(struct spaced_context *ctx, const struct principal *p, const char *project, const char *id,
                                   struct binding_record *ret, struct space_error *err);
int credential_binding_service_delete(struct spaced_context *ctx, const struct principal *p, const char *project, const char *id,
                                      struct space_error *err);
