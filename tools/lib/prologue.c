/*
 * prologue.c — see prologue.h. A length decoder for the part of x86-64 that VMs put before
 * a prologue (the one-byte map's integer instructions and a few of the 0f map's), not a
 * disassembler: an instruction it does not know proves nothing, which costs a frame that
 * then ends the backtrace, never a wrong one.
 */
#include "lib/prologue.h"

#include <string.h>

#include "jitherald.h"
#include "fmt/arch.h"

#define MAX_TARGETS 32

enum step {
    STEP_ON,                    /* falls through to the next instruction */
    STEP_END,                   /* never falls through (jmp, ret) */
    STEP_BAD,                   /* unknown, or it may move rsp/rbp or the return address */
};

struct insn {
    uint32_t len;
    int32_t rel;                /* a relative branch's displacement */
    int branch;
};

static int32_t le(const uint8_t *p, unsigned n)
{
    if (n == 1)
        return (int8_t)p[0];
    if (n == 2)
        return (int16_t)(p[0] | p[1] << 8);
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                     (uint32_t)p[3] << 24);
}

/* rsp or rbp as a register operand: 4 and 5 without the REX extension bit (spl, bpl; ah
 * and ch in byte instructions without REX are refused too: nothing real needs them). */
static int frame_reg(unsigned r, int ext) { return !ext && (r == 4 || r == 5); }

