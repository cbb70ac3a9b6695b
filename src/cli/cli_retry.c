#include "cli/cli_retry.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cli/cli_args.h"

static long long now_us(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (long long)ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

long cli_retry_limit_s(void)
{
        const char *v = getenv("SPACE_RETRY_S");
        long long s = CLI_RETRY_DEFAULT_S;

        if (v && *v && cli_args_integer(v, 0, CLI_RETRY_MAX_S, &s) < 0)
                s = CLI_RETRY_DEFAULT_S;
        return (long)s;
}

void cli_retry_init(struct cli_retry *r)
{
        *r = (struct cli_retry){ 0 };
}

bool cli_retry_transient(int r, long status, bool repeatable)
{
        if (r == 0)
                return status == 502 || status == 503 || status == 504;
        if (r == -EHOSTUNREACH)
                return true; /* nothing was sent */
        return repeatable && (r == -ECONNRESET || r == -EIO || r == -ETIMEDOUT);
}

bool cli_retry_pause(struct cli_retry *r, const struct cli *cli)
{
        long limit_s = cli_retry_limit_s();
        long long now = now_us();

        if (limit_s == 0)
                return false;
        if (r->deadline_us == 0) {
                r->deadline_us = now + (long long)limit_s * 1000000LL;
                r->delay_ms = 100;
                fprintf(stderr, "space: spaced at %s is away; trying again for up to %ld s\n", cli->url, limit_s);
        }
        if (now >= r->deadline_us)
                return false;
        long long wait_us = (long long)r->delay_ms * 1000LL;
        if (now + wait_us > r->deadline_us)
                wait_us = r->deadline_us - now;
        struct timespec ts = { (time_t)(wait_us / 1000000LL), (long)(wait_us % 1000000LL) * 1000L };
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
        r->delay_ms = r->delay_ms * 2 > 1000 ? 1000 : r->delay_ms * 2;
        return true;
}
