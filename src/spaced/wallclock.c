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
        snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                 tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
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
