/* secret_service: a project's platform-held secrets (docs/network.md, "Platform-held
 * credentials") as a caller manages them. A value goes in once, sealed under the project's
 * data key (auth/secret_keyring.h), and never comes back out through the API: what create,
 * get and list return is the name and the dates. Plaintext is erased after sealing and
 * never logged. Which project: the caller's, or ?project= for the platform. */
#pragma once

#include <stddef.h>

#include "auth/principal.h"
#include "spaced/space_error.h"
#include "state_store/state_store.h"

struct spaced_context;

/* A secret's name: [A-Z][A-Z0-9_]{0,62} (the sandbox sees SPACE_SECRET_<NAME>). */
bool secret_service_name_valid(const char *name);
/* value: 1..SECRET_VALUE_MAX bytes, no NUL, CR or LF (it goes into a header). */
int secret_service_create(struct spaced_context *ctx, const struct principal *p, const char *project, const char *name,
                          const char *value, size_t len, struct secret_record *ret, struct space_error *err);
int secret_service_get(struct spaced_context *ctx, const struct principal *p, const char *project, const char *name,
                       struct secret_record *ret, struct space_error *err);
int secret_service_list(struct spaced_context *ctx, const struct principal *p, const char *project, struct secret_record **ret,
                        size_t *ret_n, struct space_error *err);
/* The running sandboxes that use it lose it at once (the gateway's map is sent again). */
int secret_service_delete(struct spaced_context *ctx, const struct principal *p, const char *project, const char *name,
                          struct space_error *err);
/* After the project's secrets or bindings changed: every running sandbox of the project
 * (sandbox_id NULL) or that one gets its credentials in the gateway anew. */
void secret_service_refresh(struct spaced_context *ctx, const char *project_id, const char *sandbox_id);
