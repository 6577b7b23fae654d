/*
 * check.h — the unit tests' only dependency. CHECK(cond) records a failure with file:line
 * and carries on; CHECK_EQ shows both values; a test ends with `return check_done();`,
 * which exits 1 if anything failed. SKIP(reason) exits 77, which tests/run.sh reports.
 * SKIP_PART(reason): one part could not run (a tool is missing); the rest goes on, and
 * check_done() then exits 77 rather than 0 — a test that did not check all it claims
 * never passes.
 */
#ifndef JH_CHECK_H
#define JH_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Counted atomically: tests CHECK from several threads (the builtins work in C and C++). */
static int check_failures __attribute__((unused)), check_count __attribute__((unused));
static const char *check_skipped __attribute__((unused));
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
#define SKIP_PART(reason) do { check_skipped = (reason); printf("SKIP %s\n", check_skipped); } while (0)

/* Removes a test's own directory tree (made by mkdtemp: no quoting needed); system()'s
 * result, and a word on stderr when it failed. */
static inline int rm_tree(const char *dir)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    int rc = system(cmd);
    if (rc != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return rc;
}

static inline int check_done(void)
{
    int n = __atomic_load_n(&check_count, __ATOMIC_RELAXED);
    int f = __atomic_load_n(&check_failures, __ATOMIC_RELAXED);
    printf("%d checks, %d failed\n", n, f);
    if (!f && check_skipped) {
        printf("SKIP %s (the other checks passed)\n", check_skipped);
        return 77;
    }
    return f ? 1 : 0;
}

#endif