static enum step decode(const uint8_t *p, size_t n, struct insn *in)
{
    size_t i = 0;
    int osz16 = 0, rex = 0;
    memset(in, 0, sizeof *in);
    for (;; i++) {
        if (i >= n || i > 4)
            return STEP_BAD;
        switch (p[i]) {         /* legacy prefixes (a switch: cheaper than the chain) */
        case 0x66:
            osz16 = 1;
            continue;
        case 0x67: case 0xf2: case 0xf3: case 0x2e: case 0x3e: case 0x26: case 0x36:
        case 0x64: case 0x65:
            continue;
        default:
            break;
        }
        break;
    }
    if (p[i] >= 0x40 && p[i] <= 0x4f)
        rex = p[i++];
    if (i >= n)
        return STEP_BAD;
    int rexw = rex & 8, rexr = rex & 4, rexb = rex & 1;
    unsigned z = osz16 ? 2 : 4;         /* an imm16/imm32 operand */
    uint8_t op = p[i++];
    int modrm = 0, group = 0;           /* group: ModRM's reg field extends the opcode */
    unsigned imm = 0, rel = 0;
    enum step st = STEP_ON;
    if (op == 0x0f) {
        if (i >= n)
            return STEP_BAD;
        uint8_t o = p[i++];
        if (o >= 0x80 && o <= 0x8f)
            rel = 4;                                    /* jcc rel32 */
        else if (o >= 0x18 && o <= 0x1f)
            modrm = group = 1;                          /* hint nops, endbr64 (f3 0f 1e fa) */
        else if (o >= 0x90 && o <= 0x9f)
            modrm = group = 1;                          /* setcc */
        else if ((o >= 0x10 && o <= 0x17) || (o >= 0x28 && o <= 0x2f) ||
                 (o >= 0x40 && o <= 0x4f) || (o >= 0x51 && o <= 0x5f) ||
                 o == 0x6e || o == 0x6f || o == 0x7e || o == 0x7f || o == 0xa3 ||
                 o == 0xab || o == 0xaf || o == 0xb3 || o == 0xb6 || o == 0xb7 ||
                 o == 0xb8 || o == 0xbb || o == 0xbc || o == 0xbd || o == 0xbe || o == 0xbf)
            modrm = 1;          /* SSE moves and arithmetic, cmovcc, bt, imul, movzx/sx... */
        else if (o == 0xa4 || o == 0xac)
            modrm = 1, imm = 1;                         /* shld/shrd imm8 */
        else if (o == 0xba)
            modrm = group = 1, imm = 1;                 /* bt group, imm8 */
        else
            return STEP_BAD;
    } else if (op < 0x40) {
        unsigned lo = op & 7;
        if (lo <= 3)
            modrm = 1;                                  /* add..cmp r/m, r and r, r/m */
        else if (lo == 4)
            imm = 1;                                    /* al, imm8 */
        else if (lo == 5)
            imm = z;                                    /* eax, imm32 */
        else
            return STEP_BAD;
    } else if (op == 0x63 || (op >= 0x84 && op <= 0x8b) || op == 0x8d) {
        modrm = 1;                                      /* movsxd, test, xchg, mov, lea */
    } else if (op == 0x69 || op == 0x6b) {
        modrm = 1, imm = op == 0x69 ? z : 1;            /* imul r, r/m, imm */
    } else if (op >= 0x70 && op <= 0x7f) {
        rel = 1;                                        /* jcc rel8 */
    } else if (op == 0x80 || op == 0x81 || op == 0x83) {
        modrm = group = 1, imm = op == 0x81 ? z : 1;
    } else if (op == 0x90 || op == 0x98 || op == 0x99) {
        ;                                               /* nop/pause, cwde, cdq */
    } else if (op == 0xa8 || op == 0xa9) {
        imm = op == 0xa8 ? 1 : z;                       /* test al/eax, imm */
    } else if (op >= 0xb0 && op <= 0xb7) {
        if (rex && frame_reg(op & 7, rexb))
            return STEP_BAD;                            /* mov spl/bpl, imm8 */
        imm = 1;
    } else if (op >= 0xb8 && op <= 0xbf) {
        if (frame_reg(op & 7, rexb))
            return STEP_BAD;                            /* mov esp/ebp, imm */
        imm = rexw ? 8 : z;
    } else if (op == 0xc0 || op == 0xc1 || (op >= 0xd0 && op <= 0xd3)) {
        modrm = group = 1, imm = op <= 0xc1;            /* shifts */
    } else if (op == 0xc2 || op == 0xc3) {
        st = STEP_END, imm = op == 0xc2 ? 2 : 0;        /* ret */
    } else if (op == 0xc6 || op == 0xc7) {
        modrm = group = 1, imm = op == 0xc6 ? 1 : z;    /* mov r/m, imm (/0 only) */
    } else if (op == 0xe8) {
        rel = 4;                                        /* call: rsp is back after it */
    } else if (op == 0xe9 || op == 0xeb) {
        rel = op == 0xe9 ? 4 : 1, st = STEP_END;        /* jmp */
    } else if (op == 0xf6 || op == 0xf7 || op == 0xfe || op == 0xff) {
        modrm = group = 1;                              /* by the reg field, below */
    } else {
        return STEP_BAD;        /* push, pop, enter, leave, int3, string ops, VEX, ... */
    }
    if (modrm) {
        if (i >= n)
            return STEP_BAD;
        uint8_t m = p[i++];
        unsigned mod = m >> 6, reg = (m >> 3) & 7, rm = m & 7;
        if (group) {
            if ((op == 0xc6 || op == 0xc7) && reg != 0)
                return STEP_BAD;
            if ((op == 0xf6 || op == 0xf7) && reg <= 1)
                imm = op == 0xf6 ? 1 : z;               /* test r/m, imm */
            if (op == 0xfe && reg > 1)
                return STEP_BAD;
            if (op == 0xff) {
                if (reg == 4)
                    st = STEP_END;                      /* jmp r/m */
                else if (reg != 0 && reg != 1 && reg != 2)
                    return STEP_BAD;                    /* callf, jmpf, push r/m */
            }
        } else if (frame_reg(reg, rexr)) {
            return STEP_BAD;
        }
        if (mod == 3) {
            if (frame_reg(rm, rexb))
                return STEP_BAD;
        } else {
            int on_rsp = 0;
            unsigned disp = mod == 1 ? 1 : mod == 2 ? 4 : 0;
            if (rm == 4) {
                if (i >= n)
                    return STEP_BAD;
                uint8_t sib = p[i++];
                on_rsp = (sib & 7) == 4 && !rexb;
                if ((sib & 7) == 5 && mod == 0)
                    disp = 4;
            } else if (rm == 5 && mod == 0) {
                disp = 4;                               /* rip-relative */
            }
            if (i + disp > n)
                return STEP_BAD;
            /* [rsp + d], d >= 0: the return address or the caller's frame; a stack bang
             * writes below rsp */
            if (on_rsp && (disp == 0 || le(p + i, disp) >= 0))
                return STEP_BAD;
            i += disp;
        }
    }
    if (i + imm + rel > n)
        return STEP_BAD;
    i += imm;
    if (rel) {
        in->branch = 1;
        in->rel = le(p + i, rel);
        i += rel;
    }
    in->len = (uint32_t)i;
    return st;
}

