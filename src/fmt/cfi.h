/*
 * cfi.h — the shared call-frame-information encoder: `.eh_frame` runs (one CIE, one FDE per
 * function, a zero terminator) and `.eh_frame_hdr` search tables, from the unwind
 * description of `struct jh_code`. Pure: bytes in, jh_buf out, no I/O, no globals.
 *
 * Users and the flavour each needs:
 *   - jitdump UNWINDING_INFO (perf's synthetic ELF), the GDB/ELF image builder, elfmap:
 *     JH__CFI_PCREL (DW_EH_PE_pcrel|sdata4), the .eh_frame placed at a known address next to
 *     the code, plus .eh_frame_hdr.
 *   - the process unwinder: JH__CFI_ABS (DW_EH_PE_absptr, 8 bytes), because the bytes live
 *     on the heap and may be more than 2 GiB from the code. libgcc's __register_frame takes
 *     the whole run; LLVM libunwind's __unw_add_dynamic_fde takes the address of one FDE
 *     (build a run of one function and pass run + idx[0].off).
 *
 * Every function takes the architecture to describe (fmt/arch.h: struct jh__arch; NULL means
 * the host's, JH__ARCH_HOST); the encoder reads its registers, CIE rules and frame record
 * from it and has no branch of its own on which architecture it is.
 * The CIE: version 1, augmentation "zR", the architecture's factors (code alignment 1, data
 * alignment -8), return address column and rules at a function's first instruction:
 * x86-64: RA register 16, CFA = rsp+8, rip at cfa-8; arm64: RA register 30, CFA = sp+0 (the
 * return address is still in x30). With opts.personality,
 * a function that has a personality gets a CIE "zPR" (or "zPLR" with an LSDA, which its
 * FDE's augmentation data then holds), both as absolute pointers; the CIEs of a run come
 * first, one per distinct (personality, LSDA or not), each FDE pointing back to its own.
 * The FDE instructions:
 *   JH_UNWIND_FRAME_POINTER  the architecture's frame record (jh__arch.frame_*). x86-64:
 *                            at fp_push_end CFA = rsp+16, rbp at cfa-16; at fp_set_end
 *                            CFA = rbp+16; from each epilogue's start CFA = rsp+8 and rbp
 *                            restored, from its end the body's rules again (written out,
 *                            not restore_state). arm64: at fp_push_end CFA = sp+16, x29 at
 *                            cfa-16, x30 at cfa-8; at fp_set_end CFA = x29+16; epilogues
 *                            CFA = sp+0, x29 and x30 restored.
 *   JH_UNWIND_FRAMELESS      def_cfa_offset cfa_offset (if not the CIE's), each saved
 *                            register (offset, or offset_extended above 63), then per step
 *                            an advance and a def_cfa_offset.
 *   JH_UNWIND_CFI            the caller's raw instructions, checked by jh__cfi_validate.
 *   JH_UNWIND_NONE           no FDE at all: unwinders then fall back to their heuristics.
 *
 * Verifying the bytes with the real decoders (tests/unit/test_cfi.c does exactly this; it
 * wraps a run in a minimal ELF whose sections sit at the addresses used to encode):
 *     readelf --debug-dump=frames file.elf     # CIE/FDE, "pc=start..end", DW_CFA_* lines
 *     readelf --debug-dump=frames-interp file.elf   # the resulting CFA/rbp/ra table
 *     llvm-dwarfdump-14 --eh-frame file.elf    # same, LLVM's decoder (stricter on sizes)
 * To look at a run from a live process, dump the bytes (gdb: `dump binary memory f.bin
 * p p+len`) and wrap them the same way. The pc-relative flavour decodes to the right "pc="
 * only if the section address in the ELF equals the `addr` used when encoding.
 */
#ifndef JH__FMT_CFI_H
#define JH__FMT_CFI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "fmt/arch.h"
#include "fmt/func.h"

enum { JH__CFI_PCREL = 0, JH__CFI_ABS = 1 };           /* jh_cfi_opts.ptr */

/* DWARF pointer encodings we emit (DW_EH_PE_*). */
#define JH__DW_EH_PE_absptr   0x00
#define JH__DW_EH_PE_udata4   0x03
#define JH__DW_EH_PE_sdata4   0x0b
#define JH__DW_EH_PE_pcrel    0x10
#define JH__DW_EH_PE_datarel  0x30
#define JH__DW_EH_PE_omit     0xff

