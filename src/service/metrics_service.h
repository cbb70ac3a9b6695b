/* metrics_service: the text of a /metrics scrape — the counters the daemon keeps
 * (spaced/metrics.h) and the figures read at the scrape (sandboxes by state and runtime,
 * unfinished operations, the pool's condition and room). Who may read it is the caller's
 * business: the API route asks for the platform permission, the --metrics-listen listener
 * is for the operator's own network. */
#pragma once

#include <stddef.h>

#include "spaced/space_error.h"

struct spaced_context;

/* Prometheus' text format 0.0.4. *ret (NUL-terminated, *ret_len bytes) is the caller's to free. */
int metrics_service_text(struct spaced_context *ctx, char **ret, size_t *ret_len, struct space_error *err);

#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
