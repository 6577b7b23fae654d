/* unwind_info.c — see unwind_info.h. */
#include "fmt/unwind_info.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "fmt/cfa.h"
#include "fmt/cfi.h"

enum { DW_RSP = 7, DW_RA = 16, DW_XMM0 = 17, NREG = 33, MAX_CODES = 64, MAX_DEPTH = 8,
       MAX_PREFIX = 64 };

/* DWARF's x86-64 register numbers (rax rdx rcx rbx rsi rdi rbp rsp r8..r15) to Windows'
 * (rax rcx rdx rbx rsp rbp rsi rdi r8..r15). */
static const uint8_t win_reg[16] = { 0, 2, 1, 3, 6, 7, 5, 4, 8, 9, 10, 11, 12, 13, 14, 15 };

struct code {
    uint8_t pc, op, info, nextra;
    uint16_t extra[2];
};

/* The rule set after a row: where the CFA is, and where each register was saved
 * (CFA - save[r]; 0: not saved). */
struct state {
    int cfa_reg;
    int64_t cfa_off;
    int64_t save[NREG];
};

struct tr {
    struct state cur, stack[MAX_DEPTH];
    int depth;
    bool epilogue;              /* past the prologue */
    struct code code[MAX_CODES];
    int ncode;
    struct { uint8_t pc; int reg; int64_t k; size_t at; } save[NREG];  /* mov-saves, resolved
                                                                        at the end */
    int nsave;
    struct { int reg; int64_t off; } prefix[MAX_PREFIX];     /* CFA rules of the prologue */
    int nprefix;
    bool fp_set;
    int fp_reg, fp_scaled;
    int64_t base;               /* CFA - base: the frame base (rsp when the frame register
                                   was set, or at the end of the prologue) */
    /* The group of rows at one location (one instruction of the prologue). */
    int64_t g_sp;               /* rsp moved by this much */
    int g_fp_reg;               /* -1, or the CFA moved to this register */
    int64_t g_fp_off;
    struct { int reg; int64_t k; size_t at; } g_save[NREG];
    int g_nsave;
    bool g_any;
    size_t g_at;                /* the group's first row */
    uint64_t loc, prolog_end;
    struct jh__uwi_error *err;
    size_t at;                  /* the instruction being replayed */
};

/* A row of the group at t->loc. */
static void touch(struct tr *t)
{
    if (!t->g_any)
        t->g_at = t->at;
    t->g_any = true;
}

static int refuse(struct tr *t, const char *why)
{
    if (t->err)
        *t->err = (struct jh__uwi_error){ .at = t->at, .pc = t->loc, .why = why };
    return -ENOTSUP;
}

static int add_code(struct tr *t, uint8_t op, uint8_t info, int nextra, uint16_t e0, uint16_t e1)
{
    if (t->ncode == MAX_CODES)
        return refuse(t, "a prologue needing more unwind codes than jitherald emits (64)");
    t->code[t->ncode++] = (struct code){ .pc = (uint8_t)t->loc, .op = op, .info = info,
                                         .nextra = (uint8_t)nextra, .extra = { e0, e1 } };
    return 0;
}

static int add_alloc(struct tr *t, int64_t n)
{
    if (n % 8)
        return refuse(t, "rsp adjusted by a size that is not a multiple of 8");
    if (n <= 128)
        return add_code(t, JH__UWOP_ALLOC_SMALL, (uint8_t)(n / 8 - 1), 0, 0, 0);
    if (n <= 0x7fff8)
        return add_code(t, JH__UWOP_ALLOC_LARGE, 0, 1, (uint16_t)(n / 8), 0);
    if (n > 0xffffffffll)
        return refuse(t, "a stack allocation of 4 GiB or more");
    return add_code(t, JH__UWOP_ALLOC_LARGE, 1, 2, (uint16_t)n, (uint16_t)(n >> 16));
}

static bool known_prefix(const struct tr *t, int reg, int64_t off)
{
    for (int i = 0; i < t->nprefix; i++)
        if (t->prefix[i].reg == reg && t->prefix[i].off == off)
            return true;
    return false;
}

static int add_prefix(struct tr *t)
{
    if (known_prefix(t, t->cur.cfa_reg, t->cur.cfa_off))
        return 0;
    if (t->nprefix == MAX_PREFIX)
        return refuse(t, "a prologue of more than 64 instructions");
    t->prefix[t->nprefix].reg = t->cur.cfa_reg;
    t->prefix[t->nprefix++].off = t->cur.cfa_off;
    return 0;
}

