/*
 * elf_grow_mem.c — see elf_grow_mem.h. The region: the ELF header, .shstrtab, two build-id
 * notes and two section header tables (each sized for JH__ELFM_RUNS runs), then a chunk
 * per growing section, bump-allocated from the tail.
 */
#include "fmt/elf_grow_mem.h"

#include <elf.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "fmt/arch.h"
#include "fmt/elf_image.h"
#include "fmt/cfi.h"
#include "fmt/func.h"

/* Section indices: the fixed ones, then the .text runs. */
enum { I_EH = 1, I_INFO, I_ABBREV, I_LINE, I_STR, I_RANGES, I_SYMTAB, I_STRTAB, I_NOTE,
       I_SHSTRTAB, I_TEXT };
#define NSEC_MAX (I_TEXT + JH__ELFM_RUNS)
_Static_assert(NSEC_MAX == JH__ELFM_NSEC, "the section count");
#define TABLE_SIZE (NSEC_MAX * sizeof(Elf64_Shdr))
#define VIEW sizeof(Elf64_Ehdr)         /* view v's ELF header is at base + v * VIEW */

static const char shstrtab[] = "\0.eh_frame\0.debug_info\0.debug_abbrev\0.debug_line\0"
                               ".debug_str\0.debug_ranges\0.symtab\0.strtab\0"
                               ".note.gnu.build-id\0.shstrtab\0.text";
/* each name's offset in shstrtab, by section index (the runs share the last) */
static const uint32_t sec_name[I_TEXT + 1] = { 0, 1, 11, 23, 37, 49, 60, 74, 82, 90, 109, 119 };

/* The growing sections' buffers, in a fixed order (JH__ELFM_NGROW). */
static const size_t gbuf_at[JH__ELFM_NGROW] = {
    offsetof(struct jh__elfm, eh), offsetof(struct jh__elfm, dw.info),
    offsetof(struct jh__elfm, dw.abbrev), offsetof(struct jh__elfm, dw.line),
    offsetof(struct jh__elfm, dw.str), offsetof(struct jh__elfm, dw.ranges),
    offsetof(struct jh__elfm, sym), offsetof(struct jh__elfm, str) };

static inline struct jh__buf *gbuf(struct jh__elfm *g, int k)
{
    return (struct jh__buf *)(void *)((char *)g + gbuf_at[k]);
}

static size_t align8(size_t v) { return (v + 7) & ~(size_t)7; }

/* Room for a chunk of n bytes at the tail: its offset, or SIZE_MAX. */
static size_t take(struct jh__elfm *g, size_t n)
{
    size_t at = align8(g->tail);
    if (at > g->reserve || n > g->reserve - at)
        return SIZE_MAX;
    g->tail = at + n;
    return at;
}

/* First chunks: what a few hundred LuaJIT traces take (they double from there; each time
 * an append is encoded again: ~4% of them with chunks a quarter of these). */
static const size_t first_cap[JH__ELFM_NGROW] = { 8192, 16384, 256, 16384, 8192, 8192, 16384, 8192 };

