/*
 * a64_jit.h — the hand-encoded arm64 JIT code the C tests of tests/arm64/ run through an
 * unwinder, its description for the unwind channel, and the check that a walk went through
 * it (not a test: included by test_a64_*.c, one copy per program).
 *   - a frame-record function (stp x29, x30; mov x29, sp; ...; ldp; ret), optionally
 *     signing its return address (paciasp/pacibsp ... autiasp/autibsp), described as
 *     JH_UNWIND_FRAME_POINTER (with .ra_signed when signed), calling through a literal
 *   - a frameless function that keeps x30 on the stack, described by raw CFI, calling C.
 * The code lives in one rwx area (a64_area_init), a new slot per emit.
 */
#ifndef JH_TESTS_A64_JIT_H
#define JH_TESTS_A64_JIT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "check.h"
#include "jitherald.h"

enum { PACIASP = 0xd503233f, AUTIASP = 0xd50323bf, PACIBSP = 0xd503237f,
       AUTIBSP = 0xd50323ff, STP_FP_LR = 0xa9bf7bfd, MOV_FP_SP = 0x910003fd,
       LDP_FP_LR = 0xa8c17bfd, RET = 0xd65f03c0, BLR_X16 = 0xd63f0200, BRK0 = 0xd4200000,
       STR_LR_PRE = 0xf81f0ffe /* str x30, [sp, #-16]! */,
       LDR_LR_POST = 0xf84107fe /* ldr x30, [sp], #16 */, NOP = 0xd503201f };

static inline uint32_t ldr_x16_literal(uint32_t at, uint32_t lit)
{
    return 0x58000010u | ((lit - at) / 4) << 5;
}

typedef void jit_fn(void);
/* What calls the JIT code: a walk through it must reach this frame, then main's. */
__attribute__((noinline, unused)) static void call_jit(jit_fn *f)
{
    f();
    __asm__ volatile("" ::: "memory");
}

/* A return address is after its call: (lo, lo+n]; a signal's pc is where it stopped:
 * [lo, lo+n). */
__attribute__((unused)) static bool at_signal;
static inline bool in(uintptr_t ip, const void *lo, size_t n)
{
    return at_signal ? ip >= (uintptr_t)lo && ip < (uintptr_t)lo + n
                     : ip > (uintptr_t)lo && ip <= (uintptr_t)lo + n;
}

/* Whether the frames ip[0..n) hold f (code [f, f+fsz)), right after it call_jit, and at
 * least one frame (main's) after that; with g (NULL: none), g right before f. Prints what
 * it saw: the frame numbers of g and f (-1: not there) and of the first call_jit after f. */
static inline bool in_call_jit(uintptr_t ip)
{
    return ip > (uintptr_t)call_jit && ip < (uintptr_t)call_jit + 64;
}

static inline bool walks(const uintptr_t *ip, int n, const void *f, size_t fsz, const void *g,
                         size_t gsz, const char *what)
{
    int at_f = -1, at_g = -1, at_call = -1;
    for (int i = 0; i < n && at_f < 0; i++)
        if (in(ip[i], f, fsz))
            at_f = i;
    if (g && at_f > 0 && in(ip[at_f - 1], g, gsz))
        at_g = at_f - 1;
    for (int i = at_f + 1; at_f >= 0 && i < n && at_call < 0; i++)
        if (in_call_jit(ip[i]))
            at_call = i;
    bool ok = at_f >= 0 && at_call == at_f + 1 && (!g || at_g == at_f - 1) && n > at_call + 1;
    printf("%s: %d frames; JIT frames #%d #%d, call_jit #%d: %s\n", what, n, at_g, at_f,
           at_call, ok ? "ok" : "BROKEN");
    return ok;
}

/* libgcc's (or LLVM's) _Unwind_Backtrace, the pc of each frame into a64_walk (64 at most:
 * a walk that loops ends there). */
struct _Unwind_Context;
int _Unwind_Backtrace(int (*fn)(struct _Unwind_Context *, void *), void *arg);
uintptr_t _Unwind_GetIP(struct _Unwind_Context *);

struct a64_walk {
    uintptr_t ip[64];
    int n;
};

static inline int a64_collect(struct _Unwind_Context *uc, void *arg)
{
    struct a64_walk *w = arg;
    if (w->n == 64)
        return 5;                       /* _URC_END_OF_STACK */
    w->ip[w->n++] = _Unwind_GetIP(uc);
    return 0;
}

static inline void a64_unwind(struct a64_walk *w)
{
    w->n = 0;
    _Unwind_Backtrace(a64_collect, w);
}

/* ---- the code ------------------------------------------------------------------------- */
__attribute__((unused)) static uint8_t *area;
__attribute__((unused)) static size_t used;

static inline void a64_area_init(void)
{
    area = mmap(NULL, 65536, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
                -1, 0);
    CHECK(area != MAP_FAILED);
    if (area == MAP_FAILED)
        exit(check_done());
}

