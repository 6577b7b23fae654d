/* clock.h — the one clock of jitherald's records: CLOCK_MONOTONIC in nanoseconds, the clock
 * `perf record -k 1` samples with, so that jitdump and audit-log timestamps line up with
 * perf's. On Windows: QueryPerformanceCounter in nanoseconds (base/os_win.c). */
#ifndef JH__BASE_CLOCK_H
#define JH__BASE_CLOCK_H

#include <stdint.h>

#ifdef _WIN32
#define JH__CLOCK_NAME "QueryPerformanceCounter"
uint64_t jh__now_ns(void);
uint64_t jh__realtime_ns(void);     /* ns since 1970 (UTC) */
#else
#include <time.h>

#define JH__CLOCK_NAME "CLOCK_MONOTONIC"

static inline uint64_t jh__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ns since 1970 (UTC) */
static inline uint64_t jh__realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
#endif

#endif