int jh__elfm_init(struct jh__elfm *g, void *base, size_t reserve, const struct jh__arch *arch,
                  bool symbols)
{
    memset(g, 0, sizeof *g);
    g->base = base, g->reserve = reserve;
    g->arch = arch ? arch : JH__ARCH_HOST;
    g->symbols = symbols;
    g->cur = -1;
    g->table_stale = true;
    g->run_dirty = -1;
    g->eh_cie[0] = g->eh_cie[1] = SIZE_MAX;
    g->tail = 2 * VIEW;                 /* the two views' ELF headers */
    g->shstr_off = take(g, sizeof shstrtab);
    g->note_off[0] = take(g, JH__BUILD_ID_NOTE_SIZE);
    g->note_off[1] = take(g, JH__BUILD_ID_NOTE_SIZE);
    g->table_off[0] = take(g, TABLE_SIZE);
    g->table_off[1] = take(g, TABLE_SIZE);
    for (int k = 0; k < JH__ELFM_NGROW; k++) {
        size_t at = take(g, first_cap[k]);
        if (at == SIZE_MAX)
            return -ENOSPC;
        *gbuf(g, k) = (struct jh__buf){ .p = g->base + at, .cap = first_cap[k], .fixed = 1 };
    }
    if (g->table_off[1] == SIZE_MAX)
        return -ENOSPC;
    memcpy(g->base + g->shstr_off, shstrtab, sizeof shstrtab);
    Elf64_Ehdr eh;
    jh__elf_ehdr_init(&eh, ET_DYN, g->arch->e_machine);
    eh.e_shnum = NSEC_MAX;              /* the runs not there yet: null entries */
    eh.e_shstrndx = I_SHSTRTAB;
    memcpy(g->base, &eh, sizeof eh);
    memcpy(g->base + VIEW, &eh, sizeof eh);
    Elf64_Sym null = { 0 };
    jh__buf_put(&g->sym, &null, sizeof null);
    jh__buf_u8(&g->str, 0);
    struct jh__dwarf_opts dopts = { 0 };
    int err = jh__dwarf_begin(&g->dw, &dopts);
    return err == -ENOBUFS ? -ENOSPC : err;
}

static void run_entry(const struct jh__elfm *g, Elf64_Shdr *sh, size_t r)
{
    sh[I_TEXT + r] = r >= g->nruns ? (Elf64_Shdr){ 0 } :
        (Elf64_Shdr){ .sh_name = sec_name[I_TEXT], .sh_type = SHT_NOBITS,
                      .sh_flags = SHF_ALLOC | SHF_EXECINSTR, .sh_addr = g->run[r].lo,
                      .sh_offset = 2 * VIEW, .sh_size = g->run[r].hi - g->run[r].lo,
                      .sh_addralign = 1 };
}

/* The sections as the debugger will see them, into a table at dst: the growing ones at
 * off[k] (from the image's start, which lies at image), the note at note. */
static void write_table(const struct jh__elfm *g, uint8_t *dst, const uint8_t *image,
                        const size_t off[JH__ELFM_NGROW], size_t note, size_t shstr)
{
    static const uint32_t type[JH__ELFM_NGROW] = { SHT_PROGBITS, SHT_PROGBITS, SHT_PROGBITS,
        SHT_PROGBITS, SHT_PROGBITS, SHT_PROGBITS, SHT_SYMTAB, SHT_STRTAB };
    Elf64_Shdr sh[NSEC_MAX];
    /* (the runs after the last: null entries; this area was written two tables ago, with
     * at most two runs more: jh__elfm_pop) */
    uint32_t n = I_TEXT + (uint32_t)g->nruns, clear = n + 2 < NSEC_MAX ? n + 2 : NSEC_MAX;
    memset(sh, 0, clear * sizeof sh[0]);
    for (int k = 0; k < JH__ELFM_NGROW; k++) {
        const struct jh__buf *b = gbuf((struct jh__elfm *)g, k);
        if (!b->len)                    /* left out, as fmt/elf_image.c's: a null entry */
            continue;
        Elf64_Shdr *s = &sh[I_EH + k];
        *s = (Elf64_Shdr){ .sh_name = sec_name[I_EH + k], .sh_type = type[k],
                           .sh_offset = off[k], .sh_size = b->len, .sh_addralign = 1 };
        if (k == 0) {
            s->sh_flags = SHF_ALLOC;
            s->sh_addr = (uint64_t)(uintptr_t)(image + off[k]);
            s->sh_addralign = 8;
        } else if (I_EH + k == I_STR) {
            s->sh_flags = SHF_MERGE | SHF_STRINGS;
            s->sh_entsize = 1;
        } else if (I_EH + k == I_SYMTAB) {
            s->sh_link = I_STRTAB, s->sh_info = 1;
            s->sh_entsize = sizeof(Elf64_Sym), s->sh_addralign = 8;
        }
    }
    sh[I_NOTE] = (Elf64_Shdr){ .sh_name = sec_name[I_NOTE], .sh_type = SHT_NOTE,
                               .sh_offset = note, .sh_size = JH__BUILD_ID_NOTE_SIZE,
                               .sh_addralign = 4 };
    sh[I_SHSTRTAB] = (Elf64_Shdr){ .sh_name = sec_name[I_SHSTRTAB], .sh_type = SHT_STRTAB,
                                   .sh_offset = shstr, .sh_size = sizeof shstrtab,
                                   .sh_addralign = 1 };
    for (size_t r = 0; r < g->nruns; r++)
        run_entry(g, sh, r);
    memcpy(dst, sh, clear * sizeof sh[0]);
}

