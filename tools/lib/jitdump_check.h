/*
 * jitdump_check.h — a whole jitdump file checked against what perf inject --jit does with
 * it (`jitherald check`), optionally printed record by record (`jitherald inspect`): the
 * rules between records that jhr_jd_next (jitdump_read.h) does not know — DEBUG_INFO and
 * UNWINDING_INFO right before their LOAD, code_index never reused, MOVE of a known LOAD
 * from where it is, line addresses inside the code, unwind tables that match the code in
 * perf's synthetic ELF (eh_frame.h).
 *
 * As liberal as perf, as honest as a linter: what perf 6.1 refuses, or turns into wrong
 * names or wrong unwinding, is an error; what it accepts but the producer got wrong (V8's
 * empty unwinding info and +0x40 line skew, Erlang's empty trailing line entries, LLVM's
 * vma 0, line tables with entries outside the code or out of order, ...) is a quirk:
 * counted, reported once per kind with its first offset and whom it hurts, and decoded all
 * the same. With JHR_JD_STRICT every quirk, including those that hurt nobody (padding,
 * version 0, Erlang's first line in the prologue), is an error: the specification, not
 * perf's tolerance. docs/interop.md has the table of quirks and who writes them.
 *
 * A file whose last record is cut short after a valid prefix of whole records is such a
 * quirk (JHR_JDQ_CUT), not an error: V8 writes its jitdump through a 4 KiB stdio buffer,
 * so a node run ended by exit or Ctrl-C leaves one, and perf reads the records before the
 * cut and stops there. A header cut short, or a malformed record with bytes after it, is
 * still an error.
 */
#ifndef JHR_JITDUMP_CHECK_H
#define JHR_JITDUMP_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lib/jitdump_read.h"

enum jhr_jd_quirk {
    JHR_JDQ_VERSION0,           /* header version 0 */
    JHR_JDQ_TSC,                /* timestamps are TSC ticks */
    JHR_JDQ_TS_BACK,            /* a timestamp smaller than the one before */
    JHR_JDQ_UNKNOWN,            /* unknown record id */
    JHR_JDQ_AFTER_CLOSE,        /* records after CLOSE */
    JHR_JDQ_NO_CLOSE,           /* no CLOSE record */
    JHR_JDQ_PID,                /* LOAD pid != header pid */
    JHR_JDQ_VMA,                /* LOAD vma != code_addr (LLVM: 0) */
    JHR_JDQ_LOAD_GAP,           /* bytes between a LOAD's name and its code */
    JHR_JDQ_DEBUG_PAD,          /* DEBUG_INFO bytes after the last entry (V8) */
    JHR_JDQ_LINE_SKEW,          /* line addresses at code+0x40 (V8, LLVM) */
    JHR_JDQ_LINE_BEFORE,        /* the first line entry before the code (Erlang) */
    JHR_JDQ_LINE_OUTSIDE,       /* other line entries outside the code */
    JHR_JDQ_LINE_BACK,          /* line addresses going backwards */
    JHR_JDQ_LINE_EMPTY_FILE,    /* an entry with an empty file name (Erlang: the last) */
    JHR_JDQ_LINE_GARBAGE,       /* a file name with control bytes, entries misaligned (V8) */
    JHR_JDQ_UNWIND_EMPTY,       /* UNWINDING_INFO with no .eh_frame (V8) */
    JHR_JDQ_UNWIND_UNMAPPED,    /* mapped_size smaller than the .eh_frame it maps */
    JHR_JDQ_UNWIND_PAD,         /* UNWINDING_INFO bytes after unwinding_size (V8) */
    JHR_JDQ_CUT,                /* the last record cut short: the writer stopped (V8) */
    JHR_JDQ_COUNT
};

struct jhr_jd_stats {
    size_t records, loads, moves, debug, unwind, closes, unknown;
    size_t lines;                       /* DEBUG_INFO entries decoded */
    size_t quirks[JHR_JDQ_COUNT];       /* records showing each quirk */
};

/* flags */
#define JHR_JD_VERBOSE 1u       /* out: line tables and unwind rules too */
#define JHR_JD_STRICT  2u       /* every quirk is an error */

/* A quirk's short name ("line-skew-0x40") and whether it is reported without --strict. */
const char *jhr_jd_quirk_name(enum jhr_jd_quirk q);
bool jhr_jd_quirk_warns(enum jhr_jd_quirk q);

/*
 * Validate the whole file. Prints a line per record to out when out is not NULL (the
 * `inspect` view). Returns 0 if perf takes everything, JH_EFORMAT at the first error (the
 * message, with offset and record, is in r->err; out stops there) or, with JHR_JD_STRICT,
 * when any quirk was found. Quirks go to warn when not NULL, one line per kind, after the
 * walk: "warning: offset 0x..: what [N records]" ("strict: " with JHR_JD_STRICT).
 * *stats (if not NULL) counts what was read.
 */
int jhr_jd_check(struct jhr_jd *r, const uint8_t *data, size_t len, FILE *out, unsigned flags,
                 FILE *warn, struct jhr_jd_stats *stats);

#endif
