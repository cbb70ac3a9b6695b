/* log: structured one-line events, `ts=… level=… event=… key=value…`, to stderr, or the
 * same as one JSON object per line (--log-format json: every key a member, values as
 * strings, bare integers as numbers). Library code logs at debug at most; the top level
 * logs failures once with context. Level and format may change while running (SIGHUP). */
#pragma once

#include <stdarg.h>
#include <stddef.h>

enum log_level { LOG_DEBUG = 0, LOG_INFO, LOG_WARN, LOG_ERROR };

enum log_format { LOG_FORMAT_TEXT = 0, LOG_FORMAT_JSON };

void log_set_level(enum log_level level);
int log_parse_level(const char *s, enum log_level *ret);
void log_set_format(enum log_format format);
int log_parse_format(const char *s, enum log_format *ret);
/* The JSON object of one text line's fields (`key=value key="quoted \" value"…`) into out,
 * without the braces: "key":"value",… Returns 0, or -1 when the line is not key=value
 * text (then out holds what was converted before). */
int log_fields_json(const char *line, char *out, size_t size);
/* The text of a quoted value, key="<here>", from anything a client or a sandbox chose: '"'
 * and '\\' get a backslash, control bytes and bytes from 0x7f as \xNN, so a value can end
 * neither its quotes nor its line; cut (with "...") to fit size (at least 8). Returns buf. */
const char *log_escape(const char *v, char *buf, size_t size);
/* Fits a value of up to ~250 bytes; for longer text pass a bigger buffer to log_escape. */
#define LOG_VALUE_SIZE 1024
#define LOG_ESC(v) log_escape((v), (char[LOG_VALUE_SIZE]){ 0 }, LOG_VALUE_SIZE)

void log_event(enum log_level level, const char *event, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void log_eventv(enum log_level level, const char *event, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));

#define log_debug(ev, ...) log_event(LOG_DEBUG, ev, __VA_ARGS__)
#define log_info(ev, ...) log_event(LOG_INFO, ev, __VA_ARGS__)
#define log_warn(ev, ...) log_event(LOG_WARN, ev, __VA_ARGS__)
#define log_error(ev, ...) log_event(LOG_ERROR, ev, __VA_ARGS__)
