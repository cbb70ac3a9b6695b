/* build_log: the log of one template build or import, <state>/logs/build-<op>.log. Builds
 * write it line by line; GET /v1/templates/builds/{op}/log serves it, following it while the
 * build runs. Kept behind this small interface so that it can move onto the sequence-numbered
 * event log of the data plane. */
#pragma once

#include <stddef.h>
#include <stdio.h>

struct build_log {
        FILE *f;
};

/* Opens (appending: a build redone after a crash continues its log). 0 or -errno. */
int build_log_open(const char *state_dir, const char *op_id, struct build_log *ret);
int build_log_path(const char *state_dir, const char *op_id, char *buf, size_t size);
void build_log_printf(struct build_log *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Raw bytes (a step's output); a newline is added if they do not end with one. */
void build_log_write(struct build_log *l, const void *data, size_t len);
/* Raw bytes as they come (a step's output while it runs). */
void build_log_append(struct build_log *l, const void *data, size_t len);
void build_log_close(struct build_log *l);
