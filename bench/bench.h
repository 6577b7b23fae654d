/* bench.h — the clock and the statistics every benchmark shares. */
#ifndef JH_BENCH_H
#define JH_BENCH_H

#include <stdlib.h>
#include <time.h>

/* CLOCK_MONOTONIC in nanoseconds, as a double so differences divide cleanly. */
static inline double bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Sorts v in place and returns its median. */
static inline double bench_median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, bench_cmp_double);
    return v[n / 2];
}

#endif
