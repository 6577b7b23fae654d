/*
 * elf_image.h — an ELF64 image describing a set of JIT functions, for debuggers (the gdb
 * channel registers it in memory) and for tools that read files (the elfmap channel writes
 * it and maps its code pages over the live ones). Pure: entries in, bytes out, no I/O.
 *
 * The image (spec.arch's e_machine and CFI, x86-64 or arm64; little-endian):
 *   .text          JH__ELF_TEXT_NOBITS: SHT_NOBITS at the code's real address (the debugger
 *                  reads the bytes from the process); one section per run of adjacent
 *                  functions unless a range is given. JH__ELF_TEXT_COPY: PROGBITS holding a
 *                  copy of a page range, at a file offset congruent to its address modulo
 *                  the page size, covered by an R+X PT_LOAD, so that
 *                  mmap(text_addr, text_size, PROT_READ|PROT_EXEC, MAP_FIXED|MAP_PRIVATE,
 *                  fd, layout.text_off) replaces the live pages with identical ones.
 *   .eh_frame      one CIE + an FDE per function with unwind info (src/cfi.h). NOBITS mode:
 *                  absolute pointers, section address = where its bytes lie in the built
 *                  image (keep the image where it was built). COPY mode: pc-relative, inside
 *                  a small R+W PT_LOAD at rw_addr (valgrind wants an rw mapping of the file,
 *                  and reads .eh_frame from a mapped segment).
 *   .debug_info .debug_abbrev .debug_line .debug_str .debug_ranges   (src/dwarf.h)
 *   .symtab .strtab  one sized STT_FUNC STB_GLOBAL symbol per function, in .text, named
 *                  by its display name, or by its symbol with JH__ELF_SYMBOLS (the DWARF
 *                  keeps the display name: backtraces show it, `break <symbol>` works).
 * Every SHF_ALLOC section sits at its real absolute address: GDB sorts sections of all
 * objfiles by address, and sections left at 0 made it spend 90% of its time sorting.
 * Program headers: COPY mode always has them (the file is mapped). NOBITS mode writes a
 * PT_LOAD per .text and one for .eh_frame unless JH__ELF_NO_PHDRS: measured, gdb 13 and
 * lldb 14 name, line and unwind the same with or without them, ET_DYN or ET_EXEC, so the
 * gdb channel leaves them out (56 bytes per run of functions, read at every registration).
 *
 * Check an image with:  readelf -a -w img.elf;  llvm-dwarfdump-14 --verify img.elf
 * (tests/unit/test_elf_image.c does, with several functions and files).
 */
#ifndef JH__FMT_ELF_IMAGE_H
#define JH__FMT_ELF_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "fmt/dwarf.h"

struct jh__arch;
struct jh__func;

enum jh__elf_text {
    JH__ELF_TEXT_NOBITS = 0,     /* .text is SHT_NOBITS at text_addr */
    JH__ELF_TEXT_COPY = 1        /* .text is PROGBITS: text_size bytes from text_bytes */
};

enum {
    JH__ELF_NO_DWARF = 1 << 0,   /* symbols (and .eh_frame) only */
    JH__ELF_NO_EH_FRAME = 1 << 1,/* no .eh_frame */
    JH__ELF_NO_PHDRS = 1 << 2,   /* NOBITS mode: no program headers */
    JH__ELF_SYMBOLS = 1 << 3,    /* .symtab names are the functions' symbols (what a
                                    debugger's `break` takes), not their display names */
    JH__ELF_CFI_CHECKED = 1 << 4 /* the functions' CFI programs passed jh__cfi_validate
                                    already (the core's entries): not read again */
};

/* What a builder of many images keeps from one to the next (the gdb channel: one per
 * context, built under its lock): the DWARF sections and .eh_frame are encoded here before
 * they are copied into the image, and these buffers, once grown, serve every later image,
 * so that an image costs one allocation, its own. Zero it before its first use; one
 * thread at a time; a forked child may keep using its copy. */
struct jh__elf_scratch {
    struct jh__dwarf dw;
    struct jh__buf eh;
};

void jh__elf_scratch_free(struct jh__elf_scratch *sc);

