/* e2b_multipart: an incremental multipart/form-data parser for envd's /files uploads.
 * Bytes are fed as they arrive, in pieces of any size; part data is handed on as soon as
 * it cannot be the start of a boundary, so memory stays bounded by the largest piece fed
 * plus the boundary (and a part's headers, at most E2B_MULTIPART_HEADERS_MAX). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define E2B_MULTIPART_HEADERS_MAX (16u << 10)

/* Callbacks return 0, or -1 to stop the parse (feed then returns -ECANCELED). */
struct e2b_multipart_ops {
        int (*part_begin)(void *cls, const char *headers, size_t len);
        int (*part_data)(void *cls, const char *data, size_t len);
        int (*part_end)(void *cls);
};

struct e2b_multipart;

/* A parser for a body of content_type ("multipart/form-data; boundary=…"); -EINVAL when
 * it names no boundary. */
int e2b_multipart_new(const char *content_type, const struct e2b_multipart_ops *ops, void *cls, struct e2b_multipart **ret);
/* 0; -EBADMSG malformed; -E2BIG a part's headers are too long; -ECANCELED a callback
 * stopped it; -ENOMEM. After a failure the parser takes nothing more. */
int e2b_multipart_feed(struct e2b_multipart *m, const char *data, size_t len);
/* At the end of the body: 0 when the closing boundary was seen, -EBADMSG otherwise. */
int e2b_multipart_finish(const struct e2b_multipart *m);
void e2b_multipart_free(struct e2b_multipart *m);
/* filename="…" of a part's headers, copied to buf. */
bool e2b_multipart_filename(const char *headers, size_t len, char *buf, size_t size);
