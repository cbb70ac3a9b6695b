#include "spaced/log.h"
#include "spaced/wallclock.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <stdatomic.h>

static _Atomic int min_level = LOG_INFO;
static _Atomic int log_format = LOG_FORMAT_TEXT;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *const level_names[] = { "debug", "info", "warn", "error" };

void log_set_level(enum log_level level)
{
        min_level = level;
}

void log_set_format(enum log_format format)
{
        log_format = format;
}

int log_parse_format(const char *s, enum log_format *ret)
{
        if (strcmp(s, "text") == 0 || strcmp(s, "json") == 0) {
                *ret = strcmp(s, "json") == 0 ? LOG_FORMAT_JSON : LOG_FORMAT_TEXT;
                return 0;
        }
        return -1;
}

int log_parse_level(const char *s, enum log_level *ret)
{
        for (int i = 0; i < 4; i++)
                if (strcmp(s, level_names[i]) == 0) {
                        *ret = (enum log_level)i;
                        return 0;
                }
        return -1;
}

/* The escaped form of one byte in out (at most 4 bytes); returns its length. */
static size_t escape_byte(unsigned char c, char out[4])
{
        static const char hex[] = "0123456789abcdef";
        if (c == '"' || c == '\\') {
                out[0] = '\\';
                out[1] = (char)c;
                return 2;
        }
        if (c < 0x20 || c >= 0x7f) {
                out[0] = '\\';
                out[1] = 'x';
                out[2] = hex[c >> 4];
                out[3] = hex[c & 15];
                return 4;
        }
        out[0] = (char)c;
        return 1;
}

const char *log_escape(const char *v, char *buf, size_t size)
{
        const unsigned char *in = (const unsigned char *)(v ? v : "");
        char one[4];
        size_t need = 0, o = 0;
        if (size < 8)
                return size ? (buf[0] = '\0', buf) : buf;
        for (const unsigned char *p = in; *p; p++)
                need += escape_byte(*p, one);
        /* When it does not all fit, room is kept for "..." (an escape is never cut). */
        size_t room = need < size ? size - 1 : size - 4;
        for (const unsigned char *p = in; *p; p++) {
                size_t n = escape_byte(*p, one);
                if (o + n > room)
                        break;
                memcpy(buf + o, one, n);
                o += n;
        }
        if (need >= size) {
                memcpy(buf + o, "...", 3);
                o += 3;
        }
        buf[o] = '\0';
        return buf;
}

/* Appends c to out as JSON string text. */
static void json_char(char *out, size_t size, size_t *o, unsigned char c)
{
        static const char hex[] = "0123456789abcdef";
        char e[7];
        size_t n = 0;
        if (c == '"' || c == '\\') {
                e[n++] = '\\';
                e[n++] = (char)c;
        } else if (c < 0x20 || c >= 0x7f) {
                memcpy(e, "\\u00", 4);
                n = 4;
                e[n++] = hex[c >> 4];
                e[n++] = hex[c & 15];
        } else {
                e[n++] = (char)c;
        }
        if (*o + n < size) {
                memcpy(out + *o, e, n);
                *o += n;
        }
        out[*o < size ? *o : size - 1] = '\0';
}

/* Appends s verbatim (JSON punctuation). */
static void raw(char *out, size_t size, size_t *o, const char *s)
{
        size_t n = strlen(s);
        if (*o + n < size) {
                memcpy(out + *o, s, n);
                *o += n;
        }
        out[*o < size ? *o : size - 1] = '\0';
}

/* A bare value that is an integer JSON reads exactly: -?(0|[1-9][0-9]*), under 19 digits. */
static bool is_integer(const char *v, size_t len)
{
        size_t i = len && v[0] == '-';
        if (i == len || len - i > 18 || (v[i] == '0' && len - i > 1))
                return false;
        for (; i < len; i++)
                if (v[i] < '0' || v[i] > '9')
                        return false;
        return true;
}

