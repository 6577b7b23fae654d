/*
 * unwind_info.h — Windows x64 unwind information (UNWIND_INFO, version 1) from the unwind
 * description of `struct jh_code`: what RtlVirtualUnwind, the SEH dispatcher (C++
 * exceptions, msvcrt's longjmp) and stack walkers read for code that a RUNTIME_FUNCTION
 * points at. Pure: bytes in, jh_buf out. Layout (Microsoft's "x64 exception handling"):
 *     u8 version 1 | flags << 3     u8 prologue size     u8 count of code slots
 *     u8 frame register | (frame register offset / 16) << 4
 *     u16 codes[count], in reverse order of the prologue, padded to an even count
 *
 * JH_UNWIND_FRAME_POINTER (push rbp; mov rbp,rsp) becomes
 *     prologue fp_set_end, frame register rbp at offset 0,
 *     codes: SET_FPREG at fp_set_end, PUSH_NONVOL rbp at fp_push_end
 * (bytes 01 <set> 02 05 <set> 03 <push> 50 for the usual 1 and 4). What the JIT allocates
 * after the frame pointer is set needs no code: the unwinder finds rsp from rbp.
 *
 * JH_UNWIND_CFI: the rows are replayed and each instruction of the prologue becomes a code:
 *     CFA offset +8 with the register stored at the new top   PUSH_NONVOL reg
 *     CFA offset +N otherwise                                 ALLOC_SMALL / ALLOC_LARGE N
 *     CFA moved from rsp to another register                  SET_FPREG (offset 0..240, /16)
 *     a register saved anywhere else (DW_CFA_offset)          SAVE_NONVOL(_FAR), or
 *                                                             SAVE_XMM128(_FAR) for xmm
 * The prologue ends at the first row that undoes something (a smaller CFA offset, a
 * restore, remember_state). Later rows may only bring the CFA back to where it was at some
 * point of the prologue (epilogues: the unwinder recognises them from the instructions
 * themselves) or restore the body's state; anything else is a frame Windows cannot
 * describe. Not expressible, each refused with -ENOTSUP and the row named:
 *   - a row before the first instruction (the frame at entry is not a call's),
 *   - the CFA moving after the prologue (a push in the body, rsp-based frames that change),
 *   - a register saved below the frame base (pushed after the frame pointer was set:
 *     Windows prologues push registers first), or saved before a later rsp adjustment,
 *   - a CFA offset changed while the CFA is on the frame register,
 *   - a register kept in another register, an expression, an undefined return address,
 *     saves of the return address elsewhere,
 *   - a prologue longer than 255 bytes or needing more than 255 code slots.
 * The bytes are checked against GNU as's own .seh_* output and llvm-readobj's decoder in
 * tests/unit/test_unwind_info.c; to look at a function's bytes by hand, wrap them in an
 * object the same way (an .xdata section and a .pdata entry) and run
 *     llvm-readobj --unwind f.o        or        x86_64-w64-mingw32-objdump -x f.o
 */
#ifndef JH__FMT_UNWIND_INFO_H
#define JH__FMT_UNWIND_INFO_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "fmt/func.h"

/* Which row could not be translated. */
struct jh__uwi_error {
    size_t at;                  /* byte offset of the instruction in the CFI */
    uint64_t pc;                /* code offset the row describes */
    const char *why;            /* static text */
};

/*
 * Append f's UNWIND_INFO to b (4-byte aligned in length). Returns its length, 0 for
 * JH_UNWIND_NONE (nothing appended), -EINVAL for a malformed description, -ENOTSUP when the
 * rows cannot be expressed (err, if not NULL, says which and why), -ENOMEM. On error b->len
 * is restored.
 */
int jh__uwi_encode(struct jh__buf *b, const struct jh__func *f, struct jh__uwi_error *err);

/* UNWIND_CODE operations and Windows' numbering of the integer registers. */
enum {
    JH__UWOP_PUSH_NONVOL = 0, JH__UWOP_ALLOC_LARGE = 1, JH__UWOP_ALLOC_SMALL = 2,
    JH__UWOP_SET_FPREG = 3, JH__UWOP_SAVE_NONVOL = 4, JH__UWOP_SAVE_NONVOL_FAR = 5,
    JH__UWOP_SAVE_XMM128 = 8, JH__UWOP_SAVE_XMM128_FAR = 9
};
enum { JH__UWREG_RAX, JH__UWREG_RCX, JH__UWREG_RDX, JH__UWREG_RBX, JH__UWREG_RSP,
       JH__UWREG_RBP, JH__UWREG_RSI, JH__UWREG_RDI };

#endif
