/* agent_clock: monotonic time in microseconds. */
#pragma once

#include <stdint.h>
#include <time.h>

static inline uint64_t agent_clock_now_us(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}
