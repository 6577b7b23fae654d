/*
 * perfmap_read.c — see perfmap_read.h. The rules come from what the readers do: perf
 * (util/symbol.c, read_perf_map) strips the last character of each line, so a missing
 * final newline eats the last name's last letter; blazesym and older perf reject "0x";
 * bcc/bpftrace split on the first two spaces.
 */
#include "lib/perfmap_read.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/vec.h"
#include "lib/text.h"

/* Set the message; evaluates to -1. */
#define pfail(err, errlen, ...) (jhr_errf((err), (errlen), __VA_ARGS__), -1)

/* A hex digit's value + 1 (0: not a digit), + 32 for an uppercase one. (A table: the
 * preload reads each line of node's map as it is written, issue 30.) */
static const uint8_t hexd[256] = {
    ['0'] = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
    ['a'] = 11, 12, 13, 14, 15, 16,
    ['A'] = 43, 44, 45, 46, 47, 48,
};

/* Hex number at p[0..n): stops at the first non-hex byte. Returns digits used, -1 on
 * overflow or none. *upper set if any uppercase digit was seen. */
static int hexnum(const uint8_t *p, size_t n, uint64_t *v, bool *upper)
{
    uint64_t r = 0;
    unsigned seen = 0, d;
    size_t i = 0;
    for (; i < n && (d = hexd[p[i]]) != 0; i++) {
        seen |= d;
        r = r << 4 | (uint64_t)((d - 1) & 15);
    }
    if (i == 0 || i > 16)
        return -1;      /* (past 16 digits r overflowed: too many, even if zeros, as before) */
    if (seen & 32)
        *upper = true;
    *v = r;
    return (int)i;
}

