/*
 * test_run_format.c — the preload formats the perf map lines VMs print itself
 * (adapters/preload/format.c, jhp_format: node's "%lx %x %.*s\n" without vsnprintf, issue
 * 30): what it gives must be glibc's bytes exactly, and whatever it does not take (flags,
 * widths, floats, NULL strings, text past its room) must say so (-1) and leave the
 * caller's arguments as they were, for vsnprintf.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "preload.h"

/* jhp_format into cap bytes, then vsnprintf from the same va_list: they agree, or
 * jhp_format declines (-1) and vsnprintf still reads the arguments from their start. */
static int both(size_t cap, const char *fmt, ...)
{
    char a[512], b[512];
    va_list ap;
    va_start(ap, fmt);
    int n = jhp_format(a, cap, fmt, ap);
    int m = vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    if (n >= 0) {
        CHECK_EQ(n, m);
        CHECK(n >= 0 && strcmp(a, b) == 0);
        if (n != m || strcmp(a, b))
            fprintf(stderr, "  %s: ours \"%s\", glibc's \"%s\"\n", fmt, a, b);
    }
    return n;
}

/* jhp_format_map_line against glibc: the same text, the fields it was printed from, the
 * name inside the text; -1 for what it does not take. */
static int line(size_t cap, const char *fmt, ...)
{
    char a[512], b[512];
    struct jhp_map_line l;
    va_list ap;
    va_start(ap, fmt);
    int n = jhp_format_map_line(a, cap, fmt, ap, &l);
    int m = vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    if (n >= 0) {
        CHECK_EQ(n, m);
        CHECK(strcmp(a, b) == 0);
        CHECK(l.text == a && l.n == (size_t)n);
        CHECK(l.name == a + n - 1 - l.name_len);
        char again[512];
        snprintf(again, sizeof again, "%lx %lx %.*s\n", (unsigned long)l.start,
                 (unsigned long)l.size, (int)l.name_len, l.name);
        CHECK(strcmp(again, b) == 0);
    }
    return n;
}

int main(void)
{
    CHECK(line(512, "%lx %x %.*s\n", 0x7f12a0b3c040ul, 0x1a4u, 13, "Builtin:Abort") > 0);
    CHECK(line(512, "%lx %x %.*s\n", 0ul, 0u, 3, "abcdef") > 0);
    CHECK(line(512, "%lx %x %.*s\n", ULONG_MAX, UINT_MAX, -1, "negative: all") > 0);
    CHECK(line(512, "%lx %x %.*s\n", 1ul, 2u, 0, "none") > 0);
    CHECK(line(512, "%lx %lx %s\n", 0x10ul, ULONG_MAX, "MoarVM-like") > 0);
    CHECK_EQ(line(512, "%lx %x %.*s\n", 1ul, 2u, 4, (const char *)NULL), -1);
    CHECK_EQ(line(512, "%lx %lx %s\n", 1ul, 2ul, (const char *)NULL), -1);
    CHECK_EQ(line(512, "%lx %lx %s", 1ul, 2ul, "no newline"), -1);
    CHECK_EQ(line(512, "%p %lx %s\n", (void *)1, 2ul, "other"), -1);
    CHECK_EQ(line(10, "%lx %lx %s\n", 0x10ul, 0x20ul, "abc"), -1);   /* 10 bytes + NUL */
    CHECK_EQ(line(11, "%lx %lx %s\n", 0x10ul, 0x20ul, "abc"), 10);

    /* what the VMs print: node (V8's PerfBasicLogger), MoarVM, Erlang, Mono, PHP */
    const char *name = "JS:~foo /tmp/app.js:4:15";
    CHECK(both(512, "%lx %x %.*s\n", 0x7f12a0b3c040ul, 0x1a4u, (int)strlen(name), name) > 0);
    CHECK(both(512, "%lx %x %.*s\n", 0x7f12a0b3c040ul, 0x1a4u, 5, name) == 23);
    CHECK(both(512, "%lx %lx %s\n", 0ul, ULONG_MAX, "Builtin:ArrayPush") > 0);
    CHECK(both(512, "%p %lx %s\n", (void *)0x1000, 16ul, "x") > 0);
    CHECK(both(512, "%zx %zx %.*s\n", (size_t)0xabc, (size_t)0, 3, "abcdef") > 0);
    CHECK(both(512, "%llx %llX %jx %tx\n", 0x1234567890abcdefull, 0xdeadbeefull,
               (intmax_t)1, (ptrdiff_t)2) > 0);
    /* integers at their edges, each length */
    CHECK(both(512, "%d %i %u %ld %lu", INT_MIN, INT_MAX, UINT_MAX, LONG_MIN, ULONG_MAX) > 0);
    CHECK(both(512, "%hd %hu %hhd %hhu %hx %hhx", -1, 70000, 200, 300, 0x12345, 0x1ff) > 0);
    CHECK(both(512, "%x %X %x", 0u, 0xabcdefu, 0x80000000u) > 0);
    /* every count of hex digits, odd and even (lowercase is printed two digits a step),
     * and every byte value in each place */
    for (unsigned k = 0; k < 64; k++) {
        unsigned long top = 1ul << k;
        CHECK(both(512, "%lx %lx %lx|", top, top - 1, top | 0x0f0e0d0c0b0a0908ul >> (63 - k)) > 0);
        CHECK(line(512, "%lx %x %.*s\n", top - 1, (unsigned)top, 1, "n") > 0);
    }
    for (unsigned long b = 0; b < 256; b++)
        CHECK(both(512, "%lx %lx %x %X", b, b << 48 | b << 8 | 0x10, (unsigned)b, (unsigned)b << 4) > 0);
    CHECK(both(512, "%c%c%%%s%.3s%.0s|", 'a', 0xe9, "", "abcdef", "gone") > 0);
    CHECK(both(512, "%.*s|%.10s", -1, "negative precision: all of it", "short") > 0);
    CHECK(both(512, "plain text, no conversion\n") > 0);
    CHECK(both(512, "") == 0);
    CHECK(both(512, "%s", "a name with bytes \xff\x01 in it") > 0);
    /* exactly the room, and one byte past it */
    CHECK_EQ(both(6, "%s", "abcde"), 5);
    CHECK_EQ(both(5, "%s", "abcde"), -1);
    CHECK_EQ(both(4, "ab%x", 0x12u), -1);
    CHECK_EQ(both(1, "%s", ""), 0);

    /* declined: vsnprintf's job (and both() checks the arguments were left for it) */
    CHECK_EQ(both(512, "%08lx %x", 1ul, 2u), -1);          /* a flag and a width */
    CHECK_EQ(both(512, "%#lx", 1ul), -1);
    CHECK_EQ(both(512, "%-5s|", "a"), -1);
    CHECK_EQ(both(512, "%5s|", "a"), -1);
    CHECK_EQ(both(512, "% d", 1), -1);
    CHECK_EQ(both(512, "%+d", 1), -1);
    CHECK_EQ(both(512, "%.3d", 1), -1);                    /* precision on an integer */
    CHECK_EQ(both(512, "%f", 1.5), -1);
    CHECK_EQ(both(512, "%s %s", "a", (const char *)NULL), -1);     /* "(null)" */
    CHECK_EQ(both(512, "%p", (void *)NULL), -1);           /* "(nil)" */
    CHECK_EQ(both(512, "%ls", L"wide"), -1);
    CHECK_EQ(both(512, "%1$s", "positional"), -1);
    CHECK_EQ(both(512, "%Lf", 1.0L), -1);
    CHECK_EQ(both(512, "trailing %"), -1);
    return check_done();
}
