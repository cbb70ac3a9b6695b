/* log: structured one-line events, `ts=… level=… event=… key=value…`, to stderr.
 * Library code logs at debug at most; the top level logs failures once with context. */
#pragma once

enum log_level { LOG_DEBUG = 0, LOG_INFO, LOG_WARN, LOG_ERROR };

void log_set_level(enum log_level level);
int log_parse_level(const char *s, enum log_level *ret);
void log_event(enum log_level level, const char *event, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define log_debug(ev, ...) log_event(LOG_DEBUG, ev, __VA_ARGS__)
#define log_info(ev, ...) log_event(LOG_INFO, ev, __VA_ARGS__)
#define log_warn(ev, ...) log_event(LOG_WARN, ev, __VA_ARGS__)
#define log_error(ev, ...) log_event(LOG_ERROR, ev, __VA_ARGS__)