int jhr_pm_next(const uint8_t *data, size_t len, size_t *off, size_t *lineno,
                struct jhr_pm_line *out, char *err, size_t errlen)
{
    if (*off >= len)
        return 0;
    const uint8_t *p = data + *off;
    size_t left = len - *off;
    const uint8_t *nl = memchr(p, '\n', left);
    size_t n = nl ? (size_t)(nl - p) : left;
    size_t ln = ++*lineno;
    memset(out, 0, sizeof *out);
    out->off = *off;
    out->lineno = ln;
    *off += nl ? n + 1 : n;
    if (!nl)
        return pfail(err, errlen, "line %zu: no newline at the end of the file: perf drops the "
                     "last character of every line, so this name loses its last letter", ln);
    bool upper = false;
    size_t i = 0;
    if (n >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
        out->prefix0x = true, i = 2;
    int k = hexnum(p + i, n - i, &out->start, &upper);
    if (k < 0)
        return pfail(err, errlen, "line %zu: does not start with a hex address of at most 16 "
                     "digits", ln);
    i += (size_t)k;
    if (i >= n || p[i] != ' ')
        return pfail(err, errlen, "line %zu: a single space must follow the start address", ln);
    i++;
    if (n - i >= 2 && p[i] == '0' && (p[i + 1] == 'x' || p[i + 1] == 'X'))
        out->prefix0x = true, i += 2;
    k = hexnum(p + i, n - i, &out->size, &upper);
    if (k < 0)
        return pfail(err, errlen, "line %zu: no hex size after the start address", ln);
    i += (size_t)k;
    if (i >= n || p[i] != ' ')
        return pfail(err, errlen, "line %zu: a space and a name must follow the size", ln);
    i++;
    if (i >= n)
        return pfail(err, errlen, "line %zu: empty name", ln);
    if (out->start + out->size < out->start)
        return pfail(err, errlen, "line %zu: range 0x%" PRIx64 "+0x%" PRIx64 " wraps around",
                     ln, out->start, out->size);
    const uint8_t *cr = memchr(p + i, '\r', n - i), *nul = memchr(p + i, 0, n - i);
    if (cr || nul)
        return pfail(err, errlen, "line %zu: name contains a %s byte", ln,
                     cr && (!nul || cr < nul) ? "carriage return" : "NUL");
    out->name = (const char *)p + i;
    out->name_len = n - i;
    out->upper = upper;
    return 1;
}

struct rng { uint64_t start, end; size_t line; };

static int cmp_rng(const void *a, const void *b)
{
    const struct rng *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

int jhr_pm_check(const uint8_t *data, size_t len, FILE *out, FILE *warn, bool strict,
                 char *err, size_t errlen, size_t *nlines)
{
    size_t off = 0, lineno = 0, n = 0, cap = 0, n0x = 0, first0x = 0, nnull = 0, firstnull = 0;
    struct rng *r = NULL;
    struct jhr_pm_line l;
    int rc, ret = 0;
    bool warned_upper = false, warned_zero = false, warned_short = false;
    if (len == 0) {
        ret = pfail(err, errlen, "empty file");
        goto out;
    }
    while ((rc = jhr_pm_next(data, len, &off, &lineno, &l, err, errlen)) != 0) {
        if (rc < 0) {
            ret = -1;
            goto out;
        }
        if (l.prefix0x && !n0x++)
            first0x = l.lineno;
        if (l.upper && warn && !warned_upper) {
            fprintf(warn, "warning: line %zu: uppercase hex (perf accepts it; some readers "
                    "do not)\n", l.lineno);
            warned_upper = true;
        }
        if (l.name_len < 3 && warn && !warned_short) {
            fprintf(warn, "warning: line %zu: a name shorter than 3 characters: perf skips "
                    "the line (tools/perf/util/symbol.c, dso__load_perf_map); pad it with "
                    "spaces\n", l.lineno);
            warned_short = true;
        }
        /* glibc's printf prints a NULL %s as "(null)": a VM that had no name at hand */
        if (l.name_len == 6 && !memcmp(l.name, "(null)", 6) && !nnull++)
            firstnull = l.lineno;
        if (l.size == 0 && warn && !warned_zero) {
            fprintf(warn, "warning: line %zu: size 0: no address will ever resolve to it\n",
                    l.lineno);
            warned_zero = true;
        }
        if (out)
            fprintf(out, "%6zu  0x%" PRIx64 "..0x%" PRIx64 "  %.*s\n", l.lineno, l.start,
                    l.start + l.size, (int)(l.name_len > 300 ? 300 : l.name_len), l.name);
        if (JH__VEC_RESERVE(r, cap, n + 1)) {
            ret = pfail(err, errlen, "out of memory");
            goto out;
        }
        r[n++] = (struct rng){ l.start, l.start + l.size, l.lineno };
    }
    if (warn && n > 1) {
        qsort(r, n, sizeof *r, cmp_rng);
        size_t overlaps = 0, first = 0, other = 0;
        uint64_t reach = r[0].end;
        size_t reach_line = r[0].line;
        for (size_t i = 1; i < n; i++) {
            if (r[i].start < reach) {
                if (!overlaps++) {
                    first = r[i].line;
                    other = reach_line;
                }
            }
            if (r[i].end > reach) {
                reach = r[i].end;
                reach_line = r[i].line;
            }
        }
        if (overlaps)
            fprintf(warn, "warning: %zu lines overlap earlier ones (first: line %zu with line "
                    "%zu): addresses were reused; perf shows one of the names arbitrarily\n",
                    overlaps, first, other);
    }
    if (nnull && warn)
        fprintf(warn, "warning: %zu line%s named \"(null)\" (first: line %zu): the VM printed a "
                "NULL name (printf's %%s of NULL), so perf names that code \"(null)\"\n", nnull,
                nnull > 1 ? "s" : "", firstnull);
    if (n0x && warn)
        fprintf(warn, "%s: line %zu: 0x before the numbers (as Erlang writes them): perf and bcc "
                "accept it, ddprof and blazesym reject it%s%zu lines%s\n", strict ? "strict" :
                "warning", first0x, n0x > 1 ? " [" : "", n0x, n0x > 1 ? "]" : "");
    if (n0x && strict)
        ret = pfail(err, errlen, "0x prefixes: the perf map format has bare hex numbers "
                    "(--strict)");
out:
    free(r);
    if (nlines)
        *nlines = n;
    return ret;
}
