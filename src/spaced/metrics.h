/* metrics: the daemon's own counters and histograms since it started, kept in memory and
 * rendered in Prometheus' text exposition format (version 0.0.4).
 *
 * One registry per daemon (spaced_context.metrics); every function takes it and does
 * nothing when it is NULL (unit tests hand a context without one). Label values come from
 * bounded sets the callers own (route actions, HTTP statuses, operation kinds, stream
 * kinds); even so a family holds at most METRICS_SERIES_MAX series, and what would make
 * more is counted under one series whose labels are all "other": no input grows the
 * registry without bound. Label values are escaped when rendered. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define METRICS_SERIES_MAX 512

struct metrics;

int metrics_new(struct metrics **ret);
void metrics_free(struct metrics *m);

/* A request answered by a front door ("v1", "e2b", "metrics"): its route's action ("sandbox.create";
 * "unknown" when no route matched), the status sent, and how long it took. */
void metrics_http_request(struct metrics *m, const char *door, const char *action, unsigned status, int64_t duration_us);
/* An operation that ended: waited_us from accepted to started, ran_us from started to its
 * end. A sandbox.create that succeeded is also the create → ready figure. */
void metrics_operation_ended(struct metrics *m, const char *kind, bool succeeded, int64_t waited_us, int64_t ran_us);
/* Bytes appended to command logs, and bytes dropped by the per-sandbox cap. */
void metrics_command_log(struct metrics *m, uint64_t written, uint64_t dropped);
/* A long-lived stream of a kind ("command_events", "file_watch", …) opened (+1) or closed (-1). */
void metrics_stream(struct metrics *m, const char *kind, int delta);

/* Writes every family (with its HELP and TYPE lines) to out. 0, or -errno. */
int metrics_render(struct metrics *m, FILE *out);

/* Writes one sample line: name{k1="v1",…} value, escaping each value as the format asks
 * (backslash, double quote, newline). labels: n names and n values. */
void metrics_write_sample(FILE *out, const char *name, const char *const *label_names, const char *const *label_values, int n,
                          double value);
