/* api_render: records as the JSON the API returns. */
#pragma once

#include <jansson.h>

#include "state_store/state_store.h"

json_t *api_render_time(int64_t ms); /* RFC 3339 string, or null for 0 */
json_t *api_render_sandbox(const struct sandbox *sb);
json_t *api_render_operation(const struct operation *op);
json_t *api_render_template(const struct template_record *t);
json_t *api_render_key(const struct api_key *k);
json_t *api_render_snapshot(const struct snapshot *snap);
