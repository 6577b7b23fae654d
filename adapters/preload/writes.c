/*
 * writes.c — see hear.c: the calls that write a heard file, through its descriptor or
 * through stdio. Each calls libc's own first, unchanged (the file gets exactly the VM's
 * bytes), then hands what was written to jhp_hear before returning to the VM. stdio's
 * calls are heard when the VM makes them, before any flush: V8 writes its jitdump through
 * a 4 KiB buffer, Mono its map; stdio's flushes reach the kernel through libc's internal
 * write, which no preload sees, so nothing is heard twice.
 */
#include "hear.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/clock.h"

/* stdio.h may define these as macros writing into the FILE's buffer directly: the functions
 * are what a VM that does not inline them calls. */
#undef fwrite_unlocked
#undef fputs_unlocked
#undef fputc_unlocked
#undef putc_unlocked
#undef putc

/* ---- writes through descriptors ------------------------------------------------------- */

NEXT_DECL(write);
NEXT_DECL(writev);
NEXT_DECL(pwrite);
NEXT_DECL(pwrite64);
NEXT_DECL(pwritev);
NEXT_DECL(pwritev64);
NEXT_DECL(pwritev2);

JHP_EXPORT ssize_t write(int fd, const void *p, size_t n)
{
    struct watch *w = jhp_by_fd(fd);
    if (!w)
        return NEXT(write)(fd, p, n);
    uint64_t t0 = jhp_now();
    ssize_t r = NEXT(write)(fd, p, n);
    if (r > 0)
        jhp_hear(w, p, (size_t)r, t0);
    return r;
}

static void hear_iov(struct watch *w, const struct iovec *iov, int cnt, ssize_t r, uint64_t t0)
{
    if (r > 0)
        jhp_hear_iov(w, iov, cnt, (size_t)r, t0);
}

JHP_EXPORT ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    struct watch *w = jhp_by_fd(fd);
    if (!w)
        return NEXT(writev)(fd, iov, cnt);
    uint64_t t0 = jhp_now();
    ssize_t r = NEXT(writev)(fd, iov, cnt);
    hear_iov(w, iov, cnt, r, t0);
    return r;
}

/* A write at an offset is heard when it lands where the file ends (what was heard so
 * far), or on an O_APPEND descriptor (where Linux appends whatever the offset); one that
 * rewrites earlier bytes (a header patched in place) changes nothing announced. */
static struct watch *at_end(int fd, off_t off)
{
    struct watch *w = jhp_by_fd(fd);
    return w && (w->append || jhp_stream_at(w->stream, (uint64_t)off)) ? w : NULL;
}

JHP_EXPORT ssize_t pwrite(int fd, const void *p, size_t n, off_t off)
{
    struct watch *w = at_end(fd, off);
    uint64_t t0 = w ? jhp_now() : 0;
    ssize_t r = NEXT(pwrite)(fd, p, n, off);
    if (w && r > 0)
        jhp_hear(w, p, (size_t)r, t0);
    return r;
}

JHP_EXPORT ssize_t pwrite64(int fd, const void *p, size_t n, off_t off)
{
    struct watch *w = at_end(fd, off);
    uint64_t t0 = w ? jhp_now() : 0;
    ssize_t r = NEXT(pwrite64)(fd, p, n, off);
    if (w && r > 0)
        jhp_hear(w, p, (size_t)r, t0);
    return r;
}

JHP_EXPORT ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
    struct watch *w = at_end(fd, off);
    uint64_t t0 = w ? jhp_now() : 0;
    ssize_t r = NEXT(pwritev)(fd, iov, cnt, off);
    if (w)
        hear_iov(w, iov, cnt, r, t0);
    return r;
}

JHP_EXPORT ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off_t off)
{
    struct watch *w = at_end(fd, off);
    uint64_t t0 = w ? jhp_now() : 0;
    ssize_t r = NEXT(pwritev64)(fd, iov, cnt, off);
    if (w)
        hear_iov(w, iov, cnt, r, t0);
    return r;
}

