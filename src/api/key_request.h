/* key_request: the body of POST /v1/keys as a struct key_spec. */
#pragma once

#include <jansson.h>

#include "service/key_service.h"
#include "spaced/space_error.h"

/* {"name", "project"?, "role"?, "permissions"?: [names], "expires_at"?: RFC 3339 UTC,
 * "expires_in_s"?}: invalid_request for anything else. spec's strings borrow from body. */
int key_request_parse(const json_t *body, int64_t now_ms, struct key_spec *ret, struct space_error *err);
