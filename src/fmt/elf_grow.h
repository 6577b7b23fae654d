/*
 * elf_grow.h — an ELF64 image that grows one function at a time while it lies in a file, for
 * the elfmap channel (src/channels/elfmap*.c), which maps the file's code pages over the
 * JIT's own and keeps the file up to date as the JIT adds code. Each append only extends
 * sections at their ends and rewrites a few header bytes; the builder says which file ranges
 * to write. Pure: functions in, bytes and file offsets out, no I/O.
 *
 * The file (spec.arch's e_machine and CFI, x86-64 or arm64; little-endian, ET_DYN):
 *   0            ELF header and program headers: an R+X PT_LOAD over the text window and,
 *                with rw_addr, a small R+W one (valgrind 3.19 reads an image's symbols
 *                only once it has seen a writable mapping of it too), in address order
 *                (valgrind rejects them otherwise), then a PT_NOTE over the build-id note,
 *                which lies in this page too (at 512)
 *   off(a)       the code at address a, for a in the window [lo, hi):
 *                off(a) = anchor_off + (a - anchor_addr). The window may grow (set_text);
 *                the address-to-offset rule never changes. The builder never writes these
 *                bytes: the caller copies the live code there, page by page.
 *   meta_off     one page: 40 bytes of zeros, the section headers, .shstrtab,
 *                .debug_abbrev (rewritten at every change)
 *   +1 page      with rw_addr: one page holding .data, the R+W segment
 *   then         a chunk per growing section (.symtab, .strtab, .debug_frame, .debug_info,
 *                .debug_line, .debug_str, .debug_ranges, .debug_aranges, .eh_frame,
 *                .eh_frame_hdr) with room to grow; a section that
 *                outgrows its chunk moves to a new one twice its size: a spare chunk (one
 *                another section left) where one fits, else at the end of the file. The
 *                old chunk becomes spare once the headers naming the new one are written;
 *                spare bytes the caller may punch out of the file (jh__elfg_take_spare).
 * Sections: .text (PROGBITS, the window), [.data], .debug_frame (unwinding with absolute
 * addresses: nothing has to map it; perf and valgrind read it from the file), .eh_frame and
 * .eh_frame_hdr with a PT_GNU_EH_FRAME (what unwinders of binaries read: libunwind in perf
 * --call-graph dwarf, libdw, eBPF profilers; unless spec.no_eh_frame), the DWARF of
 * fmt/dwarf.h with one compile unit per function and its .debug_aranges set (elfutils
 * before 0.191 finds a line's compile unit only through .debug_aranges), .symtab (one sized global STT_FUNC per
 * function), .strtab, .shstrtab.
 *
 * Where .eh_frame and .eh_frame_hdr are in memory: with spec.eh_addr, in the caller's
 * arena, by one rule for both (libdw finds .eh_frame from PT_GNU_EH_FRAME through the
 * table's own address-to-offset difference): the file's first page at eh_addr, its bytes
 * from meta_off on from eh_addr + one page on; each of the three has a read-only PT_LOAD and
 * the caller maps them there (jh__elfg_eh_chunk). Without eh_addr (images built offline,
 * tools/log_elf.c), the window's rule gives them the addresses of their file offsets, past
 * the window, and no PT_LOAD: readers that take the tables from the file alone need none.
 * The .eh_frame's pointers are absolute (fmt/cfi.h, jh__cfi_eh_frame_grow), so it grows by
 * appending and moves by copying; the .eh_frame_hdr's binary-search table (relative to its
 * own address, sorted by pc) takes a new function's entry by moving the entries after it
 * up as they are (built whole again only when either table moved), and is written from
 * that entry on (its 12-byte head, which holds the count, on its own).
 * The PT_LOADs are in address order; the text's starts where the caller says the lowest
 * page it maps is (jh__elfg_set_load).
 *
 * Why the fixed address-to-offset rule: perf merges samples into one row per symbol by
 * (image file name, symbol start as a file offset, size); an image built again for the same
 * code (a new generation, elfmap.c) keeps every surviving function at the same offset.
 *
 * The struct holds no pointer into itself: it may be moved (copied by value).
 *
 * Check a file with: readelf -a -w F; llvm-dwarfdump-14 --verify F
 * (tests/unit/test_elf_grow.c does, before and after appends and a move of every chunk).
 */
#ifndef JH__FMT_ELF_GROW_H
#define JH__FMT_ELF_GROW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/spare.h"
#include "fmt/build_id.h"
#include "fmt/dwarf.h"

