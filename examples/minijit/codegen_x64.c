/*
 * codegen_x64.c — the few x86-64 instructions minijit needs, hand-encoded.
 *
 * The model is a stack machine on the real stack: an expression leaves its value in rax,
 * binary operators push the left value and pop it into rcx. Locals live below rbp. Check
 * the encodings with:
 *
 *     objdump -D -b binary -mi386:x86-64 fn.bin
 *
 * Every function has the same frame, which is what its jitherald description promises:
 *
 *     0: 55                    push rbp            fp_push_end = 1
 *     1: 48 89 e5              mov  rbp,rsp        fp_set_end  = 4
 *     4: 48 81 ec XX XX XX XX  sub  rsp,FRAME      (multiple of 16: calls stay aligned)
 *        ...                   rbp valid throughout
 *        c9                    leave               the only exit
 *        c3                    ret
 *
 * With mj_set_no_frame_pointer(1) (--no-frame-pointer) rbp is still the locals' base but no
 * frame record: it points 8 bytes below the saved rbp, so a frame-pointer walker (perf -g,
 * libdw's and libunwind's fallbacks) cannot follow it and only the CFI this frame is
 * described with (JH_UNWIND_CFI, minijit.c) unwinds it:
 *     0: 55                    push rbp            CFA = rsp+16, rbp at cfa-16
 *     1: 48 8d 6c 24 f8        lea  rbp,[rsp-8]    CFA = rbp+24
 *     6: 48 81 ec XX XX XX XX  sub  rsp,FRAME+16   (the locals sit 8 bytes lower)
 *        ...
 *        48 8d 65 08           lea  rsp,[rbp+8]
 *        5d                    pop  rbp
 *        c3                    ret                 CFA = rsp+8, rbp restored
 */
#include "mj_internal.h"

#include <stdlib.h>
#include <string.h>

const uint8_t mj__argreg[MJ_MAX_PARAMS] = { MJ_RDI, MJ_RSI, MJ_RDX, MJ_RCX, MJ_R8, MJ_R9 };

static void reserve(struct mj_asm *a, size_t n)
{
    if (a->oom)
        return;
    if (a->len + n <= a->cap)
        return;
    size_t cap = a->cap ? a->cap : 256;
    while (cap < a->len + n)
        cap *= 2;
    uint8_t *p = cap <= ((size_t)1 << 30) ? realloc(a->p, cap) : NULL;
    if (!p) {
        a->oom = true;
        return;
    }
    a->p = p;
    a->cap = cap;
}

static void emit(struct mj_asm *a, const void *bytes, size_t n)
{
    reserve(a, n);
    if (a->oom)
        return;
    memcpy(a->p + a->len, bytes, n);
    a->len += n;
}

#define EMIT(a, ...) do { const uint8_t b_[] = { __VA_ARGS__ }; emit(a, b_, sizeof b_); } while (0)

static void emit_u32(struct mj_asm *a, uint32_t v)
{
    uint8_t b[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };
    emit(a, b, 4);
}

static void emit_u64(struct mj_asm *a, uint64_t v)
{
    emit_u32(a, (uint32_t)v);
    emit_u32(a, (uint32_t)(v >> 32));
}

static void put_u32(struct mj_asm *a, size_t at, uint32_t v)
{
    if (a->oom || at + 4 > a->len)
        return;
    a->p[at] = (uint8_t)v;
    a->p[at + 1] = (uint8_t)(v >> 8);
    a->p[at + 2] = (uint8_t)(v >> 16);
    a->p[at + 3] = (uint8_t)(v >> 24);
}

void mj__asm_free(struct mj_asm *a)
{
    free(a->p);
    *a = (struct mj_asm){ 0 };
}

size_t mj__asm_pos(const struct mj_asm *a) { return a->len; }

static int no_fp;               /* mj_set_no_frame_pointer */
static int no_unwind;           /* mj_set_no_unwind_info */

void mj_set_no_frame_pointer(int on) { no_fp = on != 0; }
int mj__x_no_frame_pointer(void) { return no_fp; }
void mj_set_no_unwind_info(int on) { no_unwind = on != 0; }
int mj__x_no_unwind_info(void) { return no_unwind; }

/* The frame above, without a frame record, in DWARF call-frame instructions (what
 * JH_UNWIND_CFI takes: after the CIE's CFA = rsp+8, return address at cfa-8). */
