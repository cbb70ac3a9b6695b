/* request_id: the id of one HTTP request, X-Request-Id. A client's own id is kept when it
 * is well-formed: 1 to 64 characters of [A-Za-z0-9._-]. Anything else (empty, longer,
 * spaces, quotes, control bytes, non-ASCII) is replaced by a made one, never echoed or
 * logged: 32 hex digits, 128 random bits. */
#pragma once

#include <stdbool.h>

#define REQUEST_ID_MAX 64
#define REQUEST_ID_SIZE (REQUEST_ID_MAX + 1)

bool request_id_valid(const char *s);
/* Fills buf with the client's id when it is valid, else with a new one. */
void request_id_take(const char *from_client, char buf[REQUEST_ID_SIZE]);
