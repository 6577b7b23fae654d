/*
 * elf_grow_mem.h — an in-memory ELF64 image that grows one function at a time while a
 * debugger may read it at any instant: the gdb channel's "growing image" while no debugger
 * listens (channels/gdb_grow.c). The same sections as a gdb image of fmt/elf_image.h
 * (NOBITS .text at the code's real addresses, .eh_frame at the address of its bytes, DWARF 4,
 * .symtab/.strtab, a build-id note, no program headers), in a region the caller reserved
 * (base, reserve bytes; it never moves). Pure: functions in, bytes out, no I/O.
 *
 * Why it can be read at any instant: a debugger attaching (ptrace) stops the process at any
 * instruction and reads the image once; one listening reads an image at its registration
 * stop, once. The region holds two views of the image, each an ELF header (at base and at
 * base + 64) with its own section header table area and build-id note slot, its table's
 * offsets relative to its header. The caller lists one view at a time. An append
 *   1. writes the function's bytes only where no table points: past each growing
 *      section's current size in its chunk, or in a new chunk twice the size at the
 *      region's tail when the old one is full (the old bytes copied; the old chunk stays
 *      as it was, named by the listed view's table, and is never used again: at most
 *      twice the bytes the sections hold);
 *   2. writes the other view's note and whole section header table (jh__elfm_add);
 *   3. switches that view's e_shoff to it: one aligned 8-byte store (jh__elfm_flip);
 *   4. (the caller) lists that view, symfile_size jh__elfm_size, then unlists the other
 *      (channels/gdb_grow.c): a debugger listening reads the new view at that stop, and
 *      never sees a function in no image.
 * The listed view is never written: any instant shows complete images. And every append is
 * announced, so a debugger jitherald cannot see listening (qemu-user's gdb stub keeps its
 * breakpoints out of the process's memory) reads each one; one it sees makes the channel
 * stop growing the image (gdb_grow.c), so that it does not read it whole at every add.
 * The ELF header never changes but for e_shoff: e_shnum counts JH__ELFM_RUNS .text
 * sections (one per run of functions, as fmt/elf_image.h), those not there yet null
 * entries (SHT_NULL: gdb's BFD and LLDB skip them). Not ELF's extended numbering (e_shnum
 * 0, the count in section 0's sh_size), which BFD reads too: readelf 2.40 then takes
 * section 0 for a .gnu_debuglink and warns about every such image.
 *
 * What a debugger reads equals a fresh jh__elf_image of the same functions in what it
 * names: the same symbols, sizes, FDEs, line rows and build-id (the id is a sum of
 * per-function hashes and the span: fmt/build_id.h). It differs in the layout: a compile
 * unit per function (as fmt/elf_grow.h's), .text sections that only grow (a run never
 * joins the next: a symbol's section index never changes), no .eh_frame terminator.
 *
 * The last append can be undone (jh__elfm_pop) in the same way: the jitherald-run adapter
 * replaces a function it just announced when the VM describes it again (a perf-map line,
 * then the jitdump's LOAD with lines and CFI).
 */
#ifndef JH__FMT_ELF_GROW_MEM_H
#define JH__FMT_ELF_GROW_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "fmt/build_id.h"
#include "fmt/dwarf.h"

struct jh__arch;
struct jh__func;

/* .text sections at most: each section header table is rewritten at every append, so its
 * size bounds an append's cost (the caller starts a new image when this is reached). */
#define JH__ELFM_RUNS 64
/* The growing sections: .eh_frame, the five DWARF ones, .symtab, .strtab. */
enum { JH__ELFM_NGROW = 8 };
/* Section headers: null, the growing ones, the note, .shstrtab, the runs. */
#define JH__ELFM_NSEC (JH__ELFM_NGROW + 3 + JH__ELFM_RUNS)

struct jh__elfm_run {
    uint64_t lo, hi;
};

