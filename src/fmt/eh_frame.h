/*
 * eh_frame.h — reading the .eh_frame a compiler emitted, and the one translator from a CIE
 * and an FDE to the library's description of a frame (struct jh_code's raw-CFI contract,
 * include/jitherald.h): FDE instructions that run after a CIE with code alignment 1, data
 * alignment -8 and the architecture's return-address column and entry rules (fmt/cfi.h).
 *
 * Who reads an .eh_frame through this, and nothing else:
 *   - jh_code_add with JH_UNWIND_EH_FRAME (core/describe.c): the LLVM adapter hands over
 *     its object's relocated .eh_frame, `jitherald run` a jitdump's UNWINDING_INFO;
 *   - the CLI's jitdump checker (tools/lib/eh_frame.c), which prints and checks records.
 *
 * Records are bounds-checked (every length, every pointer, every instruction through
 * fmt/cfa.h's decoder); 64-bit DWARF records are refused. Pointers: absolute or pc-relative
 * (DW_EH_PE_absptr/pcrel with any fixed width, uleb/sleb too), indirect ones flagged (the
 * value is then the address of a slot holding the pointer). Pure: bytes in, no I/O.
 *
 * The translation (jh__eh_translate): when the CIE is exactly the contract's (LLVM's and
 * V8's on x86-64), the FDE's instructions as they are; otherwise the CIE's initial
 * instructions in front of the FDE's, every factored operand re-encoded for the contract's
 * factors, a rule the contract's CIE sets but this one does not (the return address at
 * cfa-8) made DW_CFA_undefined first. Refused, with the reason in words: another return
 * address column, an offset -8 does not divide, DW_CFA_restore after a CIE whose initial
 * rules differ (it would restore the contract's rule, not this CIE's), DW_CFA_set_loc, an
 * opcode fmt/cfa.h does not read, a signal frame ('S'), arm64's B key ('B') and memory
 * tagging ('G') augmentations.
 */
#ifndef JH__FMT_EH_FRAME_H
#define JH__FMT_EH_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

/* DW_EH_PE_* bits this reader knows. */
#define JH__EH_PE_indirect 0x80
#define JH__EH_PE_omit     0xff

struct jh__eh_cie {
    size_t off;                 /* of the record, from the start of the bytes */
    unsigned version;           /* 1 or 3 (4 is read too, without address/segment sizes) */
    const char *aug;            /* augmentation string, in the bytes */
    uint64_t caf, ra;           /* code alignment factor, return-address column */
    int64_t daf;                /* data alignment factor */
    uint8_t fde_enc;            /* 'R': the FDEs' pointer encoding (absptr without) */
    uint8_t lsda_enc;           /* 'L': the FDEs' LSDA encoding (omit without) */
    uint8_t pers_enc;           /* 'P': the personality's encoding (omit without) */
    bool z, signal, b_key, mte; /* 'z', 'S', 'B', 'G' */
    uint64_t personality;       /* the pointer, applied (an indirect one: its slot) */
    const uint8_t *insns;       /* the initial instructions */
    size_t insns_len;
};

struct jh__eh_fde {
    size_t off, cie_off;        /* of the record and of its CIE */
    uint64_t pc, range;
    bool has_lsda;
    uint64_t lsda;              /* applied (indirect: the slot), when has_lsda */
    const uint8_t *insns;
    size_t insns_len;
};

/*
 * The record at `off` of the bytes [eh, eh + len), which lie at address `addr` (what
 * pc-relative pointers are relative to). 1: *id (0 for a CIE, else the FDE's CIE pointer)
 * and *next (the offset after it) set; 0: a zero terminator or the end; JH_EFORMAT-style
 * -EINVAL with why[] set otherwise.
 */
int jh__eh_record(const uint8_t *eh, size_t len, size_t off, uint32_t *id, size_t *next,
                  char *why, size_t whylen);

/* The CIE at off (a record whose id is 0), or the FDE at off given its CIE. 0, or -EINVAL
 * with why[] set. */
int jh__eh_cie(const uint8_t *eh, size_t len, uint64_t addr, size_t off,
               struct jh__eh_cie *out, char *why, size_t whylen);
int jh__eh_fde(const uint8_t *eh, size_t len, uint64_t addr, size_t off,
               const struct jh__eh_cie *cie, struct jh__eh_fde *out, char *why, size_t whylen);

/* The first FDE of the bytes whose pc_begin is pc, and its CIE. 0; -ENOENT (none, why[]
 * says so); -EINVAL (a malformed record before it, why[] says which). */
int jh__eh_find(const uint8_t *eh, size_t len, uint64_t addr, uint64_t pc,
                struct jh__eh_cie *cie, struct jh__eh_fde *fde, char *why, size_t whylen);

/* The FDE's instructions rewritten for the contract of `arch` (fmt/arch.h; NULL: the
 * host's) into out (appended). 0, -EINVAL (refused, why[] says why), -ENOMEM. */
struct jh__arch;
int jh__eh_translate(const struct jh__arch *arch, const struct jh__eh_cie *cie,
                     const struct jh__eh_fde *fde, struct jh__buf *out, char *why,
                     size_t whylen);

/* The rules a contract CFI program (what jh__eh_translate writes, or jh_code.cfi) gives
 * at offset pc_off from the code's start, when they are a FRAMELESS description can say:
 * (arch: fmt/arch.h, NULL the host) CFA = sp + cfa_off, registers saved at CFA offsets (saved: a bit per DWARF register below
 * 64, at[reg] the offset; the return address's own rule included). plain false: some rule
 * it cannot say (a CFA in another register, an expression, a register in a register...).
 * -EINVAL for a program that does not decode. */
struct jh__eh_rules {
    bool plain;
    uint64_t cfa_reg;
    int64_t cfa_off;
    uint64_t saved;
    int64_t at[64];
};
int jh__eh_rules_at(const struct jh__arch *arch, const uint8_t *cfi, size_t len,
                    uint64_t pc_off, struct jh__eh_rules *out);

#endif
