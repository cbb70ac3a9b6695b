/* api_cursor: ?limit= and ?cursor= of the list routes, and the opaque cursor itself.
 *
 * A page holds at most `limit` rows (default API_PAGE_DEFAULT, at most API_PAGE_MAX) in the
 * list's order; `next_cursor` names the last row shown when more follow, else it is null.
 * A cursor is base64url (no padding) of an 8-byte SHA-256 prefix followed by
 * "<list>:<created_at_ms>:<id>" of that row: opaque to clients, not a secret (it only says
 * where a page ended), and refused (400) unless this list made it, unaltered. */
#pragma once

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "api/api_request.h"
#include "state_store/state_store.h"

#define API_PAGE_DEFAULT 100
#define API_PAGE_MAX 1000

struct api_page {
        struct store_page store; /* what to ask the store for: one row more than limit */
        int limit;
        char after_id[128];
};

/* Reads ?limit= and ?cursor= for the list named `list` ("sandboxes"). -1 with err (400)
 * when limit is not an integer in [1, API_PAGE_MAX] or the cursor is not one of this list's. */
int api_cursor_parse(const struct api_request *req, const char *list, struct api_page *ret, struct space_error *err);
/* How many of the n rows the store returned belong on the page. */
size_t api_page_rows(const struct api_page *page, size_t n);
/* next_cursor for a page that got n rows from the store: the cursor of the last row shown
 * (at last_ms, last_id) when there were more than the page holds, else JSON null. */
json_t *api_cursor_next(const struct api_page *page, const char *list, size_t n, int64_t last_ms, const char *last_id);
/* The row a cursor names (ms, id in ret_id), when it is one api_cursor_encode made for
 * `list`, byte for byte; -1 otherwise (ret_* untouched). */
int api_cursor_decode(const char *list, const char *token, int64_t *ret_ms, char *ret_id, size_t id_size);
/* The cursor of the row (ms, id) in `list`, in buf; -1 when it does not fit. */
int api_cursor_encode(const char *list, int64_t ms, const char *id, char *buf, size_t size);
