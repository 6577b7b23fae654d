/* bench.h — the clock and the statistics every benchmark shares. */
#ifndef JH_BENCH_H
#define JH_BENCH_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

/* n functions of 48 bytes at a 64-byte stride, r-x the way a W^X JIT leaves them: push
 * rbp; mov rbp, rsp; nops; pop rbp; ret. NULL if it cannot map them. */
static inline uint8_t *bench_fp_code(size_t n)
{
    size_t len = (n * 64 + 4095) & ~(size_t)4095;
    uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        memset(p + i * 64, 0x90, 48);
        memcpy(p + i * 64, "\x55\x48\x89\xe5", 4);
        memcpy(p + i * 64 + 46, "\x5d\xc3", 2);
    }
    mprotect(p, len, PROT_READ | PROT_EXEC);
    return p;
}

#endif
