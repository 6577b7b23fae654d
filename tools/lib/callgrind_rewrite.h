/*
 * callgrind_rewrite.h — naming JIT code in a callgrind.out file after the run (the core of
 * `jitherald callgrind IN OUT`), from a symbol table of the JIT's functions (symtab.h).
 *
 *     struct jh__buf out = { 0 };
 *     struct jhr_cg_stats st;
 *     if (jhr_cg_rewrite(text, text_len, &syms, &out, &st) == 0)
 *         fwrite(out.p, 1, out.len, f);
 */
#ifndef JHR_CALLGRIND_REWRITE_H
#define JHR_CALLGRIND_REWRITE_H

#include <stddef.h>

#include "base/buf.h"
#include "lib/symtab.h"

struct jhr_cg_stats {
    size_t lines;               /* input lines */
    size_t fns_named;           /* fn= blocks of address-named JIT code given a JIT name */
    size_t calls;               /* calls= records, every one kept */
};

/*
 * Rewrite a callgrind.out (text, len bytes) into out: functions callgrind named by address
 * ("0x0000000010000040") that lie in a JIT function get its name, its source file (fl=,
 * cfi=) and line numbers, and object s->object; so do the address-named parts of context
 * names (--separate-callers, --separate-recs); everything else is kept, every call and
 * every cost included. Positions are
 * written absolute (relative ones would be wrong after line numbers change); unknown lines
 * are passed through. s must be finished (jhr_syms_finish). 0, -ENOMEM, or JH_EFORMAT (not
 * a callgrind profile). st may be NULL.
 */
int jhr_cg_rewrite(const char *text, size_t len, const struct jhr_syms *s, struct jh__buf *out,
                   struct jhr_cg_stats *st);

#endif
