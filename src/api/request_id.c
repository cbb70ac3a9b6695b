#include "api/request_id.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "spaced/wallclock.h"

bool request_id_valid(const char *s)
{
        if (!s)
                return false;
        size_t n = 0;
        for (; s[n]; n++) {
                char c = s[n];
                if (n == REQUEST_ID_MAX ||
                    !((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
                      c == '-'))
                        return false;
        }
        return n > 0;
}

void request_id_take(const char *from_client, char buf[REQUEST_ID_SIZE])
{
        if (request_id_valid(from_client)) {
                snprintf(buf, REQUEST_ID_SIZE, "%s", from_client);
                return;
        }
        if (random_id("", 16, buf, REQUEST_ID_SIZE) == 0)
                return;
        /* No randomness (getrandom failed): still unique within this process. */
        static atomic_uint_fast64_t seq;
        snprintf(buf, REQUEST_ID_SIZE, "%016llx%016llx", (unsigned long long)wallclock_now_ms(),
                 (unsigned long long)atomic_fetch_add(&seq, 1));
}