static void write_note(const struct jh__elfm *g, uint8_t *dst)
{
    uint8_t id[JH__BUILD_ID_SIZE];
    jh__bid_final(&g->bid, g->lo, g->hi - g->lo, id);
    jh__bid_note(dst, id);
}

/* Step 2: the next note and table, in the areas the current table does not use. The table
 * is g->table brought up to date: what an append changes (the sections' sizes, the note's
 * place, one run) field by field, the rest only when a chunk moved or a section appeared or
 * went (a table built whole was ~700 instructions an append, a LuaJIT trace's). */
static void prepare(struct jh__elfm *g)
{
    int next = g->cur == 0;
    Elf64_Shdr *sh = (Elf64_Shdr *)(void *)g->table;
    write_note(g, g->base + g->note_off[next]);
    for (int k = 0; k < JH__ELFM_NGROW && !g->table_stale; k++) {
        const struct jh__buf *b = gbuf(g, k);
        Elf64_Shdr *s = &sh[I_EH + k];
        if (!b->len != (s->sh_type == SHT_NULL) || (b->len && s->sh_offset != (size_t)(b->p - g->base)))
            g->table_stale = true;
        s->sh_size = b->len;
    }
    if (g->table_stale) {
        size_t off[JH__ELFM_NGROW];
        for (int k = 0; k < JH__ELFM_NGROW; k++)
            off[k] = (size_t)(gbuf(g, k)->p - g->base);
        write_table(g, (uint8_t *)sh, g->base, off, g->note_off[next], g->shstr_off);
        g->table_stale = false;
    } else if (g->run_dirty >= 0) {
        run_entry(g, sh, (size_t)g->run_dirty);
    }
    g->run_dirty = -1;
    sh[I_NOTE].sh_offset = g->note_off[next];
    uint32_t n = I_TEXT + (uint32_t)g->nruns, clear = n + 2 < NSEC_MAX ? n + 2 : NSEC_MAX;
    Elf64_Shdr *to = (Elf64_Shdr *)(void *)(g->base + g->table_off[next]);
    memcpy(to, sh, clear * sizeof *sh);
    for (uint32_t i = 1; next && i < n; i++)    /* (view 1 starts VIEW bytes in) */
        to[i].sh_offset -= to[i].sh_type != SHT_NULL ? VIEW : 0;
}

void jh__elfm_flip(struct jh__elfm *g)
{
    int next = g->cur == 0;
    /* every byte the new table names is written before the table is the view's: a
     * debugger stops us between any two instructions, and reads what was stored by then */
    __atomic_store_n((uint64_t *)(void *)(g->base + next * VIEW + offsetof(Elf64_Ehdr, e_shoff)),
                     (uint64_t)(g->table_off[next] - next * VIEW), __ATOMIC_RELEASE);
    g->cur = next;
}

/* A chunk twice the size for each section that wanted more room (fixed == 2), its bytes
 * copied: 0 or -ENOSPC. */