static void json_text(char *out, size_t size, size_t *o, const char *s, size_t len)
{
        for (size_t i = 0; i < len; i++)
                json_char(out, size, o, (unsigned char)s[i]);
}

static int hex_value(char c)
{
        return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int log_fields_json(const char *line, char *out, size_t size)
{
        size_t o = 0;
        const char *p = line;
        if (size)
                out[0] = '\0';
        while (*p) {
                const char *key = p;
                while ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_')
                        p++;
                if (p == key || *p != '=')
                        return -1;
                size_t klen = (size_t)(p - key);
                p++;
                raw(out, size, &o, o ? ",\"" : "\"");
                json_text(out, size, &o, key, klen);
                raw(out, size, &o, "\":");
                if (*p == '"') {
                        /* Quoted: log_escape's \" \\ and \xNN undone, then JSON-escaped. */
                        raw(out, size, &o, "\"");
                        for (p++; *p && *p != '"'; p++) {
                                unsigned char c = (unsigned char)*p;
                                if (c == '\\' && (p[1] == '"' || p[1] == '\\')) {
                                        c = (unsigned char)*++p;
                                } else if (c == '\\' && p[1] == 'x' && hex_value(p[2]) >= 0 && hex_value(p[3]) >= 0) {
                                        c = (unsigned char)(hex_value(p[2]) << 4 | hex_value(p[3]));
                                        p += 3;
                                }
                                json_char(out, size, &o, c);
                        }
                        if (*p != '"')
                                return -1;
                        p++;
                        raw(out, size, &o, "\"");
                } else {
                        const char *v = p;
                        while (*p && *p != ' ')
                                p++;
                        size_t vlen = (size_t)(p - v);
                        bool number = is_integer(v, vlen);
                        if (!number)
                                raw(out, size, &o, "\"");
                        json_text(out, size, &o, v, vlen);
                        if (!number)
                                raw(out, size, &o, "\"");
                }
                if (*p == ' ')
                        p++;
                else if (*p)
                        return -1;
        }
        return 0;
}

void log_event(enum log_level level, const char *event, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        log_eventv(level, event, fmt, ap);
        va_end(ap);
}

void log_eventv(enum log_level level, const char *event, const char *fmt, va_list ap)
{
        if ((int)level < min_level)
                return;
        char ts[40], body[2048];
        wallclock_format(wallclock_now_ms(), ts, sizeof(ts));
        vsnprintf(body, sizeof(body), fmt, ap);
        /* Keep one event on one line whatever the values hold: values a client or a sandbox
         * chose go through log_escape; this is the backstop for any other. */
        for (char *p = body; *p; p++)
                if ((unsigned char)*p < 0x20 || *p == 0x7f)
                        *p = ' ';
        if (log_format == LOG_FORMAT_JSON) {
                char fields[6 * sizeof(body) + 16]; /* every byte escaped as \u00XX still fits */
                /* A line that is not key=value text is kept whole, as "text". */
                if (log_fields_json(body, fields, sizeof(fields)) < 0) {
                        size_t o = 0;
                        raw(fields, sizeof(fields), &o, "\"text\":\"");
                        json_text(fields, sizeof(fields), &o, body, strlen(body));
                        raw(fields, sizeof(fields), &o, "\"");
                }
                char ev[256];
                size_t o = 0;
                json_text(ev, sizeof(ev), &o, event, strlen(event));
                pthread_mutex_lock(&log_lock);
                fprintf(stderr, "{\"ts\":\"%s\",\"level\":\"%s\",\"event\":\"%s\"%s%s}\n", ts, level_names[level], ev,
                        fields[0] ? "," : "", fields);
                pthread_mutex_unlock(&log_lock);
                return;
        }
        pthread_mutex_lock(&log_lock);
        fprintf(stderr, "ts=%s level=%s event=%s%s%s\n", ts, level_names[level], event, body[0] ? " " : "", body);
        pthread_mutex_unlock(&log_lock);
}
