/*
 * callgrind.h — naming JIT code in a callgrind.out file after the fact (`jitherald
 * callgrind IN OUT`), from what jitherald wrote while the process ran: the jitdump file
 * (names, file:line tables) or the perf map (names only). Exposed for the fuzz target.
 *
 *     struct jh_cgsyms s = { 0 };
 *     jh_cgsyms_load_jitdump(&s, data, len);        // and/or jh_cgsyms_load_perfmap
 *     jh_cgsyms_finish(&s);
 *     struct jh__buf out = { 0 };
 *     jh_callgrind_rewrite(text, text_len, &s, &out, &stats);
 */
#ifndef JH_TOOLS_CALLGRIND_H
#define JH_TOOLS_CALLGRIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

struct jh_cg_fn {
    uint64_t start, end;
    uint32_t name;              /* index into strs */
    uint32_t line0, nlines;     /* slice of lines, sorted by addr after finish */
    uint32_t seq;               /* load order: a later load wins on overlap */
};

struct jh_cg_line {
    uint64_t addr;
    uint32_t line;
    uint32_t file;              /* index into strs */
};

/* The JIT's functions, as the process announced them. Zero-initialise. */
struct jh_cgsyms {
    struct jh_cg_fn *fns;
    size_t nfns, capfns;
    struct jh_cg_line *lines;
    size_t nlines, caplines;
    char **strs;
    size_t nstrs, capstrs;
    uint32_t *strhash;          /* interning: open addressing, index + 1 */
    size_t strhash_cap;
    const char *object;         /* what ob= says for JIT code (NULL: "[jit]") */
    bool finished;
};

void jh_cgsyms_free(struct jh_cgsyms *s);
/* Add a function; returns its index (>= 0) or -ENOMEM/-EINVAL. */
int jh_cgsyms_add(struct jh_cgsyms *s, uint64_t start, uint64_t size, const char *name,
                  size_t name_len);
/* Add a line row to function fn (rows may come in any order). */
int jh_cgsyms_add_line(struct jh_cgsyms *s, int fn, uint64_t addr, uint32_t line,
                       const char *file, size_t file_len);
/* Readers: 0, or JH_EFORMAT for a file they cannot use at all (what could be read is kept). */
int jh_cgsyms_load_perfmap(struct jh_cgsyms *s, const uint8_t *data, size_t len);
int jh_cgsyms_load_jitdump(struct jh_cgsyms *s, const uint8_t *data, size_t len);
/* Sort for lookups; call once after loading. */
int jh_cgsyms_finish(struct jh_cgsyms *s);
/* The function containing addr (the last loaded one if several), or NULL. */
const struct jh_cg_fn *jh_cgsyms_find(const struct jh_cgsyms *s, uint64_t addr);

struct jh_cg_stats {
    size_t lines;               /* input lines */
    size_t fns_named;           /* address-named functions given a JIT name */
    size_t calls_dropped;       /* jumps inside one JIT function that callgrind saw as calls */
};

/*
 * Rewrite a callgrind.out (text, len bytes) into out: functions callgrind named by address
 * ("0x0000000010000040") that lie in a JIT function get its name, its source file (fl=,
 * cfi=) and line numbers, and object s->object; everything else is kept. Positions are
 * written absolute (relative ones would be wrong after line numbers change); unknown lines
 * are passed through. 0, -ENOMEM, or JH_EFORMAT (not a callgrind profile).
 */
int jh_callgrind_rewrite(const char *text, size_t len, const struct jh_cgsyms *s,
                         struct jh__buf *out, struct jh_cg_stats *st);

#endif