size_t mj__x_frame_cfi(uint8_t out[MJ__X_FRAME_CFI], size_t len)
{
    uint32_t to_ret = (uint32_t)len - 1 - 6;       /* from after the lea to the ret */
    const uint8_t cfi[MJ__X_FRAME_CFI] = {
        0x41, 0x0e, 0x10, 0x86, 0x02,   /* advance 1; def_cfa_offset 16; rbp at cfa-16 */
        0x45, 0x0c, 0x06, 0x18,         /* advance 5; def_cfa rbp, 24 */
        0x04, (uint8_t)to_ret, (uint8_t)(to_ret >> 8), (uint8_t)(to_ret >> 16),
        (uint8_t)(to_ret >> 24),        /* advance_loc4 to the ret */
        0x0c, 0x07, 0x08, 0xc6,         /* def_cfa rsp, 8; restore rbp */
    };
    memcpy(out, cfi, sizeof cfi);
    return sizeof cfi;
}

size_t mj__x_prologue(struct mj_asm *a)
{
    EMIT(a, 0x55);                              /* push rbp */
    if (no_fp)
        EMIT(a, 0x48, 0x8d, 0x6c, 0x24, 0xf8);  /* lea rbp,[rsp-8] */
    else
        EMIT(a, 0x48, 0x89, 0xe5);              /* mov rbp,rsp */
    EMIT(a, 0x48, 0x81, 0xec);                  /* sub rsp,imm32 */
    size_t at = a->len;
    emit_u32(a, 0);
    return at;
}

void mj__x_patch_frame(struct mj_asm *a, size_t at, uint32_t bytes)
{
    put_u32(a, at, bytes + (no_fp ? 16 : 0));
}

void mj__x_epilogue(struct mj_asm *a)
{
    if (no_fp)
        EMIT(a, 0x48, 0x8d, 0x65, 0x08, 0x5d, 0xc3);   /* lea rsp,[rbp+8]; pop rbp; ret */
    else
        EMIT(a, 0xc9, 0xc3);                    /* leave; ret */
}

void mj__x_mov_rax_imm(struct mj_asm *a, int64_t v)
{
    if (v == 0) {
        EMIT(a, 0x31, 0xc0);                    /* xor eax,eax */
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
        EMIT(a, 0x48, 0xc7, 0xc0);              /* mov rax,simm32 */
        emit_u32(a, (uint32_t)v);
    } else {
        EMIT(a, 0x48, 0xb8);                    /* movabs rax,imm64 */
        emit_u64(a, (uint64_t)v);
    }
}

static uint32_t slot_disp(uint32_t slot) { return (uint32_t)(-(int64_t)8 * (slot + 1)); }

void mj__x_load_slot(struct mj_asm *a, uint32_t slot)
{
    EMIT(a, 0x48, 0x8b, 0x85);                  /* mov rax,[rbp+disp32] */
    emit_u32(a, slot_disp(slot));
}

void mj__x_store_slot_reg(struct mj_asm *a, uint32_t slot, int reg)
{
    uint8_t b[3] = { (uint8_t)(0x48 | (reg >= 8 ? 4 : 0)), 0x89,
                     (uint8_t)(0x85 | ((reg & 7) << 3)) };  /* mov [rbp+disp32],reg */
    emit(a, b, 3);
    emit_u32(a, slot_disp(slot));
}

void mj__x_store_slot(struct mj_asm *a, uint32_t slot) { mj__x_store_slot_reg(a, slot, MJ_RAX); }

void mj__x_push_rax(struct mj_asm *a) { EMIT(a, 0x50); }

void mj__x_pop(struct mj_asm *a, int reg)
{
    if (reg >= 8)
        EMIT(a, 0x41);
    uint8_t b = (uint8_t)(0x58 | (reg & 7));
    emit(a, &b, 1);
}

void mj__x_sub_rsp8(struct mj_asm *a) { EMIT(a, 0x48, 0x83, 0xec, 0x08); }
void mj__x_add_rsp8(struct mj_asm *a) { EMIT(a, 0x48, 0x83, 0xc4, 0x08); }

static void setcc(struct mj_asm *a, uint8_t cc)
{
    uint8_t b[3] = { 0x0f, cc, 0xc0 };          /* setcc al */
    emit(a, b, 3);
    EMIT(a, 0x0f, 0xb6, 0xc0);                  /* movzx eax,al (zero-extends to rax) */
}

/*
 * Division and remainder are total: x / 0 == 0 and x % 0 == 0 (a JIT for a real language
 * would raise an error); INT64_MIN / -1 wraps to INT64_MIN and INT64_MIN % -1 == 0 instead of
 * trapping in idiv. Entry: rax = left, rcx = right.
 *
 *        test rcx,rcx  ; jz zero
 *        cmp rcx,-1    ; je minus1
 *        cqo           ; idiv rcx      [% : mov rax,rdx]
 *        jmp done
 * minus1: neg rax       [% : xor eax,eax]
 *        jmp done
 * zero:  xor eax,eax
 * done:
 */