struct jh__elf_spec {
    const struct jh__arch *arch;    /* the code's (fmt/arch.h): e_machine, CFI; NULL: the host's */
    /* The functions, sorted by start, not overlapping, all inside the .text range.
     * The builder reads start, size, name, files, lines and the unwind description. */
    const struct jh__func *const *fns;
    size_t nfns;
    enum jh__elf_text text;
    /* The .text range. NOBITS: 0/0 means one .text section (and PT_LOAD unless
     * JH__ELF_NO_PHDRS) per run of adjacent functions, with exact bounds, so images never
     * claim each other's code.
     * COPY: required, and text_addr must be a multiple of page_size (the range is what
     * gets mapped). */
    uint64_t text_addr;
    size_t text_size;
    const void *text_bytes;     /* COPY: text_size bytes, the code as it is now */
    size_t page_size;           /* COPY: 0 means 4096 */
    /* COPY: address where the caller will map the rw segment (page aligned); it holds
     * .eh_frame. 0: no rw segment and no .eh_frame. */
    uint64_t rw_addr;
    /* NOBITS auto mode: two functions of fns separated by a gap of at most join_gap bytes
     * share one .text section when join_ok(join_arg, a, b) says no other code lies in the
     * gap between a and b, [a->start + a->size, b->start). A section per run of functions that are not adjacent made
     * gdb quadratic for aligned functions (one section per function); but a section must
     * never cover another image's code (LLDB gives an address to the section with the
     * greatest start below it, GDB to any section that contains it). 0/NULL: adjacent
     * functions only. */
    uint64_t join_gap;
    bool (*join_ok)(void *arg, const struct jh__func *a, const struct jh__func *b);
    void *join_arg;
    uint16_t e_type;            /* ET_DYN (0: default) or ET_EXEC */
    unsigned flags;             /* JH__ELF_NO_* */
    const char *producer;       /* DW_AT_producer (NULL: "jitherald") */
    const char *comp_dir;       /* DW_AT_comp_dir (NULL: none) */
    struct jh__elf_scratch *scratch;    /* NULL: the builder's own, freed before it returns */
    /* jh__bid_func_hash of each of fns, known to the caller (NULL: computed here): the
     * build-id is the same either way */
    const uint64_t *fn_bid;
};

/* Where things landed, as byte offsets from the start of the image. */
struct jh__elf_layout {
    size_t size;                /* the whole image */
    size_t text_off;            /* COPY: file offset of the .text bytes (page aligned) */
    size_t rw_off, rw_size;     /* COPY with rw_addr: the rw segment's file range */
    size_t eh_frame_off, eh_frame_size;
    uint64_t eh_frame_addr;     /* .eh_frame's sh_addr (0 if none) */
    size_t nfde;                /* functions that got an FDE */
    size_t ntext;               /* .text sections (section indices 1..ntext) */
};

/*
 * Append an image for s to out (out->len need not be 0; offsets in *layout are from where
 * the image starts, which is 8-byte aligned in out). An out with no storage yet (p NULL)
 * is allocated once, to exactly out->len (a multiple of 8) plus the image: a caller may
 * set out->len to keep room for a header of its own, uninitialised, in the same block. In NOBITS mode .eh_frame's address is
 * the address of its bytes in out->p: do not realloc or copy the image afterwards (the
 * DWARF and symbols do not care, only that address does). layout may be NULL.
 * 0, -EINVAL (bad spec, function outside .text), -ENOMEM, -E2BIG, -ERANGE (COPY mode: a
 * pc-relative .eh_frame offset does not fit 32 bits). On error out->len is restored.
 */
int jh__elf_image(struct jh__buf *out, const struct jh__elf_spec *s, struct jh__elf_layout *layout);

/* An Elf64_Ehdr (ehdr) of every image we write (this one, fmt/elf_grow.h's files,
 * fmt/elf_grow_mem.h's views): zeroed, then the identity (64-bit, little-endian, current
 * version), type, machine and the three entry sizes; the caller sets the offsets and
 * counts. */
void jh__elf_ehdr_init(void *ehdr, unsigned type, unsigned machine);

#endif
