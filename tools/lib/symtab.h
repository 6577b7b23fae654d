/*
 * symtab.h — the JIT's functions as the process announced them, read back from the files
 * jitherald wrote while it ran: the jitdump (names, file:line tables, moves) or the perf
 * map (names only). Built for the callgrind rewriter (callgrind_rewrite.h), which looks up
 * every address-named block of a profile in it.
 *
 *     struct jhr_syms s = { 0 };
 *     jhr_syms_load_jitdump(&s, data, len);        // and/or jhr_syms_load_perfmap
 *     jhr_syms_finish(&s);
 *     const struct jhr_sym_fn *f = jhr_syms_find(&s, addr);
 *     if (f) printf("%s\n", s.strs[f->name]);
 *     jhr_syms_free(&s);
 *
 * Names and file names are interned (stored once); a name holds no NUL, CR or LF, since
 * callgrind's format is one name per line.
 */
#ifndef JHR_SYMTAB_H
#define JHR_SYMTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/itab.h"

struct jhr_sym_fn {
    uint64_t start, end;
    uint32_t name;              /* index into strs */
    uint32_t line0, nlines;     /* slice of lines, sorted by addr after finish */
    uint32_t seq;               /* load order: a later load wins on overlap */
};

struct jhr_sym_line {
    uint64_t addr;
    uint32_t line;
    uint32_t file;              /* index into strs */
};

/* Zero-initialise. */
struct jhr_syms {
    struct jhr_sym_fn *fns;
    size_t nfns, capfns;
    struct jhr_sym_line *lines;
    size_t nlines, caplines;
    char **strs;
    size_t nstrs, capstrs;
    struct jhr_itab strtab;     /* interning: strs by content */
    const char *object;         /* what ob= says for JIT code (NULL: "[jit]") */
    bool finished;
};

void jhr_syms_free(struct jhr_syms *s);
/* Add a function; returns its index (>= 0) or -ENOMEM/-EINVAL. */
int jhr_syms_add(struct jhr_syms *s, uint64_t start, uint64_t size, const char *name,
                 size_t name_len);
/* Add a line row to function fn, the last one added (rows may come in any order). */
int jhr_syms_add_line(struct jhr_syms *s, int fn, uint64_t addr, uint32_t line,
                      const char *file, size_t file_len);
/* Readers: 0, or JH_EFORMAT for a file they cannot use at all (what could be read is kept). */
int jhr_syms_load_perfmap(struct jhr_syms *s, const uint8_t *data, size_t len);
int jhr_syms_load_jitdump(struct jhr_syms *s, const uint8_t *data, size_t len);
/* Sort for lookups; call once after loading. */
int jhr_syms_finish(struct jhr_syms *s);
/* The function containing addr (the last loaded one if several), or NULL. */
const struct jhr_sym_fn *jhr_syms_find(const struct jhr_syms *s, uint64_t addr);
/* The line row in effect at addr in f (the first row when addr precedes them all), or
 * NULL when f has no line table. */
const struct jhr_sym_line *jhr_syms_line_at(const struct jhr_syms *s,
                                            const struct jhr_sym_fn *f, uint64_t addr);

#endif
