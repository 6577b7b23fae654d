/*
 * prologue.h — what the first bytes of x86-64 code say about its frame, for code a producer
 * describes by name and range only (a perf map line, a jitdump LOAD without unwinding
 * info). The one list of the frame-pointer prologues real VMs emit:
 *     55 48 89 e5   push rbp; mov rbp, rsp   (gcc, MoarVM, V8, BEAM)
 *     55 48 8b ec   push rbp; mov rbp, rsp   (the other encoding: HotSpot with
 *                                             -XX:+PreserveFramePointer, Mono)
 * V8's optimized code checks for deoptimization (14 bytes) before its prologue, and the
 * copies of its interpreter entry trampoline that --interpreted-frames-native-stack makes
 * (`JS:~f` in its perf map) look at the function's bytecode for 110 bytes (node 20), so the
 * first JHR_PROLOGUE_WINDOW bytes are searched. Before the prologue the description says
 * nothing is pushed (CFA = rsp + 8), which holds for that code: it only tests and jumps.
 */
#ifndef JHR_PROLOGUE_H
#define JHR_PROLOGUE_H

#include <stddef.h>
#include <stdint.h>

#define JHR_PROLOGUE_WINDOW 160

/* Where `push rbp` ends and where `mov rbp, rsp` ends (offsets from code, as
 * jh_code.fp_push_end and fp_set_end), or 0 if no prologue is found in the window. */
int jhr_prologue_fp(const uint8_t *code, size_t size, uint32_t *push_end, uint32_t *set_end);

#endif
