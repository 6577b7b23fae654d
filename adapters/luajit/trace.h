/*
 * trace.h — the one function libjitherald carries for the LuaJIT adapter (jitherald.lua):
 * a trace, from the raw data the adapter gathers in LuaJIT's event handlers, to
 * jh_code_add. LuaJIT runs those handlers interpreted (the JIT is off in them), where
 * deriving the line table, reading the trace's frame from its machine code and filling a
 * struct jh_code field by field cost ~40 µs a trace (each FFI field store ~50 ns); here
 * it is one FFI call and a few µs of C.
 *
 * Not part of the public API (include/jitherald.h): the adapter declares it with ffi.cdef
 * and nothing else should call it. Thread-safe as jh_code_add is.
 */
#ifndef JH_LUAJIT_TRACE_H
#define JH_LUAJIT_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "jitherald.h"

/* How the trace's guards reach their exit stubs, and how its frame is read. */
enum jh_lj_arch {
    JH_LJ_X86 = 1,     /* jcc rel32 / jmp rel32 (lj_asm_x86.h); frames: x64 GC64 */
    JH_LJ_ARM64 = 2,   /* b.cond, cbz/cbnz, tbz/tbnz, b (lj_asm_arm64.h); no frames */
};

/* The interpreter's frame every trace runs in (set up once, jitherald/x86.lua's
 * trace_frame), and LuaJIT's personality routine for its code areas (NULL: none). */
struct jh_lj_frame {
    uint32_t arch;                /* enum jh_lj_arch: only JH_LJ_X86 frames are read */
    uint32_t vm_cfa;              /* CFA = rsp + vm_cfa when a trace is entered */
    uint32_t nsaved_regs;
    const struct jh_saved_reg *saved_regs;
    const void *personality;
};

/*
 * Announce the trace of machine code mcode[0..size) at addr (its loop part from offset
 * loop, 0 if none) as name / symbol.
 *
 * lines (NULL: no line table): ASCII integers separated by spaces,
 *     ARCH LINE0 STUBS_PER NBASE BASE... NEXIT (REF SLOTS)... NREC (NINS LINE FILE)...
 * ARCH an enum jh_lj_arch; LINE0 the start line (file 0, offset 0); exit k's stub is at
 * addr + BASE[k / STUBS_PER] + 4 * (k % STUBS_PER) (a BASE of 0: no such group); per exit
 * its snapshot's IR position and frame size (tracesnap; -1 slots: unknown); per recorded
 * bytecode, in order (the "record" events), the IR count when it began and its line and
 * file, an index into files (-1 or a line of 0: unknown). Rows: the start line, then per
 * guard the line of the first bytecode whose IR its code computes and the guard's own
 * snapshot line (jitherald.lua says why).
 *
 * frame (NULL: no unwind description): the trace is described JH_UNWIND_FRAMELESS from its
 * code, a root trace by its `add rsp,-N`, a side trace (is_side) by its parent's stack
 * adjustment parent_spadj (negative: unknown, then no description) plus its own; the tail
 * `add rsp,+N; jmp` of a trace that does not loop is a step back. prologue_end: where
 * `break` stops when the code has no such head (0: none).
 *
 * Returns a negative errno (jh_code_add's, or -EINVAL for data that does not parse), or
 * 0 when the trace was announced without an unwind description, or 1 + its stack
 * adjustment when with one (what its side traces pass as parent_spadj); *id as
 * jh_code_add sets it.
 */
JH_API int jh_luajit_add(jh_ctx *ctx, const char *name, const char *symbol,
                         const uint8_t *mcode, uint32_t size, uint64_t addr, uint32_t loop,
                         const char *lines, size_t lines_len, const char *const *files,
                         uint32_t nfiles, const struct jh_lj_frame *frame, int32_t parent_spadj,
                         int is_side, uint32_t prologue_end, uint64_t *id);

#endif
