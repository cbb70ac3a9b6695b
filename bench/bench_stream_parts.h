/* The parts of the stream measure (bench_stream*.c), for each other. */
#pragma once

#include <sys/types.h>

#include "bench_measure.h"
#include "bench_sse.h"

/* The exit_code of an exit event's data; -1 when null or absent. */
int bench_stream_exit_code(const struct bench_sse_event *ev);

/* cfg->streams commands in cfg->stream_sandboxes new sandboxes, each waiting on stdin, their
 * event streams all open at once on one thread; spaced's memory and threads then; stdin
 * to each; every stream must get its line and its exit (bench_stream_fanout.c). Returns 0,
 * or -errno when it could not run at all. */
int bench_stream_fanout(const struct bench_config *cfg, struct bench_sandboxes *set, struct bench_stream_fanout *ret);

/* One command printing cfg->resume_lines numbered lines, followed by cfg->resume_clients
 * threads that each reconnect with Last-Event-ID after a few events, until the exit; each
 * copy must be the whole output. The time from each connect to its first event goes to
 * `first` (bench_stream_resume.c). Returns 0 or -errno. */
int bench_stream_resume(const struct bench_config *cfg, struct bench_sandboxes *set, struct bench_stream_resume *ret,
                        struct bench_stats *first);

/* The stream measure's figures beyond its latency rows, as text on stdout and as a JSON
 * object (NULL on allocation failure) (bench_stream_report.c). */
void bench_stream_report_text(const struct bench_config *cfg, const struct bench_stream_results *st);
json_t *bench_stream_report_json(const struct bench_config *cfg, const struct bench_stream_results *st);
/* Whether a check of the stream measure failed: a run within the log not exact, a stream
 * without its line or exit, an error, a resumed copy not exact. Drops of the run longer than
 * the log are not failures (the documented cap). */
bool bench_stream_failed(const struct bench_stream_results *st);