/* The rows at t->loc are complete: turn the instruction they describe into codes. */
static int flush(struct tr *t)
{
    if (!t->g_any)
        return 0;
    t->g_any = false;
    t->at = t->g_at;
    if (t->epilogue)
        return known_prefix(t, t->cur.cfa_reg, t->cur.cfa_off) ? 0 :
               refuse(t, "the CFA moves after the prologue to a place the prologue never had "
                         "(Windows describes one fixed frame: no pushes in the body)");
    if (t->loc == 0)
        return refuse(t, "a row before the first instruction (the frame at entry is a call's)");
    if (t->loc > 255)
        return refuse(t, "a prologue longer than 255 bytes");
    int err = 0;
    if (t->g_sp) {
        if (t->nsave)
            return refuse(t, "rsp adjusted after a register was saved with mov (its offset "
                             "would differ inside the prologue)");
        int push = -1;
        for (int i = 0; t->g_sp == 8 && i < t->g_nsave; i++)
            if (t->g_save[i].k == t->cur.cfa_off && t->g_save[i].reg < 16)
                push = i;
        if (push >= 0) {
            err = add_code(t, JH__UWOP_PUSH_NONVOL, win_reg[t->g_save[push].reg], 0, 0, 0);
            t->g_save[push] = t->g_save[--t->g_nsave];
        } else {
            err = add_alloc(t, t->g_sp);
        }
        t->g_sp = 0;
    }
    if (!err && t->g_fp_reg >= 0) {
        int64_t d = t->cur.cfa_off - t->g_fp_off;   /* frame register - rsp */
        if (t->g_fp_reg >= 16 || t->g_fp_reg == DW_RSP || win_reg[t->g_fp_reg] == JH__UWREG_RAX)
            return refuse(t, "a frame register Windows cannot name (rax, rsp, or not a "
                             "general-purpose register)");
        if (d < 0 || d > 240 || d % 16)
            return refuse(t, "a frame register set to rsp plus something other than 0..240 "
                             "in steps of 16");
        t->fp_set = true;
        t->fp_reg = win_reg[t->g_fp_reg];
        t->fp_scaled = (int)(d / 16);
        t->base = t->cur.cfa_off;
        t->cur.cfa_reg = t->g_fp_reg;
        t->cur.cfa_off = t->g_fp_off;
        t->g_fp_reg = -1;
        err = add_code(t, JH__UWOP_SET_FPREG, 0, 0, 0, 0);
    }
    for (int i = 0; !err && i < t->g_nsave; i++) {
        t->save[t->nsave].pc = (uint8_t)t->loc;
        t->save[t->nsave].reg = t->g_save[i].reg;
        t->save[t->nsave].at = t->g_save[i].at;
        t->save[t->nsave++].k = t->g_save[i].k;
    }
    t->g_nsave = 0;
    t->prolog_end = t->loc;
    return err ? err : add_prefix(t);
}

/* A mov-save, now that the frame base is known. Kept in prologue order with the rest. */
static int resolve_saves(struct tr *t)
{
    if (!t->fp_set)
        t->base = t->cur.cfa_off;
    struct code all[MAX_CODES];
    int n = 0, s = 0;
    for (int i = 0; i <= t->ncode; i++) {
        /* a save follows the other codes of its instruction */
        while (s < t->nsave && (i == t->ncode || t->save[s].pc < t->code[i].pc)) {
            int64_t off = t->base - t->save[s].k;
            int reg = t->save[s].reg;
            bool xmm = reg >= DW_XMM0;
            t->loc = t->save[s].pc;
            t->at = t->save[s].at;
            if (off < 0)
                return refuse(t, "a register saved below the frame base (pushed after the "
                                 "frame pointer was set: Windows prologues push first)");
            if (xmm && off % 16)
                return refuse(t, "an xmm register saved at an offset not a multiple of 16");
            if (n == MAX_CODES)
                return refuse(t, "a prologue needing more unwind codes than jitherald emits (64)");
            struct code c = { .pc = t->save[s].pc, .info = (uint8_t)(xmm ? reg - DW_XMM0 : win_reg[reg]) };
            int64_t scaled = off / (xmm ? 16 : 8);
            if (scaled <= 0xffff) {
                c.op = xmm ? JH__UWOP_SAVE_XMM128 : JH__UWOP_SAVE_NONVOL;
                c.nextra = 1;
                c.extra[0] = (uint16_t)scaled;
            } else if (off <= 0xffffffffll) {
                c.op = xmm ? JH__UWOP_SAVE_XMM128_FAR : JH__UWOP_SAVE_NONVOL_FAR;
                c.nextra = 2;
                c.extra[0] = (uint16_t)off;
                c.extra[1] = (uint16_t)(off >> 16);
            } else {
                return refuse(t, "a register saved 4 GiB or more from the frame base");
            }
            all[n++] = c;
            s++;
        }
        if (i < t->ncode) {
            if (n == MAX_CODES)
                return refuse(t, "a prologue needing more unwind codes than jitherald emits (64)");
            all[n++] = t->code[i];
        }
    }
    memcpy(t->code, all, (size_t)n * sizeof *all);
    t->ncode = n;
    return 0;
}