/* rbp = rsp: 48 89 e5 or 48 8b ec */
static int mov_rbp_rsp(const uint8_t *p, size_t n)
{
    return n >= 3 && p[0] == 0x48 && ((p[1] == 0x89 && p[2] == 0xe5) ||
                                      (p[1] == 0x8b && p[2] == 0xec));
}

/* C2's frame without a push: sub rsp, N; mov [rsp+N-8], rbp; mov rbp, rsp; add rbp, N-8 */
static int sub_frame(const uint8_t *p, size_t n, uint32_t off, struct jhr_frame *f)
{
    size_t i = 0;
    int64_t size;
    if (n >= 7 && p[0] == 0x48 && p[1] == 0x81 && p[2] == 0xec)
        size = le(p + 3, 4), i = 7;
    else if (n >= 4 && p[0] == 0x48 && p[1] == 0x83 && p[2] == 0xec)
        size = le(p + 3, 1), i = 4;
    else
        return 0;
    if (size < 8 || size % 8)
        return 0;
    uint32_t sub_end = (uint32_t)i;
    int64_t d = size - 8, got;
    if (n < i + 4 || p[i] != 0x48 || p[i + 1] != 0x89)
        return 0;
    uint8_t m = p[i + 2];
    if (p[i + 3] != 0x24 || (m & 0x3f) != 0x2c)         /* reg rbp, SIB base rsp no index */
        return 0;
    i += 4;
    if (m >> 6 == 0)
        got = 0;
    else if (m >> 6 == 1 && n >= i + 1)
        got = le(p + i, 1), i += 1;
    else if (m >> 6 == 2 && n >= i + 4)
        got = le(p + i, 4), i += 4;
    else
        return 0;
    if (got != d)
        return 0;
    uint32_t save_end = (uint32_t)i;
    if (!mov_rbp_rsp(p + i, n - i))
        return 0;
    i += 3;
    if (d) {
        if (n >= i + 4 && p[i] == 0x48 && p[i + 1] == 0x83 && p[i + 2] == 0xc5)
            got = le(p + i + 3, 1), i += 4;
        else if (n >= i + 7 && p[i] == 0x48 && p[i + 1] == 0x81 && p[i + 2] == 0xc5)
            got = le(p + i + 3, 4), i += 7;
        else
            return 0;
        if (got != d)
            return 0;
    }
    f->kind = JHR_FRAME_SUB;
    f->sub_end = off + sub_end, f->save_end = off + save_end, f->set_end = off + (uint32_t)i;
    f->frame = (uint32_t)size;
    return 1;
}

/* A prologue at p (n bytes readable from there)? */
static int prologue_at(const uint8_t *p, size_t n, uint32_t off, struct jhr_frame *f)
{
    /* (most instructions start otherwise: said at once, issue 30) */
    if (!n || (p[0] != 0x55 && p[0] != 0x40 && p[0] != 0xc8 && p[0] != 0x48))
        return 0;
    size_t push = p[0] == 0x55 ? 1 : n >= 2 && p[0] == 0x40 && p[1] == 0x55 ? 2 : 0;
    if (push && mov_rbp_rsp(p + push, n - push)) {
        f->kind = JHR_FRAME_PUSH;
        f->push_end = off + (uint32_t)push, f->set_end = off + (uint32_t)push + 3;
        return 1;
    }
    if (n >= 4 && p[0] == 0xc8 && p[3] == 0) {          /* enter N, 0 */
        f->kind = JHR_FRAME_PUSH;
        f->push_end = f->set_end = off + 4;
        return 1;
    }
    return sub_frame(p, n, off, f);
}