static inline uint32_t *place(size_t bytes)
{
    uint32_t *p = (uint32_t *)(area + used);
    used += (bytes + 15) & ~(size_t)15;
    return p;
}

static inline void a64_flush(void)
{
    __builtin___clear_cache((char *)area, (char *)area + used);
}

/* frameless: str x30,[sp,#-16]!; ldr x16,lit; blr x16; ldr x30,[sp],#16; ret; lit */
#define FRAMELESS_SIZE 32
__attribute__((unused)) static const uint8_t frameless_cfi[] = {
    /* code alignment 1: advances count bytes */
    0x44, 0x0e, 16,             /* at 4: CFA = sp + 16 */
    0x9e, 2,                    /* x30 at cfa - 16 */
    0x48, 0x0e, 0,              /* at 12: CFA = sp */
    0xde,                       /* x30 restored (the CIE's: in x30) */
};

static inline uint32_t *emit_frameless(void (*target)(void))
{
    uint32_t *c = place(FRAMELESS_SIZE);
    c[0] = STR_LR_PRE;
    c[1] = ldr_x16_literal(4, 24);
    c[2] = BLR_X16;
    c[3] = LDR_LR_POST;
    c[4] = RET;
    c[5] = NOP;
    memcpy(&c[6], &target, 8);
    return c;
}

static inline int add_frameless(jh_ctx *ctx, const uint32_t *code, uint64_t *id)
{
    struct jh_code fl = { .sz = sizeof fl, .name = "frameless_fn", .start = code,
                          .size = FRAMELESS_SIZE, .unwind = JH_UNWIND_CFI, .cfi = frameless_cfi,
                          .cfi_len = sizeof frameless_cfi };
    return jh_code_add(ctx, &fl, id);
}

/* The frame-record function, with brk #0 before instruction `brk_at` (-1: none):
 * [pac;] stp; mov; ldr x16,lit; blr x16; ldp; [aut;] ret; lit. Fills the description. */
struct signed_fn {
    uint32_t *code;
    size_t size;
    struct jh_range signed_range;
    struct jh_epilogue epi;
    uint32_t push_end, set_end;
};

enum a64_sign { A64_UNSIGNED = -1, A64_KEY_A = 0, A64_KEY_B = 1 };

static inline void emit_fp_fn(struct signed_fn *s, void *target, enum a64_sign sign,
                              int brk_at)
{
    bool b_key = sign == A64_KEY_B;
    uint32_t seq[] = { b_key ? PACIBSP : PACIASP, STP_FP_LR, MOV_FP_SP, 0, BLR_X16,
                       LDP_FP_LR, b_key ? AUTIBSP : AUTIASP, RET };
    if (sign == A64_UNSIGNED)
        seq[0] = seq[6] = NOP;          /* the same layout, nothing signed */
    uint32_t *c = place(4 * 10 + 8);
    uint32_t n = 0, off[9];
    for (int i = 0; i < 8; i++) {
        if (i == brk_at)
            c[n++] = BRK0;
        off[i] = 4 * n;
        c[n++] = seq[i];
    }
    off[8] = 4 * n;                                     /* after ret */
    if (n % 2)
        c[n++] = NOP;                                   /* the literal 8-aligned */
    uint32_t lit = 4 * n;
    c[off[3] / 4] = ldr_x16_literal(off[3], lit);
    memcpy(&c[n], &target, 8);
    s->code = c;
    s->size = lit + 8;
    s->push_end = off[1] + 4;                           /* after stp */
    s->set_end = off[2] + 4;                            /* after mov */
    s->epi = (struct jh_epilogue){ off[5] + 4, off[8] };    /* after ldp .. after ret */
    s->signed_range = (struct jh_range){ off[0] + 4, off[6] + 4 };  /* pac .. aut */
}

static inline void emit_signed(struct signed_fn *s, void *target, bool b_key, int brk_at)
{
    emit_fp_fn(s, target, b_key ? A64_KEY_B : A64_KEY_A, brk_at);
}

/* Describes s as JH_UNWIND_FRAME_POINTER; with describe_pac, its signed range and key. */
static inline uint64_t add_signed(jh_ctx *ctx, const struct signed_fn *s, bool b_key,
                                  bool describe_pac)
{
    struct jh_code c = { .sz = sizeof c, .name = "signed_fn", .start = s->code,
                         .size = s->size, .unwind = JH_UNWIND_FRAME_POINTER,
                         .fp_push_end = s->push_end, .fp_set_end = s->set_end,
                         .nepilogues = 1, .epilogues = &s->epi };
    if (describe_pac) {
        c.ra_signed = &s->signed_range;
        c.nra_signed = 1;
        c.ra_key = b_key ? JH_PAC_KEY_B : JH_PAC_KEY_A;
    }
    uint64_t id = 0;
    CHECK_EQ(jh_code_add(ctx, &c, &id), 0);
    return id;
}

#endif