static void reset_reg(struct state *s, int reg) { s->save[reg] = reg == DW_RA ? 8 : 0; }

static int set_cfa(struct tr *t, int reg, int64_t off)
{
    if (t->epilogue) {
        t->cur.cfa_reg = reg;
        t->cur.cfa_off = off;
        touch(t);
        return 0;
    }
    if (t->cur.cfa_reg == DW_RSP && reg == DW_RSP) {
        if (off < t->cur.cfa_off)
            return 1;           /* the stack shrinks: an epilogue */
        t->g_sp += off - t->cur.cfa_off;
        t->cur.cfa_off = off;
    } else if (t->cur.cfa_reg == DW_RSP) {
        if (t->g_fp_reg >= 0 || t->fp_set)
            return refuse(t, "a second frame register");
        t->g_fp_reg = reg;
        t->g_fp_off = off;
    } else if (reg == DW_RSP) {
        return 1;               /* back on rsp: an epilogue */
    } else if (reg != t->cur.cfa_reg || off != t->cur.cfa_off) {
        return refuse(t, "the CFA changed while it is on the frame register");
    }
    touch(t);
    return 0;
}

static int save_reg(struct tr *t, uint64_t reg, int64_t k)
{
    if (reg >= NREG || reg == DW_RSP)
        return refuse(t, "a save of a register Windows unwind codes cannot restore");
    if (reg == DW_RA)
        return k == 8 ? 0 : refuse(t, "the return address saved somewhere else than the call put it");
    if (t->epilogue) {
        t->cur.save[reg] = k;
        return 0;
    }
    if (t->cur.save[reg])
        return refuse(t, "a register saved twice in the prologue");
    t->cur.save[reg] = k;
    t->g_save[t->g_nsave].reg = (int)reg;
    t->g_save[t->g_nsave].at = t->at;
    t->g_save[t->g_nsave++].k = k;
    touch(t);
    return 0;
}

/* One instruction: 0 done, 1 it ends the prologue (replay it as an epilogue row), <0. */
static int step(struct tr *t, const struct jh__cfa_insn *in)
{
    switch (in->op) {
    case JH__CFA_nop: case JH__CFA_GNU_args_size:
        return 0;
    case JH__CFA_def_cfa:
        return set_cfa(t, (int)in->reg, (int64_t)in->a);
    case JH__CFA_def_cfa_sf:
        return set_cfa(t, (int)in->reg, in->s * -8);
    case JH__CFA_def_cfa_register:
        return set_cfa(t, (int)in->reg, t->cur.cfa_off);
    case JH__CFA_def_cfa_offset:
        return set_cfa(t, t->cur.cfa_reg, (int64_t)in->a);
    case JH__CFA_def_cfa_offset_sf:
        return set_cfa(t, t->cur.cfa_reg, in->s * -8);
    case JH__CFA_offset: case JH__CFA_offset_extended:
        return save_reg(t, in->reg, (int64_t)in->a * 8);
    case JH__CFA_offset_extended_sf:
        return save_reg(t, in->reg, in->s * 8);
    case JH__CFA_restore: case JH__CFA_restore_extended:
        if (!t->epilogue)
            return 1;
        if (in->reg < NREG)
            reset_reg(&t->cur, (int)in->reg);
        return 0;
    case JH__CFA_same_value:
        if (in->reg < NREG && t->cur.save[in->reg] && !t->epilogue)
            return 1;
        if (in->reg < NREG)
            reset_reg(&t->cur, (int)in->reg);
        return 0;
    case JH__CFA_remember_state:
        if (!t->epilogue)
            return 1;
        if (t->depth == MAX_DEPTH)
            return refuse(t, "remember_state nested more than 8 deep");
        t->stack[t->depth++] = t->cur;
        return 0;
    case JH__CFA_restore_state:
        if (!t->epilogue)
            return 1;
        if (t->depth == 0)
            return -EINVAL;
        t->cur = t->stack[--t->depth];
        touch(t);
        return 0;
    case JH__CFA_undefined:
        return in->reg == DW_RA ? refuse(t, "an undefined return address (an outermost frame)")
                                : 0;
    case JH__CFA_register:
        return refuse(t, "a register kept in another register");
    case JH__CFA_val_offset: case JH__CFA_val_offset_sf:
        return refuse(t, "a register's value given as an address (val_offset)");
    case JH__CFA_expression: case JH__CFA_val_expression: case JH__CFA_def_cfa_expression:
        return refuse(t, "a DWARF expression");
    default:
        return refuse(t, "a call-frame instruction with no Windows equivalent");
    }
}