static int grow_chunks(struct jh__elfm *g)
{
    for (int k = 0; k < JH__ELFM_NGROW; k++) {
        struct jh__buf *b = gbuf(g, k);
        if (b->fixed != 2)
            continue;
        b->fixed = 1;
        size_t cap = 2 * b->cap, at = take(g, cap);
        if (at == SIZE_MAX)
            return -ENOSPC;
        memcpy(g->base + at, b->p, b->len);
        b->p = g->base + at;
        b->cap = cap;
    }
    return 0;
}

/* The .text run f goes into (extended), or a new one: its index, or -1 (runs full). */
static int place_run(struct jh__elfm *g, const struct jh__func *f, bool join_prev,
                     bool join_next)
{
    uint64_t lo = f->start, hi = f->start + f->size;
    g->undo.run = -1;
    /* the nearest run below and above f */
    int below = -1, above = -1;
    for (size_t r = 0; r < g->nruns; r++) {
        const struct jh__elfm_run *x = &g->run[r];
        if (x->lo <= lo && hi <= x->hi)
            return (int)r;              /* a section spanning the gap f fills */
        if (x->hi <= lo && (below < 0 || x->hi > g->run[below].hi))
            below = (int)r;
        if (x->lo >= hi && (above < 0 || x->lo < g->run[above].lo))
            above = (int)r;
    }
    int r = join_prev && below >= 0 ? below : join_next && above >= 0 ? above : -1;
    if (r >= 0) {
        g->run_dirty = r;
        g->undo.run = r;
        g->undo.was = g->run[r];
        if (lo < g->run[r].lo)
            g->run[r].lo = lo;
        if (hi > g->run[r].hi)
            g->run[r].hi = hi;
        return r;
    }
    if (g->nruns == JH__ELFM_RUNS)
        return -1;
    g->run[g->nruns] = (struct jh__elfm_run){ lo, hi };
    g->run_dirty = (int)g->nruns;
    return (int)g->nruns++;
}

/* Everything one function appends, or nothing (the lengths as they were). */
static int append(struct jh__elfm *g, const struct jh__func *f, int run)
{
    const char *name = g->symbols ? jh__func_symbol(f) : f->name;
    size_t len = g->symbols ? jh__func_symbol_or_name_len(f) : jh__func_name_len(f);
    if (g->str.len > UINT32_MAX - len - 1)
        return -E2BIG;
    Elf64_Sym sym = { .st_name = (uint32_t)g->str.len,
                      .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC), .st_other = STV_DEFAULT,
                      .st_shndx = (uint16_t)(I_TEXT + run), .st_value = f->start,
                      .st_size = f->size };
    jh__buf_put(&g->sym, &sym, sizeof sym);
    jh__buf_put(&g->str, name, len);
    jh__buf_u8(&g->str, 0);
    int err = g->sym.err ? g->sym.err : g->str.err;
    if (!err) {
        int n = jh__cfi_eh_frame_grow(&g->eh, g->arch, g->eh_cie, f, NULL);
        err = n < 0 ? n : 0;
    }
    if (!err)
        err = jh__dwarf_add_named(&g->dw, f);
    return err;
}

int jh__elfm_add(struct jh__elfm *g, const struct jh__func *f, uint64_t fn_bid,
                 bool join_prev, bool join_next)
{
    if (!f || !f->size || f->start + (f->size - 1) < f->start)
        return -EINVAL;
    for (int k = 0; k < JH__ELFM_NGROW; k++)
        g->undo.len[k] = gbuf(g, k)->len;
    g->undo.eh_cie[0] = g->eh_cie[0], g->undo.eh_cie[1] = g->eh_cie[1];
    g->undo.nruns = g->nruns;
    g->undo.lo = g->lo, g->undo.hi = g->hi, g->undo.bid = g->bid;
    g->undo.ok = false;
    int run = place_run(g, f, join_prev, join_next);
    if (run < 0)
        return -E2BIG;
    int err;
    while ((err = append(g, f, run)) == -ENOBUFS) {
        for (int k = 0; k < JH__ELFM_NGROW; k++) {
            struct jh__buf *b = gbuf(g, k);
            b->len = g->undo.len[k], b->err = 0;
        }
        g->eh_cie[0] = g->undo.eh_cie[0], g->eh_cie[1] = g->undo.eh_cie[1];
        if ((err = grow_chunks(g)))
            break;
    }
    if (err) {
        for (int k = 0; k < JH__ELFM_NGROW; k++) {
            struct jh__buf *b = gbuf(g, k);
            b->len = g->undo.len[k], b->err = 0, b->fixed = 1;
        }
        g->eh_cie[0] = g->undo.eh_cie[0], g->eh_cie[1] = g->undo.eh_cie[1];
        if (g->undo.run >= 0)
            g->run[g->undo.run] = g->undo.was;
        g->nruns = g->undo.nruns;
        g->run_dirty = -1;
        return err;
    }
    if (!g->nfns++ || f->start < g->lo)
        g->lo = f->start;
    if (f->start + f->size > g->hi)
        g->hi = f->start + f->size;
    jh__bid_add(&g->bid, fn_bid);
    g->undo.ok = true;
    prepare(g);
    return 0;
}

