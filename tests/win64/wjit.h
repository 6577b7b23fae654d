/*
 * wjit.h — the Windows tests' JIT: x64 machine code for the Microsoft calling convention,
 * written into one VirtualAlloc'd code area and announced to jitherald. It makes chains of
 * three functions, each calling the next, the innermost calling a host callback:
 *
 *     host -> outer (CFI: saves rbx, rsi and sets them to WJIT_RBX, WJIT_RSI)
 *          -> middle (frame pointer: push rbp; mov rbp,rsp; sub rsp,48; keeps vm_pc)
 *          -> inner (CFI: saves rbx, rsi and sets them to garbage)
 *          -> callback(arg)
 *
 * Without unwind info for them, Windows takes each JIT frame for a leaf function and reads
 * the return address at rsp, which is the shadow space: exceptions, longjmp and stack walks
 * go astray. With it, an unwinder crossing `inner` must give back rbx = WJIT_RBX and
 * rsi = WJIT_RSI in `middle`'s frame.
 */
#ifndef JH_TEST_WJIT_H
#define JH_TEST_WJIT_H

#include <stddef.h>
#include <stdint.h>

#include "jitherald.h"

#ifdef __cplusplus
extern "C" {
#endif

#define WJIT_RBX 0x0123456789abcdefull
#define WJIT_RSI 0x0fedcba987654321ull

typedef void wjit_callback(uint64_t arg);
/* vm_pc: a code address of the VM's that `middle` keeps in its frame (see emit_fp). */
typedef uint64_t wjit_entry(uint64_t arg, wjit_callback *cb, const void *vm_pc);

struct wjit_fn {
    const char *name;
    uint8_t *code;
    size_t size;
    uint64_t id;                /* from jh_code_add, 0 if not announced */
};

struct wjit_chain {
    struct wjit_fn fn[3];       /* outer, middle, inner */
    wjit_entry *entry;          /* outer */
};

/* The code area: one reservation of `bytes`, committed read-write-execute. 0 or -1. */
int wjit_init(size_t bytes);
/* Bytes of the area still free, and where the next function goes. */
size_t wjit_free(void);
uint8_t *wjit_here(void);
/* Rewind the bump pointer to p (an address handed out before): code there is re-used. */
void wjit_rewind(uint8_t *p);

/* Compile a chain (names prefixed with tag) and announce its functions on jh (jh NULL: not
 * announced). 0, or the jh_code_add error. Thread-safe. */
int wjit_make_chain(jh_ctx *jh, const char *tag, struct wjit_chain *c);
/* Remove the chain's functions from jh (ids kept in c). */
void wjit_unchain(jh_ctx *jh, struct wjit_chain *c);

/* One small frame-pointer function (a leaf returning its argument), announced; for tests
 * that need many functions. size is padded to `size` bytes (>= 16). */
int wjit_leaf(jh_ctx *jh, const char *name, size_t size, struct wjit_fn *out);

/* The JIT function containing pc (in the chain c), or -1. */
int wjit_which(const struct wjit_chain *c, uintptr_t pc);

#ifdef __cplusplus
}
#endif

#endif
