/* wallclock: milliseconds since the epoch and their RFC 3339 form, plus random ids. */
#pragma once

#include <stddef.h>
#include <stdint.h>

int64_t wallclock_now_ms(void);
int64_t monotonic_now_us(void);
/* Writes "2026-11-29T18:00:00.123Z"; buf needs 25 bytes. */
void wallclock_format(int64_t ms, char *buf, size_t size);
/* Reads RFC 3339, "2026-11-29T18:00:00[.123]Z" or with an offset "+02:00" (fractions past
 * milliseconds are cut). 0 with *ret_ms, or -EINVAL (nothing else accepted). */
int wallclock_parse(const char *s, int64_t *ret_ms);
/* Fills buf with prefix + 2*nbytes lowercase hex digits from getrandom(). */
int random_id(const char *prefix, size_t nbytes, char *buf, size_t size);
