/*
 * format.c — see preload.h (jhp_format). The perf map lines VMs print, formatted without
 * vsnprintf: node writes its map through vfprintf with "%lx %x %.*s\n" (V8's
 * PerfBasicLogger), MoarVM and Erlang "%lx %lx %s\n"-like formats. writes.c formats the
 * text itself so that what is heard is what is written, and vsnprintf cost ~1,400
 * instructions a line of node's 2,462 at its start (a quarter of hearing node's map,
 * issue 30); this costs about a tenth of that.
 *
 * Only what gives the same bytes as glibc's printf with no doubt is taken: the conversions
 * d i u x X c s p %, the length modifiers hh h l ll j z t, and for s a precision (".N" or
 * ".*"). Any flag, width, other precision, other conversion (floats, %n, positional
 * arguments), a NULL string or more than cap bytes: -1, and the caller formats with
 * vsnprintf from its own copy of the arguments (this one read them from a va_copy).
 */
#include "preload.h"

#include <stdarg.h>
#include <string.h>

/* v in base 16 (or 10) before end: its first byte. */
__attribute__((always_inline)) static inline char *digits(char *end, uint64_t v,
                                                          unsigned base, bool upper)
{
    const char *set = upper ? "0123456789ABCDEF" : "0123456789abcdef";
    char *p = end;
    if (base == 16 && !upper) {
        /* two digits a step (node's 2,462 map lines, two numbers each: issue 30) */
        static const char pairs[] =
            "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
            "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"
            "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f"
            "606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f"
            "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"
            "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf"
            "c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedf"
            "e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff";
        while (v > 0xff) {
            p -= 2;
            memcpy(p, pairs + 2 * (v & 0xff), 2);
            v >>= 8;
        }
        if (v > 0xf) {
            p -= 2;
            memcpy(p, pairs + 2 * v, 2);
        } else {
            *--p = set[v];
        }
    } else if (base == 16) {
        do {
            *--p = set[v & 15];
            v >>= 4;
        } while (v);
    } else {
        do {
            *--p = (char)('0' + v % 10);
            v /= 10;
        } while (v);
    }
    return p;
}

int jhp_format(char *out, size_t cap, const char *fmt, va_list ap)
{
    /* (ILP32: l, j, z and t would not all be 64 bits) */
    if (sizeof(long) != 8 || sizeof(size_t) != 8 || sizeof(intmax_t) != 8 || !cap)
        return -1;
    va_list a;
    va_copy(a, ap);
    size_t n = 0;
    int rc = -1;
    for (const char *f = fmt;; f++) {
        for (; *f && *f != '%'; f++) {  /* (a space, a newline: no memcpy) */
            if (n + 1 >= cap)
                goto out;
            out[n++] = *f;
        }
        if (!*f)
            break;
        f++;                            /* past '%' */
        /* precision: strings only */
        long prec = -1;
        if (*f == '.') {
            f++;
            if (*f == '*') {
                prec = va_arg(a, int);
                f++;
            } else {
                prec = 0;
                while (*f >= '0' && *f <= '9' && prec < (1L << 24))
                    prec = prec * 10 + (*f++ - '0');
            }
            if (*f != 's')
                goto out;
        }
        /* length: 0 int, 1 long (l ll j z t are 64 bits on LP64), -1 short, -2 char */
        int len = 0;
        if (f[0] == 'h' && f[1] == 'h') {
            len = -2;
            f += 2;
        } else if (f[0] == 'h') {
            len = -1;
            f++;
        } else if (f[0] == 'l' && f[1] == 'l') {
            len = 1;
            f += 2;
        } else if (f[0] == 'l' || f[0] == 'j' || f[0] == 'z' || f[0] == 't') {
            len = 1;
            f++;
        }
        char tmp[24], *p, *e = tmp + sizeof tmp;
        const char *src;
        size_t k;
        switch (*f) {
        case 'd':
        case 'i': {
            int64_t v = len == 1 ? va_arg(a, long) : va_arg(a, int);
            if (len == -1)
                v = (short)v;
            else if (len == -2)
                v = (signed char)v;
            uint64_t m = v < 0 ? -(uint64_t)v : (uint64_t)v;
            p = digits(e, m, 10, false);
            if (v < 0)
                *--p = '-';
            src = p, k = (size_t)(e - p);
            break;
        }
        case 'u':
        case 'x':
        case 'X': {
            uint64_t v = len == 1 ? va_arg(a, unsigned long) : va_arg(a, unsigned int);
            if (len == -1)
                v = (unsigned short)v;
            else if (len == -2)
                v = (unsigned char)v;
            p = digits(e, v, *f == 'u' ? 10 : 16, *f == 'X');
            src = p, k = (size_t)(e - p);
            break;
        }
        case 'p': {
            void *v = va_arg(a, void *);
            if (len || !v)
                goto out;               /* glibc: "(nil)" */
            p = digits(e, (uint64_t)(uintptr_t)v, 16, false);
            *--p = 'x';
            *--p = '0';
            src = p, k = (size_t)(e - p);
            break;
        }
        case 'c':
            if (len)
                goto out;
            tmp[0] = (char)(unsigned char)va_arg(a, int);
            src = tmp, k = 1;
            break;
        case 's':
            src = va_arg(a, const char *);
            if (len || !src)
                goto out;               /* glibc: "(null)", or wide strings */
            k = prec < 0 ? strlen(src) : strnlen(src, (size_t)prec);
            break;
        case '%':
            if (len)
                goto out;
            src = "%", k = 1;
            break;
        default:
            goto out;                   /* a flag, a width, floats, %n, "%1$" ... */
        }
        if (k >= cap - n)
            goto out;
        memcpy(out + n, src, k);
        n += k;
    }
    out[n] = 0;
    rc = (int)n;
out:
    va_end(a);
    return rc;
}

/* V8 prints each of node's 2,462 map lines at its start with "%lx %x %.*s\n": printed here
 * directly (~a third of jhp_format's instructions), its fields kept, so that stream.c
 * announces the line without parsing back what was printed from them. */
int jhp_format_map_line(char *out, size_t cap, const char *fmt, va_list ap,
                        struct jhp_map_line *l)
{
    bool v8 = !strcmp(fmt, "%lx %x %.*s\n");
    if (!v8 && strcmp(fmt, "%lx %lx %s\n"))
        return -1;
    va_list a;
    va_copy(a, ap);
    l->start = va_arg(a, unsigned long);
    l->size = v8 ? va_arg(a, unsigned int) : va_arg(a, unsigned long);
    int prec = v8 ? va_arg(a, int) : -1;
    const char *name = va_arg(a, const char *);
    va_end(a);
    if (!name)
        return -1;                      /* glibc: "(null)" */
    size_t k = prec < 0 ? strlen(name) : strnlen(name, (size_t)prec);
    char tmp[2 * 16 + 2], *e = tmp + sizeof tmp, *p = e;
    *--p = ' ';
    p = digits(p, l->size, 16, false);
    *--p = ' ';
    p = digits(p, l->start, 16, false);
    size_t head = (size_t)(e - p);
    if (head + k + 1 >= cap)
        return -1;
    memcpy(out, p, head);
    memcpy(out + head, name, k);
    out[head + k] = '\n';
    out[head + k + 1] = 0;
    l->name = out + head, l->name_len = k;
    l->text = out, l->n = head + k + 1;
    return (int)l->n;
}