/* The elfmap channel's image geometry (channels/elfmap.h has what each means), here so that
 * tools/log_elf.c, which rebuilds its files from the audit log, lays them out the same:
 * a window's code span, how far below its anchor it may reach, and the hole after the span
 * (what bounds a file's apparent size: one page + SPAN + GAP + the metadata's chunks). */
#define JH__ELFG_WINDOW ((uint64_t)1 << 20)
#define JH__ELFG_LEAD ((uint64_t)1 << 20)
#define JH__ELFG_SPAN ((uint64_t)3 << 20)
#define JH__ELFG_GAP ((uint64_t)1 << 20)

struct jh__arch;
struct jh__func;
struct jh__cfi_index;

struct jh__elfg_spec {
    const struct jh__arch *arch;    /* the code's (fmt/arch.h); NULL: the host's */
    uint64_t anchor_addr;       /* page aligned */
    uint64_t anchor_off;        /* page aligned, at least one page */
    uint64_t lo, hi;            /* the text window: page aligned, off(lo) >= one page,
                                   off(hi) <= meta_off */
    uint64_t meta_off;          /* page aligned */
    uint64_t rw_addr;           /* page aligned, outside the window; 0: no R+W segment */
    size_t page_size;           /* 0: 4096 */
    const char *producer;       /* DW_AT_producer (NULL: "jitherald") */
    bool no_build_id;           /* leave the note's id at zero (a benchmark's baseline) */
    bool no_eh_frame;           /* no .eh_frame/.eh_frame_hdr (elfmap under valgrind, and
                                   a test's control) */
    uint64_t eh_addr;           /* page aligned; 0: none. The tables' arena: address space
                                   the caller maps the file's first page at (eh_addr) and
                                   its bytes from meta_off on (from eh_addr + one page on),
                                   so that the tables have a PT_LOAD each (see above) */
    uint64_t room[10];          /* bytes each growing section's first chunk holds (in
                                   JH__ELFG_NGROW's order; rounded up to a page, 0: a page):
                                   what an image that will grow that much starts with, so
                                   that no section moves on its way there (elfmap: a new
                                   generation of a window, sized as its last one ended) */
};

enum { JH__ELFG_NGROW = 10 };   /* .symtab .strtab .debug_frame .debug_info .debug_line
                                   .debug_str .debug_ranges .debug_aranges .eh_frame
                                   .eh_frame_hdr */

struct jh__elfg_chunk {
    uint64_t off, cap;          /* where the section lives in the file, and its room */
    size_t synced;              /* bytes of it already in the file */
    uint64_t old_off, old_cap;  /* the chunk it left, still holding bytes in the file */
};

struct jh__elfg {
    struct jh__elfg_spec s;
    struct jh__dwarf dw;
    struct jh__buf frame, symtab, strtab, aranges;
    struct jh__buf eh, ehdr;    /* .eh_frame; .eh_frame_hdr as last built (its length always
                                   12 + 8 * neh) */
    struct jh__cfi_index *ehidx;    /* the FDEs of .eh_frame, ascending pc: neh of them
                                   from ehidx[eh0] on, room on both sides (elf_grow.c) */
    size_t neh, capeh, eh0;
    size_t eh_cie[2];           /* fmt/cfi.h, jh__cfi_eh_frame_grow */
    size_t ehdr_from;           /* .eh_frame_hdr entries from this one on need building
                                   (SIZE_MAX: none) */
    struct jh__elfg_chunk chunk[JH__ELFG_NGROW];
    struct jh__spare spare;     /* chunks no section holds and no written header names
                                   (jh__elfg_take_spare) */
    uint64_t load_lo;           /* the text PT_LOAD starts here (0: at s.lo) */
    uint64_t end;               /* end of the last chunk: the file's size */
    uint64_t end_synced;        /* the file's size as last written */
    size_t nsyms;               /* functions added */
    size_t nfde;                /* of which with unwind info */
    bool hdr_dirty, meta_dirty, data_dirty, note_dirty;
    bool meta_layout;           /* the meta page needs more than its sizes (build_meta) */
    bool ehdr_head;             /* .eh_frame_hdr's head (the count) to write on its own */
    uint8_t note[JH__BUILD_ID_NOTE_SIZE];   /* the build-id note as last built */
    struct jh__bid bid;         /* the build-id's sums: functions and code bytes */
    uint8_t hdr[64 + 7 * 56];   /* ELF header + program headers */
    struct jh__buf meta;        /* the meta page as last built */
};

