/* diag.c — see diag.h. */
#include "base/diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

void jh__diag(const struct jh__diag *d, int level, const char *fmt, ...)
{
    if (!jh__diag_on(d, level))
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (d->fn) {
        d->fn(d->arg, level, msg);
        return;
    }
    static const char *const names[] = { "error", "warning", "info", "debug" };
    fprintf(stderr, "jitherald[%d] %s: %s\n", (int)getpid(),
            names[level < 0 || level > 3 ? 0 : level], msg);
}
