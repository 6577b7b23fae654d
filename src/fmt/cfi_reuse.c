/*
 * cfi_reuse.c — an FDE like the one before it, for cfi.c's runs: a run's functions mostly
 * come in a row of the same frame (node's builtins: three in four FDEs of a gdb image have
 * the instructions of the one before, issue 30). Such an FDE is the one before it with its
 * CIE pointer and addresses patched: a copy instead of an encoding (~270 instructions an
 * FDE). test_cfi_reuse checks every FDE of runs of near-identical shapes against
 * jh__cfi_fde_insns. And a function's instructions encoded once for all the runs it goes
 * into (jh__cfi_memo).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fmt/cfi.h"
#include "fmt/cfi_out.h"
#include "fmt/func.h"

/* Does jh__cfi_put_insns write the same bytes for f as for p, both on its plain path (no
 * arm64 signing state spliced in, which raw mode alone no longer says: a memo's FDE is raw
 * with it; eh_frame checks)? */
bool jh__cfi_same_insns(const struct jh__func *p, const struct jh__func *f)
{
    if (p->unwind != f->unwind)
        return false;
    switch (f->unwind) {
    case JH_UNWIND_CFI:
        return p->cfi_len == f->cfi_len && !memcmp(p->cfi, f->cfi, f->cfi_len);
    case JH_UNWIND_FRAME_POINTER:
        if (p->fp_push_end != f->fp_push_end || p->fp_set_end != f->fp_set_end ||
            p->nepilogues != f->nepilogues)
            return false;
        for (uint32_t i = 0; i < f->nepilogues; i++) {
            const struct jh_epilogue *a = &p->epilogues[i], *b = &f->epilogues[i];
            if (a->start != b->start || a->end != b->end ||
                (a->end < p->size) != (b->end < f->size))   /* a tail at the end: no body after */
                return false;
        }
        return true;
    case JH_UNWIND_FRAMELESS:
        if (p->cfa_offset != f->cfa_offset || p->ncfa_steps != f->ncfa_steps ||
            p->nsaved_regs != f->nsaved_regs)
            return false;
        for (uint32_t i = 0; i < f->ncfa_steps; i++)
            if (p->cfa_steps[i].offset != f->cfa_steps[i].offset ||
                p->cfa_steps[i].cfa_offset != f->cfa_steps[i].cfa_offset)
                return false;
        for (uint32_t i = 0; i < f->nsaved_regs; i++)
            if (p->saved_regs[i].reg != f->saved_regs[i].reg ||
                p->saved_regs[i].cfa_offset != f->saved_regs[i].cfa_offset)
                return false;
        return true;
    case JH_UNWIND_NONE:
    case JH_UNWIND_EH_FRAME:
        break;
    }
    return false;
}

/* The FDE of len bytes at count from, again at the end (raw mode: room reserved), with f's
 * CIE pointer and addresses. */
void jh__cfi_copy_fde(struct out *w, const struct jh__cfi_opts *o, const struct jh__func *f,
                     size_t from, size_t len, uint32_t cie_ptr, uint64_t pc_field)
{
    uint8_t *d = w->raw + w->n;
    memcpy(d, w->raw + from, len);
    size_t n = w->n;
    w->n += 4;
    ofde_head(w, o, f, cie_ptr, pc_field);
    w->n = n + len;
}

int jh__cfi_memo(struct jh__func *f)
{
    const struct jh__arch *a = JH__ARCH_HOST;
    if (f->insns || f->unwind == JH_UNWIND_NONE)
        return 0;
    if (!jh__cfi_func_ok(a, f))
        return -EINVAL;
    struct jh__insns *m;
    size_t bound = jh__cfi_fde_bound(a, f);
    if (bound) {                /* raw, into the memo itself (the FDE's bound: a few bytes over) */
        if (!(m = malloc(sizeof *m + bound)))
            return -ENOMEM;
        struct out t = { NULL, 0, m->b };
        jh__cfi_put_insns(&t, a, f);
        m->len = (uint32_t)t.n;
    } else {                    /* arm64's signing state spliced in: checked writes */
        struct jh__buf b = { 0 };
        struct out t = { &b, 0, NULL };
        jh__cfi_put_insns(&t, a, f);
        m = b.err ? NULL : malloc(sizeof *m + b.len);
        if (m) {
            memcpy(m->b, b.p, b.len);
            m->len = (uint32_t)b.len;
        }
        jh__buf_free(&b);
        if (!m)
            return -ENOMEM;
    }
    f->insns = m;
    return 0;
}