JHP_EXPORT ssize_t pwritev2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
    NEXT_OR_ENOSYS(pwritev2);
    struct watch *w = off == -1 ? jhp_by_fd(fd) : at_end(fd, off);
    uint64_t t0 = w ? jhp_now() : 0;
    ssize_t r = NEXT(pwritev2)(fd, iov, cnt, off, flags);
    if (w)
        hear_iov(w, iov, cnt, r, t0);
    return r;
}

/* ---- writes through stdio (heard before any flush) -------------------------------------- */

NEXT_DECL(fwrite);
NEXT_DECL(fwrite_unlocked);
NEXT_DECL(fputs);
NEXT_DECL(fputs_unlocked);
NEXT_DECL(fputc);
NEXT_DECL(fputc_unlocked);
NEXT_DECL(putc);
NEXT_DECL(putc_unlocked);
NEXT_DECL(_IO_putc);

JHP_EXPORT size_t fwrite(const void *p, size_t size, size_t n, FILE *f)
{
    struct watch *w = jhp_by_file(f);
    if (!w)
        return NEXT(fwrite)(p, size, n, f);
    uint64_t t0 = jhp_now();
    size_t r = NEXT(fwrite)(p, size, n, f);
    if (r && size)
        jhp_hear(w, p, r * size, t0);
    return r;
}

JHP_EXPORT size_t fwrite_unlocked(const void *p, size_t size, size_t n, FILE *f)
{
    struct watch *w = jhp_by_file(f);
    if (!w)
        return NEXT(fwrite_unlocked)(p, size, n, f);
    uint64_t t0 = jhp_now();
    size_t r = NEXT(fwrite_unlocked)(p, size, n, f);
    if (r && size)
        jhp_hear(w, p, r * size, t0);
    return r;
}

JHP_EXPORT int fputs(const char *s, FILE *f)
{
    struct watch *w = jhp_by_file(f);
    if (!w)
        return NEXT(fputs)(s, f);
    uint64_t t0 = jhp_now();
    int r = NEXT(fputs)(s, f);
    if (r >= 0)
        jhp_hear(w, s, strlen(s), t0);
    return r;
}

JHP_EXPORT int fputs_unlocked(const char *s, FILE *f)
{
    struct watch *w = jhp_by_file(f);
    if (!w)
        return NEXT(fputs_unlocked)(s, f);
    uint64_t t0 = jhp_now();
    int r = NEXT(fputs_unlocked)(s, f);
    if (r >= 0)
        jhp_hear(w, s, strlen(s), t0);
    return r;
}

__attribute__((always_inline)) static inline int putc_heard(struct watch *w, int c, int r,
                                                            uint64_t t0)
{
    if (r != EOF) {
        unsigned char b = (unsigned char)c;
        jhp_hear(w, &b, 1, t0);
    }
    return r;
}

#define PUTC(fn)                                                                       \
    JHP_EXPORT int fn(int c, FILE *f)                                                  \
    {                                                                                  \
        struct watch *w = jhp_by_file(f);                                                  \
        if (!w)                                                                        \
            return NEXT(fn)(c, f);                                                     \
        uint64_t t0 = jhp_now();                                                        \
        return putc_heard(w, c, NEXT(fn)(c, f), t0);                                   \
    }
PUTC(fputc)
PUTC(fputc_unlocked)
PUTC(putc)
PUTC(putc_unlocked)
PUTC(_IO_putc)

/* The printf family on a heard FILE: formatted here and handed to the real fwrite, so the
 * text heard is the text written, byte for byte, formatted once. */
enum { SMALL = 1024 };

/* fmt's text, in small when it fits, else in a buffer malloc'd here (the caller frees what
 * is not small); its length in *n. NULL (errno set) when it cannot be formatted. */