/* The functions to describe are struct jh__func (fmt/func.h); only start, size and the
 * unwind fields are read. start is the code's address *as the consumer sees it* (for perf's
 * synthetic ELF that is the .text address there, not the process address). */

struct jh__cfi_opts {
    const struct jh__arch *arch;    /* NULL: the host's */
    int ptr;                    /* JH__CFI_PCREL or JH__CFI_ABS */
    uint64_t addr;              /* address the run's first byte will have (PCREL only) */
    /* Write the functions' personality routines and LSDAs (only the process's own
     * unwinder calls them; the debuggers' and perf's copies leave them out). */
    bool personality;
    /* What jh__cfi_eh_frame_size gave for these functions and options, when the caller
     * asked first (elf_image.c lays sections out before writing them); 0: the encoder
     * makes that dry run itself. Either way it checks its output against it. */
    size_t size;
    /* JH_UNWIND_CFI programs passed jh__cfi_validate for their sizes already (the core's
     * entries, jh__code_validate): not checked again (half of a gdb image's .eh_frame
     * checks, issue 30). */
    bool cfi_checked;
};

/* Where one FDE of a run is: code from pc (size bytes) is described by the FDE at byte
 * offset off from the start of the run. What .eh_frame_hdr tables and LLVM libunwind need. */
struct jh__cfi_index {
    uint64_t pc;
    uint64_t size;
    size_t off;
};

/* Check raw CFA instructions: every opcode known and complete, no advance beyond
 * code_size, no opcode that needs a CIE augmentation or 64-bit expression we do not emit.
 * 0 or -EINVAL. */
int jh__cfi_validate(const uint8_t *cfi, size_t len, uint64_t code_size);

/* Exact number of bytes jh__cfi_eh_frame would append (terminator included), or 0 for an
 * invalid description. */
size_t jh__cfi_eh_frame_size(const struct jh__cfi_opts *o, const struct jh__func *f,
                             size_t n);

/*
 * Append an .eh_frame run to b: its CIEs (one, or one per personality: see above), one
 * FDE per function that has unwind info (in
 * ascending start order, whatever the order of f[]), then a 4-byte zero terminator. The
 * run is 8-byte aligned in length; b itself is not padded before it (the caller places it
 * at o->addr, which should be 8-aligned). idx, if not NULL, must hold n entries and gets
 * the FDEs in ascending pc order. Returns the number of FDEs written (functions with
 * JH_UNWIND_NONE get none), or -EINVAL (bad description), -ERANGE (a PCREL offset or size
 * does not fit 32 bits), -ENOMEM. On error b->len is restored.
 */
int jh__cfi_eh_frame(struct jh__buf *b, const struct jh__cfi_opts *o,
                     const struct jh__func *f, size_t n, struct jh__cfi_index *idx);

/* The same two for an array of pointers to the functions (no copy needed). */
size_t jh__cfi_eh_frame_size_p(const struct jh__cfi_opts *o, const struct jh__func *const *f,
                               size_t n);
int jh__cfi_eh_frame_p(struct jh__buf *b, const struct jh__cfi_opts *o,
                       const struct jh__func *const *f, size_t n, struct jh__cfi_index *idx);

/* Append f's FDE instructions alone (what follows the CIE's rules; no padding) for arch
 * (NULL: the host's): the DWARF form of a FRAME_POINTER or FRAMELESS description, or a CFI
 * one's bytes. 0, or -EINVAL for a bad description (nothing appended), -ENOMEM. */
int jh__cfi_fde_insns(struct jh__buf *b, const struct jh__arch *arch, const struct jh__func *f);

/* f's FDE instructions for the host, encoded once into f->insns (fmt/func.h), which every
 * encoder above copies from then on; f->insns is the caller's to free. 0 (also when they
 * are there already, or f has none), -EINVAL (a bad description: nothing made), -ENOMEM. */
int jh__cfi_memo(struct jh__func *f);

/* cfi_pac.c: the FDE instructions [in, in+n) (valid ones) with f's arm64 return-address
 * signing ranges (f->ra_signed) spliced in as DW_CFA_AARCH64_negate_ra_state toggles,
 * appended to out. */
void jh__cfi_pac_splice(struct jh__buf *out, const uint8_t *in, size_t n,
                        const struct jh__func *f);

