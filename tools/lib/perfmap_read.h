/*
 * perfmap_read.h — a bounds-checked reader for perf map files (/tmp/perf-<pid>.map), as
 * perf, bcc, bpftrace and samply parse them: one "START SIZE name\n" per line, hex (0x
 * before the numbers is read, as perf 6.1 reads it, and reported), the name is the rest of
 * the line. Used by `jitherald inspect/check`, the callgrind
 * symbol table (symtab.h) and the fuzz target. Reads from a caller-owned buffer; never
 * reads past data+len.
 */
#ifndef JHR_PERFMAP_READ_H
#define JHR_PERFMAP_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct jhr_pm_line {
    uint64_t start, size;
    const char *name;           /* not NUL-terminated: name_len bytes */
    size_t name_len;
    size_t off, lineno;         /* where the line is (lineno from 1) */
    bool upper;                 /* uppercase hex digits (perf accepts them) */
    bool prefix0x;              /* "0x" before a number (perf 6.1 accepts it, blazesym not) */
};

/* Parse the line at *off: 1 and *out filled, 0 at the end, -1 for a malformed line (err
 * says why, with the line number). *off moves past the line either way. */
int jhr_pm_next(const uint8_t *data, size_t len, size_t *off, size_t *lineno,
                struct jhr_pm_line *out, char *err, size_t errlen);

/*
 * Check every line as perf reads it: exit status style result, 0 if all lines are usable,
 * -1 at the first problem (message in err). Prints the lines to out if not NULL; warnings
 * that do not stop perf (0x prefixes, uppercase hex, zero size, overlapping ranges: perf
 * shows one of the names arbitrarily) go to warn. strict: 0x prefixes, which the format
 * does not have, are an error too. *nlines gets the number of lines read.
 */
int jhr_pm_check(const uint8_t *data, size_t len, FILE *out, FILE *warn, bool strict,
                 char *err, size_t errlen, size_t *nlines);

#endif