static char *format(char small[SMALL], int *n, const char *fmt, va_list ap)
{
    *n = jhp_format(small, SMALL, fmt, ap);     /* node's map lines: without vsnprintf */
    if (*n >= 0)
        return small;
    va_list copy;
    va_copy(copy, ap);
    *n = vsnprintf(small, SMALL, fmt, copy);
    va_end(copy);
    if (*n < 0)
        return NULL;
    if (*n < SMALL)
        return small;
    char *buf = malloc((size_t)*n + 1);
    if (!buf)
        errno = ENOMEM;
    else
        vsnprintf(buf, (size_t)*n + 1, fmt, ap);
    return buf;
}

static int vprint_heard(struct watch *w, FILE *f, const char *fmt, va_list ap)
{
    uint64_t t0 = jhp_now();
    char small[SMALL];
    int n;
    struct jhp_map_line line;
    n = jhp_format_map_line(small, SMALL, fmt, ap, &line);  /* V8's: its fields kept */
    bool fields = n >= 0;
    char *buf = fields ? small : format(small, &n, fmt, ap);
    if (!buf)
        return -1;
    size_t r = NEXT(fwrite)(buf, 1, (size_t)n, f);
    if (fields && r == (size_t)n) {
        jhp_hear_line(w, &line, t0);
    } else if (r) {
        jhp_hear(w, buf, r, t0);
    }
    if (buf != small)
        free(buf);
    return r == (size_t)n ? n : -1;
}

NEXT_DECL(vfprintf);
NEXT_DECL(__vfprintf_chk);

JHP_EXPORT int vfprintf(FILE *f, const char *fmt, va_list ap)
{
    struct watch *w = jhp_by_file(f);
    return w ? vprint_heard(w, f, fmt, ap) : NEXT(vfprintf)(f, fmt, ap);
}

JHP_EXPORT int __vfprintf_chk(FILE *f, int flag, const char *fmt, va_list ap)
{
    struct watch *w = jhp_by_file(f);
    return w ? vprint_heard(w, f, fmt, ap) : NEXT(__vfprintf_chk)(f, flag, fmt, ap);
}

JHP_EXPORT int fprintf(FILE *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = vfprintf(f, fmt, ap);
    va_end(ap);
    return r;
}

JHP_EXPORT int __fprintf_chk(FILE *f, int flag, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = __vfprintf_chk(f, flag, fmt, ap);
    va_end(ap);
    return r;
}

/* dprintf: formatted here, written with the real write. */
static int vdprint_heard(struct watch *w, int fd, const char *fmt, va_list ap)
{
    uint64_t t0 = jhp_now();
    char small[SMALL];
    int n;
    char *buf = format(small, &n, fmt, ap);
    if (!buf)
        return -1;
    ssize_t r = NEXT(write)(fd, buf, (size_t)n);
    if (r > 0)
        jhp_hear(w, buf, (size_t)r, t0);
    if (buf != small)
        free(buf);
    return r < 0 ? -1 : (int)r;
}

NEXT_DECL(vdprintf);
NEXT_DECL(__vdprintf_chk);

JHP_EXPORT int vdprintf(int fd, const char *fmt, va_list ap)
{
    struct watch *w = jhp_by_fd(fd);
    return w ? vdprint_heard(w, fd, fmt, ap) : NEXT(vdprintf)(fd, fmt, ap);
}

JHP_EXPORT int __vdprintf_chk(int fd, int flag, const char *fmt, va_list ap)
{
    struct watch *w = jhp_by_fd(fd);
    return w ? vdprint_heard(w, fd, fmt, ap) : NEXT(__vdprintf_chk)(fd, flag, fmt, ap);
}

JHP_EXPORT int dprintf(int fd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = vdprintf(fd, fmt, ap);
    va_end(ap);
    return r;
}

JHP_EXPORT int __dprintf_chk(int fd, int flag, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = __vdprintf_chk(fd, flag, fmt, ap);
    va_end(ap);
    return r;
}