/* A range of the file to write: len bytes from p at off. */
struct jh__elfg_span {
    uint64_t off;
    const void *p;
    size_t len;
};
#define JH__ELFG_MAXSPANS (JH__ELFG_NGROW + 6)

/* Start an image with no function. g is overwritten. 0, -EINVAL (bad spec), -ENOMEM. */
int jh__elfg_init(struct jh__elfg *g, const struct jh__elfg_spec *s);
void jh__elfg_free(struct jh__elfg *g);

/* Fold len code bytes at addr into the build-id (the caller copies code into the file
 * itself: elfmap calls this for a function's bytes when it adds it, and for patches). */
void jh__elfg_code(struct jh__elfg *g, uint64_t addr, const void *p, size_t len);
/* The image's build-id as it stands (what the next jh__elfg_spans writes). */
void jh__elfg_build_id(const struct jh__elfg *g, uint8_t out[JH__BUILD_ID_SIZE]);

/* The window is now [lo, hi) (it may only grow; same rules as in the spec). 0 or -EINVAL. */
int jh__elfg_set_text(struct jh__elfg *g, uint64_t lo, uint64_t hi);

/*
 * Append f (inside the window; overlaps with functions already in are the caller's
 * business; in .eh_frame_hdr, the last function added at a start is the one found): its
 * symbol, compile unit and FDEs (.debug_frame and .eh_frame). 0, -EINVAL (outside the window, bad unwind
 * description), -ENOMEM, -E2BIG. On error the image is as it was.
 */
int jh__elfg_add(struct jh__elfg *g, const struct jh__func *f);

/*
 * What to write so that the file matches the image: at most JH__ELFG_MAXSPANS ranges into
 * v, in an order that leaves the headers for last (a reader that opens the file meanwhile
 * sees the previous image's headers). The pointers stay valid until the next call on g.
 * Once written, call jh__elfg_synced. Returns the number of spans, or -ENOMEM/-E2BIG.
 */
int jh__elfg_spans(struct jh__elfg *g, struct jh__elfg_span *v);
void jh__elfg_synced(struct jh__elfg *g);

/* The span that turns the build-id note into a note of type 0 (no build-id, for any reader),
 * to write before the first byte of a change to an image that was synced: the old id then
 * never stands for new contents, and the next jh__elfg_spans writes the new note last, after
 * everything it covers. */
struct jh__elfg_span jh__elfg_note_void(struct jh__elfg *g);

/* Spare chunks (g->spare, g->spare.bytes of them): garbage that the next chunks sections
 * move to are taken from first (best fit), so that pages written, allocated and mapped
 * already serve again instead of new ones at the end of the file.
 * Up to max spare chunks handed over to be punched out of the file (p NULL): they are never
 * used again. Returns how many went into v. */
int jh__elfg_take_spare(struct jh__elfg *g, struct jh__elfg_span *v, int max);

/* With an arena (spec.eh_addr): where .eh_frame_hdr (k = 0), .eh_frame (k = 1) and the
 * file's first page (k = 2) lie, whole pages, at the addresses the image gives them; false
 * without (no arena, or no .eh_frame yet). The caller maps them there read-only: readers
 * that take the tables through the process's memory need them mapped (perf's libunwind:
 * "unwind: no map for ADDR" otherwise). */
bool jh__elfg_eh_chunk(const struct jh__elfg *g, int k, uint64_t *addr, uint64_t *off,
                       uint64_t *len);
/* How much of the arena those take: from eh_addr to the end of the higher chunk (0: none).
 * It grows when a table outgrows its chunk (jh__elfg_add). */
uint64_t jh__elfg_eh_reach(const struct jh__elfg *g);
/* The arena moved to addr (page aligned, non-zero): headers and table written again. */
void jh__elfg_set_eh_addr(struct jh__elfg *g, uint64_t addr);
/* The text PT_LOAD starts at page a of the window (0: at its start): the lowest page the
 * caller maps from the file (perf and libdw take the lowest mapping for the first PT_LOAD's
 * address: docs/elfmap.md). Ignored if a is not a page of the window. */
void jh__elfg_set_load(struct jh__elfg *g, uint64_t a);

/* The room (spec.room) for a next image of what g holds: each section's chunk, at most
 * twice the bytes it holds (so that an image that once grew big and then held little does
 * not hand its size on for ever). */
void jh__elfg_room(const struct jh__elfg *g, uint64_t room[JH__ELFG_NGROW]);

/* All spans as they would be for a new file (everything dirty again): for a copy. */
void jh__elfg_all_dirty(struct jh__elfg *g);

#endif
