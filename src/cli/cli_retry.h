/* cli_retry: riding out a restart of spaced. A call that failed because spaced was away
 * (connection refused, 502/503/504, or, for a call that may be repeated, an answer cut short)
 * is tried again after a growing pause (0.1 s doubling to 1 s), for up to $SPACE_RETRY_S
 * seconds (default 60, 0 = never) from its first failure. */
#pragma once

#include <stdbool.h>

#include "cli/cli.h"

#define CLI_RETRY_DEFAULT_S 60
#define CLI_RETRY_MAX_S 86400

struct cli_retry {
        long long deadline_us; /* 0: no failure yet */
        unsigned delay_ms;
};

void cli_retry_init(struct cli_retry *r);
/* Is this outcome of a call (r: 0 or -errno from http_client; status when r == 0) one that
 * a restart of spaced explains? repeatable: the call may have reached spaced and can be
 * sent again (a GET, a rewound stream). */
bool cli_retry_transient(int r, long status, bool repeatable);
/* Pauses before the next try, saying once on stderr that spaced is away. false: the time is
 * up (or retries are off), report the failure. */
bool cli_retry_pause(struct cli_retry *r, const struct cli *cli);
/* How long retries last, in seconds ($SPACE_RETRY_S). */
long cli_retry_limit_s(void);
