/* diag.c — see diag.h. */
#include "base/diag.h"
#include "base/files.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void emit(const struct jh__diag *d, int level, const char *fmt, va_list ap)
    __attribute__((format(JH__PRINTF, 3, 0)));

void jh__diag(const struct jh__diag *d, int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    emit(d, level, fmt, ap);
    va_end(ap);
}

void jh__diag_once(const struct jh__diag *d, _Atomic unsigned *said, unsigned bit, int level,
                   const char *fmt, ...)
{
    unsigned mask = 1u << (bit & 31);
    if ((atomic_fetch_or(said, mask) & mask) && level == JH_LOG_WARN)
        level = JH_LOG_INFO;            /* errors are said every time */
    va_list ap;
    va_start(ap, fmt);
    emit(d, level, fmt, ap);
    va_end(ap);
}

const char *jh__diag_file_fix(int err, int in_dir)
{
    switch (-err) {
    case EACCES: case EROFS: case ENOENT: case ENOTDIR: case ENAMETOOLONG:
        return in_dir ? "; set JITHERALD_DIR to a directory you can write" : "";
    case ENOSPC:
#ifdef EDQUOT
    case EDQUOT:
#endif
        return in_dir ? "; free some space, or set JITHERALD_DIR to another file system"
                      : "; free some space";
    case EFBIG:
        return "; the process's file-size limit (ulimit -f) stops it";
    case ELOOP: case EPERM: case EINVAL: case EEXIST:
        return in_dir ? "; remove it (another process's?), or set JITHERALD_DIR elsewhere"
                      : "; remove it (another process's?)";
    case EMFILE: case ENFILE:
        return "; raise the limit of open files (ulimit -n)";
    default:
        return "";
    }
}

int jh__diag_stderr_level(const char *dbg)
{
    return dbg && *dbg && strcmp(dbg, "0") ? JH_LOG_DEBUG : JH_LOG_WARN;
}

static void emit(const struct jh__diag *d, int level, const char *fmt, va_list ap)
{
    if (!jh__diag_on(d, level))
        return;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (d->fn) {
        d->fn(d->arg, level, msg);
        return;
    }
    /* One write of the whole line: lines of several threads never interleave, and a
     * file-size limit on a redirected stderr gives EFBIG, not SIGXFSZ (which kills). */
    static const char *const names[] = { "error", "warning", "info", "debug" };
    char line[600];
    int n = snprintf(line, sizeof line, "jitherald[%d] %s: %s\n", (int)getpid(),
                     names[level < 0 || level > 3 ? 0 : level], msg);
    if (n > 0)
        (void)jh__write_all(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}
