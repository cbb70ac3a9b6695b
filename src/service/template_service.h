/* template_service: templates as a caller sees them (its project's and the shared ones,
 * template_access.h) and the builds it submits from an uploaded context. Building by name
 * and deleting are templates/template_catalog.h's. */
#pragma once

#include <stddef.h>

#include "auth/principal.h"
#include "spaced/space_error.h"
#include "state_store/state_store.h"

struct spaced_context;

/* The row named name (exactly: no tag or digest resolution): not_found ("template <name>
 * not found") when unknown or another project's. */
int template_service_get(struct spaced_context *ctx, const struct principal *p, const char *name, struct template_record *ret,
                         struct space_error *err);
/* The templates p sees in project (NULL: p's own and the shared ones; as
 * project_service_scope), paged. Release each row and free(*ret). */
int template_service_list(struct spaced_context *ctx, const struct principal *p, const char *project,
                          const struct store_page *page, struct template_record **ret, size_t *ret_n, struct space_error *err);
/* The name:tag rows of name that p sees. Release each row and free(*ret). */
int template_service_tags(struct spaced_context *ctx, const struct principal *p, const char *name, struct template_record **ret,
                          size_t *ret_n, struct space_error *err);
/* Submits op (a template.build of op->target, its params set) for p: invalid_state while
 * that template is being built; a new name shows as a building row of p's project until
 * the build ends (the build removes it again if it fails). */
int template_service_submit_build(struct spaced_context *ctx, const struct principal *p, const struct operation *op,
                                  struct space_error *err);
