/*
 * diag.h — jitherald's own diagnostics ("channel X failed", "directory refused"): to the
 * JIT's callback (jh_options.log) when it gave one, else to stderr for the levels the user
 * asked to see. Not to be confused with the audit log (the JIT's flight recorder) or with
 * `jitherald log` (its reader).
 */
#ifndef JH__BASE_DIAG_H
#define JH__BASE_DIAG_H

#include <stdio.h>

#include "jitherald.h"

struct jh__diag {
    jh_log_fn *fn;              /* the JIT's callback, or NULL */
    void *arg;
    int stderr_level;           /* without fn: levels <= this go to stderr; -1: none */
};

/* mingw-w64 checks `printf` formats as msvcrt's (no %zu); jitherald builds there with its
 * C99 printf (__USE_MINGW_ANSI_STDIO), whose format checker is gnu_printf. */
#ifdef __MINGW_PRINTF_FORMAT
#define JH__PRINTF __MINGW_PRINTF_FORMAT
#else
#define JH__PRINTF printf
#endif

void jh__diag(const struct jh__diag *d, int level, const char *fmt, ...)
    __attribute__((format(JH__PRINTF, 3, 4)));

/* Would a message at level go anywhere? (Skip building expensive messages otherwise.) */
static inline int jh__diag_on(const struct jh__diag *d, int level)
{
    return d->fn || level <= d->stderr_level;
}

#endif
