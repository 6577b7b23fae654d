/* clock.h — the one clock of jitherald's records: CLOCK_MONOTONIC in nanoseconds, the clock
 * `perf record -k 1` samples with, so that jitdump and audit-log timestamps line up with
 * perf's. */
#ifndef JH__BASE_CLOCK_H
#define JH__BASE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t jh__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