/* Size of an .eh_frame_hdr with nfde table entries: 12 + 8 * nfde. */
size_t jh__cfi_eh_frame_hdr_size(size_t nfde);

/*
 * Append an .eh_frame_hdr (version 1, eh_frame_ptr pcrel|sdata4, fde_count udata4, table
 * datarel|sdata4 sorted by pc) that will live at hdr_addr, for a run that lives at eh_addr
 * and whose FDEs idx[0..nfde) (ascending pc) returned. 0, -EINVAL, -ERANGE or -ENOMEM.
 */
int jh__cfi_eh_frame_hdr(struct jh__buf *b, uint64_t hdr_addr, uint64_t eh_addr,
                         const struct jh__cfi_index *idx, size_t nfde);
/* The same, rewritten in place in the header b holds at offset at (sized for nfde entries):
 * its 12-byte head and the table's entries from `from` on (a table that grows by inserting
 * keeps the entries before the first one that moved). Same results; b as it was on error. */
int jh__cfi_eh_frame_hdr_from(struct jh__buf *b, size_t at, uint64_t hdr_addr,
                              uint64_t eh_addr, const struct jh__cfi_index *idx, size_t nfde,
                              size_t from);
/* The same header (at offset at in b, 12 + 8 * nfde bytes) as built by the above for the
 * table without idx[i] (nfde - 1 entries, then 8 bytes of room), or with an older idx[i]
 * when replace: idx[i] put in its place, the entries after it moved up by one as they are,
 * the count updated. Only valid while hdr_addr and eh_addr are what the table was built
 * for. Same results; b as it was on error. */
int jh__cfi_eh_frame_hdr_insert(struct jh__buf *b, size_t at, uint64_t hdr_addr,
                                uint64_t eh_addr, const struct jh__cfi_index *idx, size_t nfde,
                                size_t i, bool replace);

/*
 * .debug_frame, for an image read from a file and never mapped (the elfmap channel's): the
 * same rules as above, version-1 CIE with no augmentation, absolute 8-byte addresses, FDEs
 * pointing at their CIE by section offset. Position-independent, so a section grows by
 * appending: one CIE, then one FDE per function, in any order, no terminator.
 *   jh__cfi_debug_frame_cie   append the CIE (the caller notes its section offset)
 *   jh__cfi_debug_frame_fde   append f's FDE for the CIE at cie_off: 1, or 0 when f has no
 *                             unwind info (nothing appended), -EINVAL, -ENOMEM
 */
void jh__cfi_debug_frame_cie(struct jh__buf *b, const struct jh__arch *arch);
int jh__cfi_debug_frame_fde(struct jh__buf *b, const struct jh__arch *arch, uint64_t cie_off,
                            const struct jh__func *f);

/*
 * A growing .eh_frame, for an image file whose sections grow by appending (elfmap's,
 * fmt/elf_grow.c): CIEs ("zR", or "zRB" for arm64's B key, each appended the first time a
 * function needs it: cie_off[0] plain, [1] B key, SIZE_MAX until then), one FDE per
 * function in any order, no terminator (readers stop at the section's end; the
 * .eh_frame_hdr table is what finds an FDE). Pointers are absolute (JH__CFI_ABS): the
 * bytes do not depend on where the section lies, so a section that moves in its file is
 * copied, never re-encoded. Appends f's FDE (and the CIE it needs); *fde_off gets its
 * offset in b. 1, 0 when f has no unwind info (nothing appended), -EINVAL, -E2BIG, -ENOMEM
 * (b as it was, b->err cleared).
 */
int jh__cfi_eh_frame_grow(struct jh__buf *b, const struct jh__arch *arch, size_t cie_off[2],
                          const struct jh__func *f, size_t *fde_off);

/*
 * perf's jitdump layout for one function (what UNWINDING_INFO carries): the .eh_frame for
 * code at text_addr, laid out at eh_addr = ALIGN_8(text_addr + size), immediately followed
 * by its .eh_frame_hdr. Appends both; *hdr_size gets the header's size. Returns 1 (one FDE),
 * 0 when f has no unwind info (nothing appended), or a negative errno.
 */
int jh__cfi_perf_unwinding(struct jh__buf *b, const struct jh__func *f, uint64_t text_addr,
                           const struct jh__arch *arch, size_t *hdr_size);

#endif
