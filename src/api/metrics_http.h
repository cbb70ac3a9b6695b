/* metrics_http: GET /metrics over HTTP — the route on spaced's API listener (admin keys:
 * the figures span every project) and, with --metrics-listen, a listener of its own that
 * answers /metrics and nothing else, without a key, for the operator's Prometheus. */
#pragma once

#include <stddef.h>

#include "api/api_request.h"

struct spaced_context;
struct metrics_listener;

void route_metrics(struct api_request *req, struct api_response *resp);

/* Takes fd (bound by http_listener_bind), on failure too. */
int metrics_listener_start(struct spaced_context *ctx, int fd, struct metrics_listener **ret, char *reason, size_t reason_size);
void metrics_listener_quiesce(struct metrics_listener *l);
unsigned metrics_listener_connections(const struct metrics_listener *l);
void metrics_listener_free(struct metrics_listener *l);
