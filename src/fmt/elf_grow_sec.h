/*
 * elf_grow_sec.h — what fmt/elf_grow.c and fmt/elf_grow_hdrs.c (its headers and meta page)
 * share: the sections, their order and where the fixed pieces lie. Only those two include it.
 */
#ifndef JH__FMT_ELF_GROW_SEC_H
#define JH__FMT_ELF_GROW_SEC_H

#include <elf.h>
#include <stdbool.h>
#include <stdint.h>

#include "fmt/elf_grow.h"

/* Growing sections, in chunk order; then the fixed ones. */
enum { G_SYMTAB, G_STRTAB, G_FRAME, G_INFO, G_LINE, G_STR, G_RANGES, G_ARANGES, G_EH, G_EHDR };
enum { X_TEXT = JH__ELFG_NGROW, X_DATA, X_ABBREV, X_SHSTRTAB, X_NOTE, X_MAX };

/* Section header order in the file: index 0 is SHN_UNDEF, .text is 1 (symbols refer to it);
 * the sections that may be absent come last, so the others keep their indices. Empty DWARF
 * sections are left out: valgrind 3.19 calls an empty .debug_info "truncated" and then
 * reads no symbol of the file at all. */
static const int shdr_order[X_MAX] = { X_TEXT, X_DATA, G_SYMTAB, G_STRTAB, X_SHSTRTAB, X_NOTE,
                                       G_FRAME, G_INFO, X_ABBREV, G_LINE, G_STR, G_RANGES,
                                       G_ARANGES, G_EHDR, G_EH };

#define DATA_SIZE 16

static inline size_t page_of(const struct jh__elfg *g)
{
    return g->s.page_size ? g->s.page_size : 4096;
}

static inline uint64_t off_of(const struct jh__elfg *g, uint64_t a)
{
    return g->s.anchor_off + (a - g->s.anchor_addr);
}

static inline uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

/* The growing sections (no pointers into g itself: an image may be copied by value). */
static inline struct jh__buf *sec(struct jh__elfg *g, int i)
{
    switch (i) {
    case G_SYMTAB: return &g->symtab;
    case G_STRTAB: return &g->strtab;
    case G_FRAME: return &g->frame;
    case G_INFO: return &g->dw.info;
    case G_LINE: return &g->dw.line;
    case G_STR: return &g->dw.str;
    case G_ARANGES: return &g->aranges;
    case G_EH: return &g->eh;
    case G_EHDR: return &g->ehdr;
    default: return &g->dw.ranges;
    }
}

static inline bool window_ok(const struct jh__elfg *g, uint64_t lo, uint64_t hi)
{
    uint64_t pg = page_of(g);
    /* off(lo) >= one page (the headers), off(hi) <= meta_off, no wrap-around */
    return lo < hi && !(lo % pg) && !(hi % pg) && lo + g->s.anchor_off >= g->s.anchor_addr + pg &&
           hi + g->s.anchor_off <= g->s.anchor_addr + g->s.meta_off &&
           (!g->s.rw_addr || g->s.rw_addr >= hi || g->s.rw_addr + pg <= lo);
}

/* (jh__elfg_add counts the sections only while one may appear: keep its may_appear in
 * step with this) */
static inline bool present(const struct jh__elfg *g, int sec)
{
    switch (sec) {
    case X_DATA: return g->s.rw_addr != 0;
    case G_FRAME: return g->nfde != 0;
    case G_EH: case G_EHDR: return g->neh != 0;
    case G_INFO: case X_ABBREV: case G_LINE: case G_STR: case G_RANGES: case G_ARANGES:
        return g->dw.info.len != 0;
    default: return true;
    }
}

static inline uint32_t nsections(const struct jh__elfg *g)
{
    uint32_t n = 1;
    for (int i = 0; i < X_MAX; i++)
        n += present(g, i);
    return n;
}

static inline uint32_t shndx(const struct jh__elfg *g, int sec)
{
    uint32_t n = 1;
    for (int i = 0; i < X_MAX; i++) {
        if (shdr_order[i] == sec)
            return n;
        n += present(g, shdr_order[i]);
    }
    return 0;
}

/* The tables' arena (spec.eh_addr): the file's first page and its tables mapped by the
 * caller in address space of its own; the image then has a PT_LOAD for each. */
static inline bool arena(const struct jh__elfg *g)
{
    return g->neh && g->s.eh_addr;
}

/* PT_LOADs (text, [data], [headers, .eh_frame_hdr, .eh_frame]) in address order, PT_NOTE,
 * [PT_GNU_EH_FRAME] */
static inline size_t nphdrs(const struct jh__elfg *g)
{
    return 2 + (g->s.rw_addr != 0) + (g->neh != 0) + 3 * arena(g);
}

/* The address of file offset off: the window's rule (off_of backwards); in the arena, for
 * the first page and from meta_off on: where .eh_frame and .eh_frame_hdr say they are. */
static inline uint64_t addr_of(const struct jh__elfg *g, uint64_t off)
{
    if (!g->s.eh_addr)
        return g->s.anchor_addr + (off - g->s.anchor_off);
    return off < page_of(g) ? g->s.eh_addr + off : g->s.eh_addr + page_of(g) + (off - g->s.meta_off);
}
static inline size_t hdr_len(const struct jh__elfg *g)
{
    return sizeof(Elf64_Ehdr) + nphdrs(g) * sizeof(Elf64_Phdr);
}
/* The build-id note lies in the first page, after the program headers (at most 7: 456
 * bytes), where readers that look only there find it (older kernels' and perf's build-id
 * of a mapping, a core's first page of each mapped ELF file: tools/lib/core_read.c). It is
 * written on its own, once per change of the id. The meta page keeps NOTE_SPACE bytes of
 * zeros before the section headers (its layout predates the move). */
#define NOTE_SPACE 40       /* JH__BUILD_ID_NOTE_SIZE, rounded up to 8 */
#define NOTE_OFF 512
_Static_assert(sizeof(Elf64_Ehdr) + 7 * sizeof(Elf64_Phdr) <= NOTE_OFF, "phdrs reach the note");

/* elf_grow_hdrs.c: the ELF header and program headers into g->hdr; the meta page into
 * g->meta (only its sizes where nothing else changed since it was built: g->meta_layout),
 * 0 or -E2BIG/-ENOMEM */
void jh__elfg_build_hdr(struct jh__elfg *g);
int jh__elfg_build_meta(struct jh__elfg *g);

#endif
