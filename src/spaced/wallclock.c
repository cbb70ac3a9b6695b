#include "spaced/wallclock.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

int64_t wallclock_now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t monotonic_now_us(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void wallclock_format(int64_t ms, char *buf, size_t size)
{
        time_t secs = (time_t)(ms / 1000);
        struct tm tm;
        gmtime_r(&secs, &tm);
        snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                 tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

int random_id(const char *prefix, size_t nbytes, char *buf, size_t size)
{
        unsigned char raw[32];
        if (nbytes > sizeof(raw))
                return -EINVAL;
        size_t got = 0;
        while (got < nbytes) {
                ssize_t n = getrandom(raw + got, nbytes - got, 0);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                got += (size_t)n;
        }
        int off = snprintf(buf, size, "%s", prefix);
        for (size_t i = 0; i < nbytes && (size_t)off + 2 < size; i++)
                off += snprintf(buf + off, size - (size_t)off, "%02x", raw[i]);
        explicit_bzero(raw, sizeof(raw));
        return 0;
}

/* n digits at *p into *ret; advances p. */
static int digits(const char **p, int n, int *ret)
{
        int v = 0;
        for (int i = 0; i < n; i++, (*p)++) {
                if (**p < '0' || **p > '9')
                        return -1;
                v = v * 10 + (**p - '0');
        }
        *ret = v;
        return 0;
}

int wallclock_parse(const char *s, int64_t *ret_ms)
{
        int y, mo, d, h, mi, sec, ms = 0, oh = 0, om = 0, sign = 0;
        const char *p = s;
        if (!s || digits(&p, 4, &y) < 0 || *p++ != '-' || digits(&p, 2, &mo) < 0 || *p++ != '-' || digits(&p, 2, &d) < 0 ||
            (*p != 'T' && *p != 't') || !*p++ || digits(&p, 2, &h) < 0 || *p++ != ':' || digits(&p, 2, &mi) < 0 || *p++ != ':' ||
            digits(&p, 2, &sec) < 0)
                return -EINVAL;
        if (*p == '.') {
                p++;
                int n = 0;
                for (; *p >= '0' && *p <= '9'; p++, n++)
                        if (n < 3)
                                ms = ms * 10 + (*p - '0');
                if (n == 0 || n > 9)
                        return -EINVAL;
                for (; n < 3; n++)
                        ms *= 10;
        }
        if (*p == 'Z' || *p == 'z') {
                p++;
        } else if (*p == '+' || *p == '-') {
                sign = *p++ == '+' ? 1 : -1;
                if (digits(&p, 2, &oh) < 0 || *p++ != ':' || digits(&p, 2, &om) < 0 || oh > 23 || om > 59)
                        return -EINVAL;
        } else {
                return -EINVAL;
        }
        if (*p || y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
                return -EINVAL;
        struct tm tm = {
                .tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = h, .tm_min = mi, .tm_sec = sec > 59 ? 59 : sec
        };
        time_t t = timegm(&tm);
        if (t == (time_t)-1 || tm.tm_mday != d) /* 2026-02-30 normalises to March */
                return -EINVAL;
        *ret_ms = ((int64_t)t - sign * (oh * 3600 + om * 60)) * 1000 + ms;
        return 0;
}
