/*
 * cfi_pac.c — arm64 return-address signing (PAC-RET) in the CFI jitherald writes: the
 * function's signed ranges (jh_code.ra_signed) become DW_CFA_AARCH64_negate_ra_state
 * toggles spliced into the FDE's instructions at the ranges' ends, where an advance is
 * split if it crosses one. The state starts unsigned (the CIE's), flips to signed at each
 * range's start and back at its end (unless the end is the code's). Unwinders that read
 * it (libgcc, LLVM's libunwind, gdb) then authenticate — or strip — the return address
 * in those ranges, with the key the CIE's 'B' names (cfi.c).
 */
#include <stdint.h>

#include "fmt/cfa.h"
#include "fmt/cfi.h"

#define NEGATE_RA_STATE JH__CFA_GNU_window_save     /* 0x2d, arm64's meaning */

/* The t-th toggle's offset (ranges' starts and ends, in order), or UINT64_MAX past the
 * last. An end at the code's end toggles nothing (no code follows). */
static uint64_t toggle(const struct jh__func *f, uint32_t t)
{
    for (; t < 2 * f->nra_signed; t++) {
        const struct jh_range *r = &f->ra_signed[t / 2];
        uint64_t at = t % 2 ? r->end : r->start;
        if (at < f->size)
            return at;
    }
    return UINT64_MAX;
}

void jh__cfi_pac_splice(struct jh__buf *out, const uint8_t *in, size_t n,
                        const struct jh__func *f)
{
    const uint8_t *p = in, *end = in + n;
    uint64_t loc = 0;
    uint32_t t = 0;
    struct jh__cfa_insn ins;
    /* the toggles at loc come before the instructions at loc: they are one row */
    for (;;) {
        uint64_t at;
        while ((at = toggle(f, t)) != UINT64_MAX && at <= loc) {
            jh__buf_u8(out, NEGATE_RA_STATE);
            t++;
            while (toggle(f, t) == at)          /* an end and the next start together */
                t++, jh__buf_u8(out, NEGATE_RA_STATE);
        }
        const uint8_t *q = p;
        if (jh__cfa_next(&p, end, &ins) <= 0)   /* validated before: 0 is the end */
            break;
        if (!ins.advance) {
            jh__buf_put(out, q, (size_t)(p - q));
            continue;
        }
        uint64_t to = loc + ins.advance;
        while ((at = toggle(f, t)) != UINT64_MAX && at < to) {
            jh__cfa_put_advance(out, at - loc);         /* split at the toggle */
            loc = at;
            jh__buf_u8(out, NEGATE_RA_STATE);
            t++;
        }
        jh__cfa_put_advance(out, to - loc);
        loc = to;
    }
    uint64_t at;
    while ((at = toggle(f, t)) != UINT64_MAX) {  /* toggles after the last row */
        jh__cfa_put_advance(out, at - loc);
        loc = at;
        jh__buf_u8(out, NEGATE_RA_STATE);
        t++;
    }
}
