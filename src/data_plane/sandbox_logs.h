/* sandbox_logs: the command logs of one sandbox as a whole (command-logs/<sandbox>/<command>/),
 * held under the per-sandbox cap (--sandbox-log-cap) on top of each log's own cap.
 *
 * Over the cap, output is dropped oldest first (by when a segment was last written) across
 * all of the sandbox's commands, with the same `dropped` semantics as one log's cap: a
 * segment that is not its log's newest is deleted; a finished command's newest segment is
 * cut down to the exit record (readers see a drop, then the end). What is never dropped:
 * each running command's current segment and the exit records. Returns -errno; logs nothing. */
#pragma once

#include <stdint.h>

/* Bytes of all segments of the logs under root (0 when there is no such directory). */
int sandbox_logs_usage(const char *root, uint64_t *ret_bytes);
/* Drops output as above until the logs under root hold at most target bytes or nothing
 * more can go; *ret_bytes gets what they hold then. */
int sandbox_logs_trim(const char *root, uint64_t target, uint64_t *ret_bytes);
