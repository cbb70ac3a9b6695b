/* project_service: projects (tenants). Ids are 1-31 of [a-z0-9-], starting with a letter or
 * digit; "default" exists from the start. */
#pragma once

#include <stddef.h>

#include "auth/principal.h"
#include "spaced/space_error.h"
#include "state_store/state_store.h"

struct spaced_context;

/* invalid_request for a bad id, already_exists when taken. */
int project_service_create(struct spaced_context *ctx, const char *id, struct project *ret, struct space_error *err);
/* not_found ("project <id> not found") when unknown or not p's (an admin sees all). */
int project_service_get(struct spaced_context *ctx, const struct principal *p, const char *id, struct project *ret,
                        struct space_error *err);
/* The project a list shows p: the one it asked for (want; not_found as project_service_get
 * when p does not see it), else its own (NULL: every project, for the platform). Every list
 * of the service layer scopes itself with this. */
int project_service_scope(struct spaced_context *ctx, const struct principal *p, const char *want, const char **ret,
                          struct space_error *err);
/* The projects p sees, one page of them (page NULL: all), oldest first. */
int project_service_list(struct spaced_context *ctx, const struct principal *p, const struct store_page *page,
                         struct project **ret, size_t *ret_n, struct space_error *err);
