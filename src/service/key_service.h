/* key_service: API keys as a caller may see, make and revoke them. A key never makes or
 * revokes a key with more than it has: not another project's (unless admin), not a higher
 * role, not a permission it lacks, not a later expiry (auth/principal.h). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "auth/principal.h"
#include "spaced/space_error.h"
#include "state_store/state_store.h"

struct spaced_context;

#define KEY_SECRET_SIZE 64

/* What a new key should be. Empty project / ROLE_NONE / permissions 0 / expires 0: the
 * caller's (its project, its role, all the role allows, its expiry). */
struct key_spec {
        const char *name;
        const char *project_id;
        enum principal_role role;
        uint32_t permissions; /* a narrowing of the role's; 0 = not narrowed */
        int64_t expires_at_ms;
};

/* Makes and stores a key exactly as spec says (no check: the first admin key, and what
 * key_service_create has checked). Fills *ret_key and ret_secret. */
int key_service_mint(struct spaced_context *ctx, const struct key_spec *spec, struct api_key *ret_key, char *ret_secret,
                     size_t secret_size, struct space_error *err);
/* Makes a key for p: not_found for a project p does not see, forbidden when it would have
 * more than p. */
int key_service_create(struct spaced_context *ctx, const struct principal *p, const struct key_spec *spec,
                       struct api_key *ret_key, char *ret_secret, size_t secret_size, struct space_error *err);
/* not_found ("key <id> not found") when unknown or another project's. */
int key_service_load(struct spaced_context *ctx, const struct principal *p, const char *id, struct api_key *ret,
                     struct space_error *err);
/* Revokes: not_found as key_service_load, forbidden when the key has more than p. */
int key_service_revoke(struct spaced_context *ctx, const struct principal *p, const char *id, struct space_error *err);
/* The keys p sees in project (as project_service_scope), paged. free(*ret). */
int key_service_list(struct spaced_context *ctx, const struct principal *p, const char *project, const struct store_page *page,
                     struct api_key **ret, size_t *ret_n, struct space_error *err);
/* Authentication: the caller whose secret this is (key, project, role, effective
 * permissions, expiry; request_id is left as it was). unauthorized when it names no key, an
 * expired one or one without a valid role. */
int key_service_authenticate(struct spaced_context *ctx, const char *secret, struct principal *ret, struct space_error *err);
/* As key_service_authenticate, from the secret's hash (auth/secret_hash.h): what a console
 * session holds instead of the key (service/console_session.h), checked again on every use. */
int key_service_authenticate_hash(struct spaced_context *ctx, const char *hash, struct principal *ret, struct space_error *err);
/* How many keys exist (the first start makes the admin key when none does). */
int key_service_count(struct spaced_context *ctx, int64_t *ret, struct space_error *err);
/* Removes key id with no check: the undoing of a key_service_mint whose secret could not be
 * handed over (the first admin key). */
int key_service_forget(struct spaced_context *ctx, const char *id, struct space_error *err);
/* The key's effective permissions (its role's, narrowed). */
uint32_t key_service_permissions(const struct api_key *k);