static int translate_cfi(struct tr *t, const struct jh__func *f)
{
    const uint8_t *p = f->cfi, *end = f->cfi + f->cfi_len;
    struct jh__cfa_insn in;
    int r;
    t->at = 0;
    while ((r = jh__cfa_next(&p, end, &in)) > 0) {
        if (in.advance) {
            if ((r = flush(t)) < 0)
                return r;
            if (in.advance > f->size - t->loc)
                return -EINVAL;
            t->loc += in.advance;
        } else if ((r = step(t, &in)) == 1) {
            if ((r = flush(t)) < 0)
                return r;
            t->epilogue = true;
            r = step(t, &in);
        }
        if (r < 0)
            return r;
        t->at = (size_t)(p - f->cfi);
    }
    if (r < 0)
        return -EINVAL;
    return flush(t);
}

static int translate_fp(struct tr *t, const struct jh__func *f)
{
    if (f->fp_push_end == 0 || f->fp_push_end > f->fp_set_end || f->fp_set_end > f->size)
        return -EINVAL;
    t->loc = f->fp_set_end;
    if (f->fp_set_end > 255)
        return refuse(t, "a prologue longer than 255 bytes");
    t->loc = f->fp_push_end;
    add_code(t, JH__UWOP_PUSH_NONVOL, JH__UWREG_RBP, 0, 0, 0);
    t->loc = f->fp_set_end;
    add_code(t, JH__UWOP_SET_FPREG, 0, 0, 0, 0);
    t->fp_set = true;
    t->fp_reg = JH__UWREG_RBP;
    t->prolog_end = f->fp_set_end;
    return 0;
}

int jh__uwi_encode(struct jh__buf *b, const struct jh__func *f, struct jh__uwi_error *err)
{
    if (f->unwind == JH_UNWIND_NONE)
        return 0;
    struct tr t = { .cur = { .cfa_reg = DW_RSP, .cfa_off = 8 }, .g_fp_reg = -1, .err = err };
    t.cur.save[DW_RA] = 8;
    t.prefix[t.nprefix].reg = DW_RSP;
    t.prefix[t.nprefix++].off = 8;
    int r;
    struct jh__func g;
    struct jh__buf insns = { 0 };
    if (f->unwind == JH_UNWIND_FRAMELESS) {
        /* the same rows as DWARF (fmt/cfi.c), translated as raw CFI would be: a frameless
         * function entered by a call works, code inside a host frame has no Windows form */
        if ((r = jh__cfi_fde_insns(&insns, &jh__arch_x86_64, f)) < 0)
            return r;
        g = *f;
        g.unwind = JH_UNWIND_CFI;
        g.cfi = insns.p;
        g.cfi_len = insns.len;
        f = &g;
        if (!g.cfi_len) {               /* CFA = rsp+8 throughout: a leaf */
            jh__buf_free(&insns);
            return 0;
        }
    }
    if (f->unwind == JH_UNWIND_FRAME_POINTER)
        r = translate_fp(&t, f);
    else if (f->unwind == JH_UNWIND_CFI && f->cfi && f->cfi_len)
        r = translate_cfi(&t, f);
    else
        r = -EINVAL;
    if (r == 0 && f->unwind == JH_UNWIND_CFI)
        r = resolve_saves(&t);
    jh__buf_free(&insns);
    if (r < 0)
        return r;
    int slots = 0;
    for (int i = 0; i < t.ncode; i++)
        slots += 1 + t.code[i].nextra;
    size_t len = 4 + 2 * (size_t)((slots + 1) & ~1);
    size_t at = b->len;
    if (jh__buf_reserve(b, len) < 0)
        return -ENOMEM;
    jh__buf_u8(b, 1);           /* version 1, no handler, not chained */
    jh__buf_u8(b, (uint8_t)t.prolog_end);
    jh__buf_u8(b, (uint8_t)slots);
    jh__buf_u8(b, t.fp_set ? (uint8_t)(t.fp_reg | t.fp_scaled << 4) : 0);
    for (int i = t.ncode; i-- > 0;) {   /* the unwinder reads them last instruction first */
        const struct code *c = &t.code[i];
        jh__buf_u8(b, c->pc);
        jh__buf_u8(b, (uint8_t)(c->op | c->info << 4));
        for (int j = 0; j < c->nextra; j++)
            jh__buf_u16(b, c->extra[j]);
    }
    if (slots & 1)
        jh__buf_u16(b, 0);
    if (b->err) {
        b->len = at;
        return -ENOMEM;
    }
    return (int)(b->len - at);
}
