/* e2b_file_meta: envd's file metadata (envd 0.6.2). An upload's `X-Metadata-<key>: <value>`
 * headers become the file's metadata (keys lowercased; the agent keeps them as
 * "user.e2b.<key>" attributes), and EntryInfo carries them back as "metadata". */
#pragma once

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "spaced/space_error.h"

#define E2B_FILE_META_HEADER "X-Metadata-"
#define E2B_FILE_META_KEY_MAX 246   /* the xattr name limit less "user.e2b." */
#define E2B_FILE_META_TOTAL 4096    /* keys + values + "user.e2b." per key */
#define E2B_FILE_META_WIRE_MAX 8192 /* the pairs as the agent takes them (AGENT_FILE_META_MAX) */

struct e2b_file_meta {
        uint8_t pairs[E2B_FILE_META_WIRE_MAX]; /* "key\0value\0"… */
        size_t len;
        size_t total; /* counted as envd counts it */
};

/* Adds the header name: value when name is an X-Metadata- header (else nothing): 0, or -1
 * with err (invalid_request) for a key or value envd refuses. A key already there keeps
 * its first value. */
int e2b_file_meta_add_header(struct e2b_file_meta *m, const char *name, const char *value, struct space_error *err);
/* {"key": "value", …} of pairs (len bytes); NULL when there are none. Returns a new
 * reference. */
json_t *e2b_file_meta_render_new(const uint8_t *pairs, size_t len);