int jh__elfm_pop(struct jh__elfm *g)
{
    if (!g->undo.ok)
        return -ENOENT;
    g->undo.ok = false;
    for (int k = 0; k < JH__ELFM_NGROW; k++)
        gbuf(g, k)->len = g->undo.len[k];
    g->eh_cie[0] = g->undo.eh_cie[0], g->eh_cie[1] = g->undo.eh_cie[1];
    if (g->undo.run >= 0)
        g->run[g->undo.run] = g->undo.was;
    g->run_dirty = g->undo.run >= 0 ? g->undo.run : g->nruns > g->undo.nruns ? (int)g->undo.nruns : -1;
    g->nruns = g->undo.nruns;
    g->lo = g->undo.lo, g->hi = g->undo.hi, g->bid = g->undo.bid;
    g->nfns--;
    prepare(g);
    return 0;
}

int jh__elfm_copy(const struct jh__elfm *g, struct jh__buf *out)
{
    if (g->cur < 0)
        return -ENOENT;
    size_t off[JH__ELFM_NGROW], at = sizeof(Elf64_Ehdr) + sizeof shstrtab;
    size_t note = (at + 3) & ~(size_t)3;
    at = note + JH__BUILD_ID_NOTE_SIZE;
    for (int k = 0; k < JH__ELFM_NGROW; k++) {
        at = align8(at);
        off[k] = at;
        at += gbuf((struct jh__elfm *)g, k)->len;
    }
    /* (write_table may clear two entries past the last) */
    size_t table = align8(at), total = table + (I_TEXT + g->nruns + 2) * sizeof(Elf64_Shdr);
    jh__buf_align(out, 8);
    size_t start = out->len;
    if (!out->p && !out->err) {
        /* exactly the image (and the caller's head room), as jh__elf_image's */
        if (!(out->p = malloc(start + total)))
            return out->err = -ENOMEM;
        out->cap = start + total;
    }
    if (jh__buf_reserve(out, total))
        return -ENOMEM;
    uint8_t *img = out->p + start;
    memset(img, 0, total);
    memcpy(img, g->base, sizeof(Elf64_Ehdr));
    memcpy(img + sizeof(Elf64_Ehdr), shstrtab, sizeof shstrtab);
    write_note(g, img + note);
    for (int k = 0; k < JH__ELFM_NGROW; k++) {
        const struct jh__buf *b = gbuf((struct jh__elfm *)g, k);
        memcpy(img + off[k], b->p, b->len);
    }
    write_table(g, img + table, img, off, note, sizeof(Elf64_Ehdr));
    uint64_t shoff = table;
    uint16_t shnum = (uint16_t)(I_TEXT + g->nruns);
    memcpy(img + offsetof(Elf64_Ehdr, e_shoff), &shoff, sizeof shoff);
    memcpy(img + offsetof(Elf64_Ehdr, e_shnum), &shnum, sizeof shnum);
    out->len = start + total;
    return 0;
}
