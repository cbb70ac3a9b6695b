#include "spaced/log.h"
#include "spaced/wallclock.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static enum log_level min_level = LOG_INFO;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *const level_names[] = { "debug", "info", "warn", "error" };

void log_set_level(enum log_level level)
{
        min_level = level;
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

void log_event(enum log_level level, const char *event, const char *fmt, ...)
{
        if (level < min_level)
                return;
        char ts[40], body[2048];
        wallclock_format(wallclock_now_ms(), ts, sizeof(ts));
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(body, sizeof(body), fmt, ap);
        va_end(ap);
        /* Keep one event on one line whatever the values hold: values a client or a sandbox
         * chose go through log_escape; this is the backstop for any other. */
        for (char *p = body; *p; p++)
                if ((unsigned char)*p < 0x20 || *p == 0x7f)
                        *p = ' ';
        pthread_mutex_lock(&log_lock);
        fprintf(stderr, "ts=%s level=%s event=%s%s%s\n", ts, level_names[level], event, body[0] ? " " : "", body);
        pthread_mutex_unlock(&log_lock);
}
