/* api_render: records as the JSON the API returns. */
#pragma once

#include <jansson.h>

#include "state_store/state_store.h"
#include "storage/pool_health.h"

json_t *api_render_time(int64_t ms); /* RFC 3339 string, or null for 0 */
/* pool: the storage pool's latest check, shown as the sandbox's "storage" (every sandbox of
 * this host lives on it: a read-only pool makes each one read-only); NULL: null. */
json_t *api_render_sandbox(const struct sandbox *sb, const struct pool_health *pool);
/* {"profile", "allow", "deny"}: the profile none with empty lists when it has no network. */
json_t *api_render_network(const struct sandbox *sb);
json_t *api_render_operation(const struct operation *op);
json_t *api_render_template(const struct template_record *t);
json_t *api_render_key(const struct api_key *k);
/* The names of the permission bits in mask, as an array (auth/principal.h). */
json_t *api_render_permissions(uint32_t mask);
json_t *api_render_snapshot(const struct snapshot *snap);