enum jhr_frame_kind jhr_prologue_frame(const uint8_t *code, size_t size, struct jhr_frame *f)
{
    memset(f, 0, sizeof *f);
    size_t n = size < JHR_PROLOGUE_WINDOW ? size : JHR_PROLOGUE_WINDOW;
    uint64_t target[MAX_TARGETS];
    unsigned nt = 0;
    uint8_t boundary[(JHR_PROLOGUE_WINDOW + 7) / 8] = { 0 };
    size_t off = 0;
    while (off < n) {
        if (prologue_at(code + off, size - off, (uint32_t)off, f)) {
            /* every branch lands on an instruction decoded before the prologue, on its
             * first byte, or past it: V8's out-of-line paths, which build a frame of their
             * own before they call (described as in the frame: wrong only while the pc is
             * in their first instructions, as in an epilogue's tail) */
            for (unsigned k = 0; k < nt; k++)
                if ((target[k] > off && target[k] < f->set_end) ||
                    (target[k] < off && !(boundary[target[k] / 8] & 1u << target[k] % 8)))
                    goto none;
            return f->kind;
        }
        struct insn in;
        enum step st = decode(code + off, n - off, &in);
        if (st == STEP_BAD)
            goto none;
        boundary[off / 8] |= (uint8_t)(1u << off % 8);
        off += in.len;
        if (in.branch) {
            int64_t t = (int64_t)off + in.rel;
            if (t >= 0 && (uint64_t)t < size) {
                if (nt == MAX_TARGETS)
                    goto none;
                target[nt++] = (uint64_t)t;
            }
        }
        if (st == STEP_END) {
            /* only a branch reaches what follows: go on at the nearest target ahead */
            uint64_t next = UINT64_MAX;
            for (unsigned k = 0; k < nt; k++)
                if (target[k] >= off && target[k] < next)
                    next = target[k];
            if (next >= n)
                goto none;
            off = (size_t)next;
        }
    }
none:
    memset(f, 0, sizeof *f);
    return JHR_FRAME_NONE;
}

static size_t advance(uint8_t *o, uint32_t delta)
{
    if (delta < 0x40) {
        o[0] = (uint8_t)(0x40 | delta);                 /* DW_CFA_advance_loc */
        return 1;
    }
    if (delta < 0x100) {
        o[0] = 0x02, o[1] = (uint8_t)delta;             /* DW_CFA_advance_loc1 */
        return 2;
    }
    o[0] = 0x03, o[1] = (uint8_t)delta, o[2] = (uint8_t)(delta >> 8);
    return 3;                                           /* DW_CFA_advance_loc2 */
}

size_t jhr_prologue_cfi(const struct jhr_frame *f, const struct jh__arch *arch,
                        uint8_t out[JHR_PROLOGUE_CFI_MAX])
{
    size_t n = 0;
    switch (f->kind) {
    case JHR_FRAME_NONE:
        out[n++] = 0x07, out[n++] = arch->ra;           /* DW_CFA_undefined ra */
        return n;
    case JHR_FRAME_PUSH:
        return 0;
    case JHR_FRAME_SUB:
        break;
    }
    n += advance(out + n, f->sub_end);
    out[n++] = 0x0e;                                    /* DW_CFA_def_cfa_offset N + 8 */
    for (uint64_t v = (uint64_t)f->frame + 8;;) {
        uint8_t b = v & 0x7f;
        v >>= 7;
        out[n++] = (uint8_t)(b | (v ? 0x80 : 0));
        if (!v)
            break;
    }
    n += advance(out + n, f->save_end - f->sub_end);
    out[n++] = (uint8_t)(0x80 | arch->fp), out[n++] = 2;  /* DW_CFA_offset rbp, CFA - 16 */
    n += advance(out + n, f->set_end - f->save_end);
    out[n++] = 0x0c, out[n++] = arch->fp, out[n++] = 16;  /* DW_CFA_def_cfa rbp, 16 */
    return n;
}

enum jhr_frame_kind jhr_prologue_describe(struct jh_code *c, uint8_t cfi[JHR_PROLOGUE_CFI_MAX])
{
    const struct jh__arch *host = JH__ARCH_HOST;
    if (host != &jh__arch_x86_64)
        return JHR_FRAME_NONE;
    struct jhr_frame f;
    if (jhr_prologue_frame(c->start, c->size, &f) == JHR_FRAME_PUSH) {
        c->unwind = JH_UNWIND_FRAME_POINTER;
        c->fp_push_end = f.push_end, c->fp_set_end = f.set_end;
    } else {
        c->unwind = JH_UNWIND_CFI;
        c->cfi = cfi, c->cfi_len = jhr_prologue_cfi(&f, host, cfi);
    }
    return f.kind;
}