static void divmod(struct mj_asm *a, bool rem)
{
    EMIT(a, 0x48, 0x85, 0xc9);                  /* test rcx,rcx */
    EMIT(a, 0x74, rem ? 0x14 : 0x12);           /* jz zero */
    EMIT(a, 0x48, 0x83, 0xf9, 0xff);            /* cmp rcx,-1 */
    EMIT(a, 0x74, rem ? 0x0a : 0x07);           /* je minus1 */
    EMIT(a, 0x48, 0x99);                        /* cqo */
    EMIT(a, 0x48, 0xf7, 0xf9);                  /* idiv rcx */
    if (rem)
        EMIT(a, 0x48, 0x89, 0xd0);              /* mov rax,rdx */
    EMIT(a, 0xeb, rem ? 0x06 : 0x07);           /* jmp done */
    if (rem)
        EMIT(a, 0x31, 0xc0);                    /* minus1: xor eax,eax */
    else
        EMIT(a, 0x48, 0xf7, 0xd8);              /* minus1: neg rax */
    EMIT(a, 0xeb, 0x02);                        /* jmp done */
    EMIT(a, 0x31, 0xc0);                        /* zero: xor eax,eax */
}

void mj__x_binop(struct mj_asm *a, enum mj_tok op)
{
    /* Here rcx = left (popped) and rax = right: swap so rax = left, rcx = right. */
    EMIT(a, 0x48, 0x91);                        /* xchg rax,rcx */
    switch (op) {
    case T_PLUS:  EMIT(a, 0x48, 0x01, 0xc8); break;         /* add rax,rcx */
    case T_MINUS: EMIT(a, 0x48, 0x29, 0xc8); break;         /* sub rax,rcx */
    case T_STAR:  EMIT(a, 0x48, 0x0f, 0xaf, 0xc1); break;   /* imul rax,rcx */
    case T_SLASH: divmod(a, false); break;
    case T_PERCENT: divmod(a, true); break;
    default:
        EMIT(a, 0x48, 0x39, 0xc8);                          /* cmp rax,rcx */
        setcc(a, op == T_EQ ? 0x94 : op == T_NE ? 0x95 : op == T_LT ? 0x9c :
                 op == T_LE ? 0x9e : op == T_GT ? 0x9f : 0x9d);
        break;
    }
}

void mj__x_neg(struct mj_asm *a) { EMIT(a, 0x48, 0xf7, 0xd8); }   /* neg rax */

void mj__x_not(struct mj_asm *a)
{
    EMIT(a, 0x48, 0x85, 0xc0);                  /* test rax,rax */
    setcc(a, 0x94);                             /* sete */
}

void mj__x_bool(struct mj_asm *a)
{
    EMIT(a, 0x48, 0x85, 0xc0);
    setcc(a, 0x95);                             /* setne */
}

size_t mj__x_jz_fwd(struct mj_asm *a)
{
    EMIT(a, 0x48, 0x85, 0xc0, 0x0f, 0x84);      /* test rax,rax; jz rel32 */
    size_t at = a->len;
    emit_u32(a, 0);
    return at;
}

size_t mj__x_jnz_fwd(struct mj_asm *a)
{
    EMIT(a, 0x48, 0x85, 0xc0, 0x0f, 0x85);      /* test rax,rax; jnz rel32 */
    size_t at = a->len;
    emit_u32(a, 0);
    return at;
}

size_t mj__x_jmp_fwd(struct mj_asm *a)
{
    EMIT(a, 0xe9);                              /* jmp rel32 */
    size_t at = a->len;
    emit_u32(a, 0);
    return at;
}

void mj__x_patch_to(struct mj_asm *a, size_t site, size_t target)
{
    put_u32(a, site, (uint32_t)((int64_t)target - (int64_t)(site + 4)));
}

void mj__x_patch_to_here(struct mj_asm *a, size_t site) { mj__x_patch_to(a, site, a->len); }

void mj__x_jmp_back(struct mj_asm *a, size_t target)
{
    size_t site = mj__x_jmp_fwd(a);
    mj__x_patch_to(a, site, target);
}

void mj__x_call_indirect(struct mj_asm *a, void *const *slot)
{
    EMIT(a, 0x48, 0xb8);                        /* movabs rax,slot */
    emit_u64(a, (uint64_t)(uintptr_t)slot);
    EMIT(a, 0xff, 0x10);                        /* call [rax] */
}

void mj__x_call_abs(struct mj_asm *a, const void *fn)
{
    EMIT(a, 0x48, 0xb8);                        /* movabs rax,fn */
    emit_u64(a, (uint64_t)(uintptr_t)fn);
    EMIT(a, 0xff, 0xd0);                        /* call rax */
}
