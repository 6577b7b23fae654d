/*
 * prologue.h — what the first bytes of x86-64 code prove about its frame, for code a
 * producer describes by name and range only (a perf map line, a jitdump LOAD without
 * unwinding info). The one list of the frame-building prologues real VMs emit:
 *     55 48 89 e5      push rbp; mov rbp, rsp  (gcc, MoarVM, V8, BEAM)
 *     55 48 8b ec      the same, other encoding (HotSpot C1, its native wrappers and C2
 *                      with -XX:+PreserveFramePointer; Mono's frame-keeping methods)
 *     40 55 ...        push rbp with an empty REX prefix (allowed by the ISA, said once)
 *     c8 iw 00         enter N, 0
 *     48 81 ec N  48 89 6c|ac 24 N-8  48 8b ec|48 89 e5  48 83|81 c5 N-8
 *                      sub rsp, N; mov [rsp+N-8], rbp; mov rbp, rsp; add rbp, N-8 (C2
 *                      with -XX:+PreserveFramePointer, for methods that skip the stack
 *                      bang: the same frame record, built without a push)
 * Code may reach the prologue through instructions that leave rsp and rbp alone: endbr64,
 * nops, HotSpot's inline-cache check and stack bang (`mov [rsp-0x14000], eax`), V8's
 * deoptimisation check (14 bytes), the copies of V8's interpreter entry trampoline (110
 * bytes). Those are decoded one by one from the first byte, following branches; the
 * frame is proven only when every instruction before the prologue is one that moves
 * neither rsp nor rbp (nor touches the return address at [rsp]), no branch lands inside
 * an instruction or inside the prologue, and the prologue is found within
 * JHR_PROLOGUE_WINDOW bytes. (A branch past the prologue is V8's: an out-of-line path
 * that builds a frame of its own before it calls; the description says "in the frame"
 * there, wrong only while the pc is in its first instructions, as in an epilogue's tail,
 * right at every call.) Anything else — PHP's traces, Mono's and C2's frameless
 * methods (`sub rsp, N` with no frame record), a push before `push rbp`, an instruction
 * the decoder does not know — proves nothing, and the caller says so (JHR_FRAME_NONE) to
 * unwinders with CFI that leaves the return address undefined: `bt` ends at that frame
 * instead of reading garbage as a return address.
 */
#ifndef JHR_PROLOGUE_H
#define JHR_PROLOGUE_H

#include <stddef.h>
#include <stdint.h>

#define JHR_PROLOGUE_WINDOW 160

enum jhr_frame_kind {
    JHR_FRAME_NONE = 0,         /* nothing proven */
    JHR_FRAME_PUSH = 1,         /* push rbp; mov rbp, rsp (or enter) */
    JHR_FRAME_SUB = 2,          /* sub rsp, N; mov [rsp+N-8], rbp; mov rbp, rsp; add rbp, N-8 */
};

/* Offsets from the code's first byte, each just after the instruction named. */
struct jhr_frame {
    enum jhr_frame_kind kind;
    uint32_t push_end;          /* PUSH: `push rbp` (enter: the enter) */
    uint32_t sub_end;           /* SUB: `sub rsp, N` */
    uint32_t save_end;          /* SUB: `mov [rsp+N-8], rbp` */
    uint32_t set_end;           /* both: rbp holds the frame record's address from here on:
                                   the caller's rbp at [rbp], the return address at [rbp+8] */
    uint32_t frame;             /* SUB: N */
};

/* What the first bytes of code (size bytes readable) prove about its frame: kind
 * JHR_FRAME_NONE when nothing is. Returns kind. Pure, thread-safe. */
enum jhr_frame_kind jhr_prologue_frame(const uint8_t *code, size_t size, struct jhr_frame *f);

/* Call-frame instructions for f, as jh_code.cfi takes them (after the CIE arch says:
 * x86-64's CFA = rsp + 8, return address at CFA - 8): for JHR_FRAME_NONE, DW_CFA_undefined
 * of arch's return-address column (the frame is where unwinding ends); for JHR_FRAME_SUB
 * (x86-64), the CFA at rsp + N + 8 after the sub, rbp saved at CFA - 16 after the store,
 * then CFA = rbp + 16. (JHR_FRAME_PUSH is said with JH_UNWIND_FRAME_POINTER.) Returns the
 * length written (at most JHR_PROLOGUE_CFI_MAX), 0 for JHR_FRAME_PUSH. */
#define JHR_PROLOGUE_CFI_MAX 24
struct jh__arch;
size_t jhr_prologue_cfi(const struct jhr_frame *f, const struct jh__arch *arch,
                        uint8_t out[JHR_PROLOGUE_CFI_MAX]);

/* c's unwind description from its bytes (c->start, c->size bytes readable; c->unwind
 * JH_UNWIND_NONE), for code of this process: JHR_FRAME_PUSH as JH_UNWIND_FRAME_POINTER,
 * the others as JH_UNWIND_CFI whose instructions are written to cfi (which must outlive
 * every use of c). What `jitherald run` says of code a VM describes by name and range
 * only. The list is x86-64's: on another host, c is left as it is and the result is
 * JHR_FRAME_NONE. Returns the kind. */
struct jh_code;
enum jhr_frame_kind jhr_prologue_describe(struct jh_code *c,
                                          uint8_t cfi[JHR_PROLOGUE_CFI_MAX]);

#endif