struct jh__elfm {
    uint8_t *base;              /* the caller's region, reserve bytes */
    size_t reserve, tail;       /* tail: bytes in use from base (what symfile_size covers) */
    const struct jh__arch *arch;
    bool symbols;               /* .symtab names are symbols (JH__ELF_SYMBOLS) */
    struct jh__dwarf dw;        /* the sections: fixed buffers (base/buf.h) into the region */
    struct jh__buf eh, sym, str;
    size_t eh_cie[2];           /* fmt/cfi.h, jh__cfi_eh_frame_grow */
    size_t nfns;
    uint64_t lo, hi;            /* the functions' span */
    struct jh__bid bid;
    struct jh__elfm_run run[JH__ELFM_RUNS];
    size_t nruns;
    size_t shstr_off, note_off[2], table_off[2];
    int cur;                    /* the table e_shoff names (-1: none yet) */
    /* The next table as it stands, kept up to date field by field (an append changes a few
     * sizes and one run): copied whole into the area a flip switches to. Elf64_Shdr[]. */
    uint64_t table[JH__ELFM_NSEC * 8];
    bool table_stale;           /* built whole at the next prepare (a chunk moved...) */
    int run_dirty;              /* the run entry the last change touched (-1: none) */
    struct {                    /* what the last append changed (jh__elfm_pop) */
        bool ok;
        size_t len[JH__ELFM_NGROW], eh_cie[2], nruns;
        int run;                /* the run it extended (-1: it added one) */
        struct jh__elfm_run was;
        uint64_t lo, hi;
        struct jh__bid bid;
    } undo;
};

/* Start an image with no function in [base, base + reserve) (page aligned, zeroed: a fresh
 * anonymous mapping, whose untouched pages cost nothing with MAP_NORESERVE). No table yet:
 * e_shoff 0. 0 or -ENOSPC. */
int jh__elfm_init(struct jh__elfm *g, void *base, size_t reserve, const struct jh__arch *arch,
                  bool symbols);

/*
 * Steps 1 and 2 above for f (its build-id hash fn_bid): f starts a new .text section unless
 * join_prev (it continues the section of the function ending nearest below it, whose end
 * the caller knows f may share a section with) or join_next (the same upwards). Overlaps
 * are the caller's business. 0; -ENOSPC (the region is full), -E2BIG (JH__ELFM_RUNS runs,
 * or a section past 4 GiB), -EINVAL (a bad description): then nothing a table names changed.
 */
int jh__elfm_add(struct jh__elfm *g, const struct jh__func *f, uint64_t fn_bid,
                 bool join_prev, bool join_next);
/* Undo the last jh__elfm_add (flipped or not), the next table written as for an append:
 * 0, or -ENOENT when there is nothing to undo (once per append). */
int jh__elfm_pop(struct jh__elfm *g);
/* The two views (see above): view v's image starts at jh__elfm_view(g, v) and takes
 * jh__elfm_size(g, v) bytes. jh__elfm_add and _pop write the view the next flip switches
 * to (jh__elfm_next), never the other. */
static inline const uint8_t *jh__elfm_view(const struct jh__elfm *g, int v)
{
    return g->base + (size_t)v * 64;
}
static inline size_t jh__elfm_size(const struct jh__elfm *g, int v)
{
    return g->tail - (size_t)v * 64;
}
static inline int jh__elfm_next(const struct jh__elfm *g) { return g->cur == 0; }
/* Step 4: the new table becomes its view's (then g->cur is that view). */
void jh__elfm_flip(struct jh__elfm *g);

/* The image as it stands (the current table's), compacted: appended to out like
 * jh__elf_image (an out with no storage gets exactly out->len + the image); .eh_frame's
 * address is where its bytes land. 0, -ENOMEM, -ENOENT (nothing flipped yet). */
int jh__elfm_copy(const struct jh__elfm *g, struct jh__buf *out);

#endif
