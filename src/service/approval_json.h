/* approval_json: an approval as the API shows it (GET /v1/approvals/{id}) and as the
 * approval webhook delivers it: the one rendering of an approval_record. */
#pragma once

#include <jansson.h>

#include "state_store/state_store.h"

/* A new object, or NULL out of memory. */
json_t *approval_json(const struct approval_record *a);
