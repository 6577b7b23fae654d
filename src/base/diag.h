/*
 * diag.h — jitherald's own diagnostics ("channel X failed", "directory refused"): to the
 * JIT's callback (jh_options.log) when it gave one, else to stderr. Not to be confused with
 * the audit log (the JIT's flight recorder) or with `jitherald log` (its reader).
 *
 * The rule every channel follows, so that no tool silently shows `???`:
 *   JH_LOG_ERROR  a channel cannot serve (it cannot start, or stops): once, when it happens;
 *   JH_LOG_WARN   a channel leaves something out (code it skips, a file it cannot make):
 *                 once per cause (jh__diag_once), later cases of the same cause at INFO;
 *   JH_LOG_INFO, JH_LOG_DEBUG  what it does; per-function notes; why a call was refused
 *                 (-EINVAL: which field of which function), which its return value says.
 * Errors and warnings name the cause and what fixes it (the directory to change, the
 * protection the pages need). Without a callback, stderr gets errors and warnings always
 * and the rest with JITHERALD_DEBUG=1.
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

/* A warning said once per cause: at JH_LOG_WARN the first time bit is set in *said, at
 * JH_LOG_INFO after that (a callback and JITHERALD_DEBUG=1 still see every case); other
 * levels pass as they are. said is the caller's, one bit per cause (0-31); safe from
 * several threads. */
void jh__diag_once(const struct jh__diag *d, _Atomic unsigned *said, unsigned bit, int level,
                   const char *fmt, ...) __attribute__((format(JH__PRINTF, 5, 6)));

/* What fixes a failed create or open of a file of ours (err a negative errno): for a file in
 * the context's directory (in_dir: JITHERALD_DIR) or elsewhere (the perf map in /tmp), as
 * the tail of a message ("; set JITHERALD_DIR to a directory you can write"), or "". */
const char *jh__diag_file_fix(int err, int in_dir);

/* The levels that reach stderr without a callback, given $JITHERALD_DEBUG: JH_LOG_WARN, or
 * JH_LOG_DEBUG when it is set and not "0". */
int jh__diag_stderr_level(const char *jitherald_debug);

/* Would a message at level go anywhere? (Skip building expensive messages otherwise.) */
static inline int jh__diag_on(const struct jh__diag *d, int level)
{
    return d->fn || level <= d->stderr_level;
}

#endif
