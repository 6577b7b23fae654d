/*
 * check.h — the unit tests' only dependency. CHECK(cond) records a failure with file:line
 * and carries on; CHECK_EQ shows both values; a test ends with `return check_done();`,
 * which exits 1 if anything failed. SKIP(reason) exits 77, which tests/run.sh reports.
 */
#ifndef JH_CHECK_H
#define JH_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Counted atomically: tests CHECK from several threads (the builtins work in C and C++). */
static int check_failures, check_count;
#define CHECK_TALLY(v) __atomic_add_fetch(&(v), 1, __ATOMIC_RELAXED)

#define CHECK(cond) do { CHECK_TALLY(check_count); if (!(cond)) { CHECK_TALLY(check_failures); \
    fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } } while (0)
#define CHECK_EQ(a, b) do { long long _a = (long long)(a), _b = (long long)(b); CHECK_TALLY(check_count); \
    if (_a != _b) { CHECK_TALLY(check_failures); fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %lld, %s == %lld\n", \
    __FILE__, __LINE__, #a, _a, #b, _b); } } while (0)
#define CHECK_STR(a, b) do { const char *_a = (a), *_b = (b); CHECK_TALLY(check_count); \
    if (!_a || !_b || strcmp(_a, _b)) { CHECK_TALLY(check_failures); fprintf(stderr, \
    "%s:%d: CHECK_STR failed: %s == \"%s\", expected \"%s\"\n", __FILE__, __LINE__, #a, \
    _a ? _a : "(null)", _b ? _b : "(null)"); } } while (0)
#define SKIP(reason) do { printf("SKIP %s\n", reason); exit(77); } while (0)

static inline int check_done(void)
{
    int n = __atomic_load_n(&check_count, __ATOMIC_RELAXED);
    int f = __atomic_load_n(&check_failures, __ATOMIC_RELAXED);
    printf("%d checks, %d failed\n", n, f);
    return f ? 1 : 0;
}

#endif
