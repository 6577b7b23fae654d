/*
 * jitdump_lines.h — a LOAD's line table from the DEBUG_INFO record written before it, read
 * the way perf uses it, with the producers' quirks undone (docs/interop.md):
 *   - V8's and LLVM's +0x40 (jhr_jd_line_skew);
 *   - V8 (node 20) writes each entry's file name, for the functions of a script, from a
 *     buffer that is no longer the name: the right length, other bytes (NULs among them),
 *     so the entries cannot be walked by their terminators. The LOAD's name ends in
 *     " FILE:LINE:COLUMN". When every entry's name is exactly strlen(FILE) bytes and a NUL,
 *     ending at the record's end (before V8's up to 7 bytes of zero padding), the entries
 *     are walked by that length: their addresses and lines are V8's, their file is FILE;
 *   - any other table with a file name that is not UTF-8 or holds control bytes is
 *     dropped whole (the entries after such a name are misaligned): no lines rather than
 *     wrong ones;
 *   - Erlang's entries with an empty name and rows outside the code are dropped; rows are
 *     sorted by offset (V8's go backwards, sometimes).
 * Shared by `jitherald run`'s preload and the CLI; reads only the two records it is given.
 */
#ifndef JHR_JITDUMP_LINES_H
#define JHR_JITDUMP_LINES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jitherald.h"
#include "lib/jitdump_read.h"

#define JHR_LINES_MAXFILES 64

struct jhr_lines {
    struct jh_line *rows;       /* caller's array of cap rows */
    uint32_t n, cap;
    const char *files[JHR_LINES_MAXFILES];  /* into the DEBUG_INFO record, or into file */
    uint32_t nfiles;
    bool realigned;             /* V8's names: walked by the script name's length */
    bool dropped;               /* a table of garbage names, dropped */
    char file[1024];            /* the script's name, for a realigned table */
};

/*
 * The rows of the DEBUG_INFO dbg (read with r's byte order) for the LOAD load: ln->n rows
 * (0 if dbg is not for load's code), at most ln->cap. ln->files point into dbg's bytes or
 * into ln->file: use ln where it is, while dbg's bytes live.
 */
void jhr_jd_load_lines(const struct jhr_jd *r, const struct jhr_jd_rec *dbg,
                       const struct jhr_jd_rec *load, struct jhr_lines *ln);

/* The FILE of a V8 LOAD name "JS:*f FILE:LINE:COLUMN" whose FILE is exactly file_len bytes
 * (names may hold spaces): a pointer into name, or NULL. */
const char *jhr_v8_script(const char *name, size_t name_len, size_t file_len);

#endif
