/*
 * fuzz_symtab.c — the symbol table `jitherald callgrind` builds from a jitdump or a perf map
 * (tools/lib/symtab.c) on arbitrary bytes: the input up to the first NUL is a perf map, the
 * rest a jitdump. Every lookup must answer with a function that contains the address, and
 * a line row of that function.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/symtab.h"

static void probe(const struct jhr_syms *s, uint64_t addr)
{
    const struct jhr_sym_fn *f = jhr_syms_find(s, addr);
    if (!f)
        return;
    if (addr < f->start || addr >= f->end || f->name >= s->nstrs)
        abort();
    const struct jhr_sym_line *l = jhr_syms_line_at(s, f, addr);
    if (l && (l < s->lines + f->line0 || l >= s->lines + f->line0 + f->nlines || l->file >= s->nstrs))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    size_t map_len = nul ? (size_t)(nul - data) : size;
    struct jhr_syms s = { 0 };
    jhr_syms_load_perfmap(&s, data, map_len);
    if (nul)
        jhr_syms_load_jitdump(&s, nul + 1, size - map_len - 1);
    jhr_syms_finish(&s);
    for (size_t i = 0; i < s.nfns && i < 256; i++) {
        const struct jhr_sym_fn *f = &s.fns[i];
        probe(&s, f->start);
        probe(&s, f->end - 1);
        probe(&s, f->start + (f->end - f->start) / 2);
        probe(&s, f->end);
        for (uint32_t k = 0; k < f->nlines && k < 16; k++)
            probe(&s, s.lines[f->line0 + k].addr);
    }
    for (size_t i = 0; i + 8 <= size && i < 64; i += 8) {
        uint64_t a;
        memcpy(&a, data + i, 8);
        probe(&s, a);
    }
    jhr_syms_free(&s);
    return 0;
}
