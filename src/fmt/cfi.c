/*
 * cfi.c — .eh_frame / .eh_frame_hdr encoder shared by the jitdump, gdb, unwind and elfmap
 * channels. See cfi.h for the layout and for how to check the bytes with readelf and
 * llvm-dwarfdump.
 *
 * Why sizes are computed before writing: callers embed the run at a fixed address (perf's
 * synthetic ELF, an in-memory image) and need the .eh_frame_hdr address, which follows the
 * run, before they can encode anything; and a size mismatch between the dry run and the
 * written bytes is the cheapest way to catch an encoder bug before a consumer does.
 */
#include "fmt/cfi.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/vec.h"
#include "fmt/cfa.h"
#include "fmt/cfi_out.h"

static const struct jh__arch *arch_or_host(const struct jh__arch *a)
{
    return a ? a : JH__ARCH_HOST;
}

/* What both flavours of CIE say after their augmentation string: the factors, the return
 * address column (a ubyte in version 1), [augmentation data: .eh_frame only], then the
 * rules at a function's first instruction. Inline: put_cie's sink on its stack then never
 * escapes, and its cursor stays in a register where each byte stored reloaded it. */
static inline __attribute__((always_inline)) void cie_factors(struct out *w,
                                                              const struct jh__arch *a)
{
    ouleb(w, a->code_align);
    osleb(w, a->data_align);
    o8(w, a->ra);
}

static inline __attribute__((always_inline)) void cie_rules(struct out *w,
                                                            const struct jh__arch *a)
{
    o8(w, JH__CFA_def_cfa);
    ouleb(w, a->sp);
    ouleb(w, a->entry_cfa);
    if (a->entry_ra)
        osaved(w, a, a->ra, a->entry_ra);
}

/* ---- the CIE ---------------------------------------------------------------------------
 * Plain: "zR", the FDE pointer encoding. With a personality (opts.personality and a
 * function that has one): "zPR" or "zPLR", the personality as an absolute 8-byte pointer,
 * the LSDA's encoding absolute too (each FDE's augmentation data then holds its LSDA).
 * Functions sharing a personality (and having an LSDA or not) share a CIE. */
struct cie_key {
    uint64_t personality;       /* 0: the plain CIE */
    bool lsda;
    bool b_key;                 /* arm64 PAC with the B key: augmentation 'B' */
};

static struct cie_key cie_key_of(const struct jh__cfi_opts *o, const struct jh__func *f)
{
    bool b = f->ra_key == JH_PAC_KEY_B && arch_or_host(o->arch)->pac;
    if (!o->personality || !f->personality)
        return (struct cie_key){ 0, false, b };
    return (struct cie_key){ f->personality, f->lsda != 0, b };
}

static bool cie_same(struct cie_key a, struct cie_key b)
{
    return a.personality == b.personality && a.lsda == b.lsda && a.b_key == b.b_key;
}

/* Written into a local array in raw mode, then copied out in one piece: byte by byte
 * through the sink's checks it was ~420 instructions a CIE, and each LuaJIT trace takes
 * three (gdb's image, jitdump's unwinding record, the unwind channel's run; issue 30).
 * CIE_BOUND: at least the bytes a CIE takes (every uleb/sleb 10 bytes). */
#define CIE_BOUND 128
static void put_cie_raw(struct out *w, const struct jh__cfi_opts *o, struct cie_key k);

static void put_cie(struct out *w, const struct jh__cfi_opts *o, struct cie_key k)
{
    uint8_t tmp[CIE_BOUND];
    struct out t = { NULL, 0, tmp };
    put_cie_raw(&t, o, k);
    if (w->raw)
        memcpy(w->raw + w->n, tmp, t.n);
    else if (w->b)
        jh__buf_put(w->b, tmp, t.n);
    w->n += t.n;
}

static void put_cie_raw(struct out *w, const struct jh__cfi_opts *o, struct cie_key k)
{
    const struct jh__arch *a = arch_or_host(o->arch);
    size_t at = 0, n0 = w->n;
    for (int i = 0; i < 8; i++)
        o8(w, 0);                               /* length (patched below), CIE id 0 */
    o8(w, 1);                                   /* version */
    const char *aug = !k.personality ? (k.b_key ? "zRB" : "zR")
                      : k.lsda ? (k.b_key ? "zPLRB" : "zPLR") : (k.b_key ? "zPRB" : "zPR");
    for (const char *c = aug; ; c++) {
        o8(w, (uint8_t)*c);
        if (!*c)
            break;
    }
    cie_factors(w, a);
    o8(w, !k.personality ? 1 : k.lsda ? 11 : 10);   /* augmentation data length */
    if (k.personality) {
        o8(w, JH__DW_EH_PE_absptr);
        for (int i = 0; i < 8; i++)
            o8(w, (uint8_t)(k.personality >> (8 * i)));
        if (k.lsda)
            o8(w, JH__DW_EH_PE_absptr);
    }
    o8(w, o->ptr == JH__CFI_ABS ? JH__DW_EH_PE_absptr : (JH__DW_EH_PE_pcrel | JH__DW_EH_PE_sdata4));
    cie_rules(w, a);
    while ((w->n - n0) % 8)
        o8(w, JH__CFA_nop);
    olength(w, n0, at);
}

static size_t cie_size(const struct jh__cfi_opts *o, struct cie_key k)
{
    struct out w = { NULL, 0, NULL };
    put_cie(&w, o, k);
    return w.n;
}

/* ---- FDE instructions ------------------------------------------------------------------ */
static bool frame_pointer_ok(const struct jh__func *f)
{
    if (f->fp_push_end == 0 || f->fp_push_end > f->fp_set_end || f->fp_set_end > f->size ||
        (f->nepilogues && !f->epilogues))
        return false;
    uint64_t from = f->fp_set_end;
    for (uint32_t i = 0; i < f->nepilogues; i++) {
        const struct jh_epilogue *e = &f->epilogues[i];
        if (e->start < from || e->start >= e->end || e->end > f->size)
            return false;
        from = e->end;
    }
    return true;
}

static bool frameless_ok(const struct jh__arch *a, const struct jh__func *f)
{
    if ((f->ncfa_steps && !f->cfa_steps) || (f->nsaved_regs && !f->saved_regs))
        return false;
    for (uint32_t i = 0; i < f->ncfa_steps; i++)
        if (f->cfa_steps[i].offset >= f->size ||
            (i && f->cfa_steps[i].offset <= f->cfa_steps[i - 1].offset))
            return false;
    for (uint32_t i = 0; i < f->nsaved_regs; i++)
        if (f->saved_regs[i].cfa_offset >= 0 || f->saved_regs[i].cfa_offset % a->data_align)
            return false;
    return true;
}

static int func_ok_checked(const struct jh__arch *a, const struct jh__func *f, bool cfi_checked)
{
    if (f->size == 0 || f->start + (f->size - 1) < f->start)
        return 0;
    if (jh__cfi_memo_for(a, f))
        return 1;
    switch (f->unwind) {
    case JH_UNWIND_NONE:
        return 1;
    case JH_UNWIND_FRAME_POINTER:
        return frame_pointer_ok(f);
    case JH_UNWIND_CFI:
        return f->cfi_len > 0 && (cfi_checked || jh__cfi_validate(f->cfi, f->cfi_len, f->size) == 0);
    case JH_UNWIND_FRAMELESS:
        return frameless_ok(a, f);
    case JH_UNWIND_EH_FRAME:            /* lowered by the core: never in a jh__func */
        break;
    }
    return 0;
}

int jh__cfi_func_ok(const struct jh__arch *a, const struct jh__func *f)
{
    return func_ok_checked(a, f, false);
}

/*
 * JH_UNWIND_FRAME_POINTER: at fp_push_end CFA = sp + frame_cfa, the caller's fp at
 * cfa - frame_fp (and ra at cfa - frame_ra, where the CIE does not already say so); at
 * fp_set_end CFA = fp + frame_cfa; in each epilogue tail the CIE's rules again (fp, and ra
 * where the frame record moved it, the caller's); after a tail (code after a `ret` is inside
 * the frame again) the body's rules once more, written out rather than with
 * remember_state/restore_state: whether restore_state brings the CFA back is read
 * differently by consumers (llvm-dwarfdump 14 does not). x86-64: rsp+16, rbp at cfa-16;
 * rbp+16; tails rsp+8. arm64: sp+16, x29 at cfa-16, x30 at cfa-8; x29+16; tails sp+0.
 */
static void body_rules(struct out *w, const struct jh__arch *a)
{
    osaved(w, a, a->fp, a->frame_fp);
    if (a->frame_ra != a->entry_ra)
        osaved(w, a, a->ra, a->frame_ra);
}

static inline __attribute__((always_inline)) void put_frame_pointer(
    struct out *w, const struct jh__arch *a, const struct jh__func *f)
{
    oadvance(w, f->fp_push_end);
    o8(w, JH__CFA_def_cfa_offset);
    ouleb(w, a->frame_cfa);
    body_rules(w, a);
    oadvance(w, f->fp_set_end - f->fp_push_end);
    o8(w, JH__CFA_def_cfa_register);
    ouleb(w, a->fp);
    uint64_t loc = f->fp_set_end;
    for (uint32_t i = 0; i < f->nepilogues; i++) {
        const struct jh_epilogue *e = &f->epilogues[i];
        oadvance(w, e->start - loc);
        o8(w, JH__CFA_def_cfa);
        ouleb(w, a->sp);
        ouleb(w, a->entry_cfa);
        orestore(w, a->fp);
        if (a->frame_ra != a->entry_ra)
            orestore(w, a->ra);
        loc = e->start;
        if (e->end < f->size) {
            oadvance(w, e->end - loc);
            o8(w, JH__CFA_def_cfa);
            ouleb(w, a->fp);
            ouleb(w, a->frame_cfa);
            body_rules(w, a);
            loc = e->end;
        }
    }
}

/* JH_UNWIND_FRAMELESS: the CFA offset (when it is not the CIE's), the saved registers, then
 * each step. */
static inline __attribute__((always_inline)) void put_frameless(
    struct out *w, const struct jh__arch *a, const struct jh__func *f)
{
    if (f->cfa_offset != a->entry_cfa) {
        o8(w, JH__CFA_def_cfa_offset);
        ouleb(w, f->cfa_offset);
    }
    for (uint32_t i = 0; i < f->nsaved_regs; i++)
        osaved(w, a, f->saved_regs[i].reg, (uint64_t)(-(int64_t)f->saved_regs[i].cfa_offset));
    uint64_t loc = 0;
    for (uint32_t i = 0; i < f->ncfa_steps; i++) {
        oadvance(w, f->cfa_steps[i].offset - loc);
        loc = f->cfa_steps[i].offset;
        o8(w, JH__CFA_def_cfa_offset);
        ouleb(w, f->cfa_steps[i].cfa_offset);
    }
}

static inline __attribute__((always_inline)) void put_kind(
    struct out *w, const struct jh__arch *a, const struct jh__func *f)
{
    switch (f->unwind) {
    case JH_UNWIND_CFI:
        oput(w, f->cfi, f->cfi_len);
        break;
    case JH_UNWIND_FRAME_POINTER:
        put_frame_pointer(w, a, f);
        break;
    case JH_UNWIND_FRAMELESS:
        put_frameless(w, a, f);
        break;
    case JH_UNWIND_NONE:
    case JH_UNWIND_EH_FRAME:
        break;
    }
}

/* The kind's instructions, with arm64's return-address signing state spliced in where
 * the function says (cfi_pac.c). */
void jh__cfi_put_insns(struct out *w, const struct jh__arch *a, const struct jh__func *f)
{
    if (jh__cfi_memo_for(a, f)) {
        oput(w, f->insns->b, f->insns->len);
        return;
    }
    if (!f->nra_signed || !a->pac || f->unwind == JH_UNWIND_CFI) {
        put_kind(w, a, f);
        return;
    }
    struct jh__buf raw = { 0 }, both = { 0 };
    struct out t = { &raw, 0, NULL };
    put_kind(&t, a, f);
    jh__cfi_pac_splice(&both, raw.p, raw.len, f);
    for (size_t i = 0; i < both.len; i++)
        o8(w, both.p[i]);
    if ((raw.err || both.err) && w->b)
        w->b->err = -ENOMEM;
    jh__buf_free(&raw);
    jh__buf_free(&both);
}

int jh__cfi_fde_insns(struct jh__buf *b, const struct jh__arch *arch, const struct jh__func *f)
{
    const struct jh__arch *a = arch_or_host(arch);
    if (!b || !f || !jh__cfi_func_ok(a, f))
        return -EINVAL;
    struct out w = { b, 0, NULL };
    size_t at = b->len;
    jh__cfi_put_insns(&w, a, f);
    if (b->err) {
        b->len = at;
        return b->err;
    }
    return 0;
}

/* length, CIE pointer, pc_begin, pc_range, augmentation data (the LSDA, if its CIE says
 * so), instructions, padding */
static inline __attribute__((always_inline)) void put_fde_to(struct out *w,
                                                             const struct jh__cfi_opts *o,
                                                             const struct jh__func *f,
                                                             uint32_t cie_ptr, uint64_t pc_field)
{
    size_t at = w->b ? w->b->len : 0, n0 = w->n;
    struct cie_key k = cie_key_of(o, f);
    o32(w, 0);
    ofde_head(w, o, f, cie_ptr, pc_field);
    if (k.lsda) {
        o8(w, 8);
        o64(w, f->lsda);
    } else {
        o8(w, 0);
    }
    jh__cfi_put_insns(w, arch_or_host(o->arch), f);
    while ((w->n - n0) % 8)
        o8(w, JH__CFA_nop);
    olength(w, n0, at);
}

/* In raw mode (room reserved, no arm64 signing state spliced in) through a sink of its own
 * on the stack: the encoder's sink is reached through a pointer that escapes, so each byte
 * stored (which may alias it) reloaded its cursor; put_fde_to is inline, and this one's
 * cursor stays in registers where the compiler sees all its uses. The same bytes either
 * way. (With put_fde_insns forced inline too it was slower: its arm64 splice's buffers.) */
static void put_fde(struct out *w, const struct jh__cfi_opts *o, const struct jh__func *f,
                    uint32_t cie_ptr, uint64_t pc_field)
{
    const struct jh__arch *a = arch_or_host(o->arch);
    if (w->raw && (jh__cfi_memo_for(a, f) || !f->nra_signed || !a->pac || f->unwind == JH_UNWIND_CFI)) {
        struct out t = { NULL, 0, w->raw + w->n };
        put_fde_to(&t, o, f, cie_ptr, pc_field);
        w->n += t.n;
        return;
    }
    put_fde_to(w, o, f, cie_ptr, pc_field);
}

/* At least the bytes put_fde writes (every uleb/sleb 10 bytes, every advance 5), or 0
 * when put_fde splices arm64's signing state in (written checked). */
size_t jh__cfi_fde_bound(const struct jh__arch *a, const struct jh__func *f)
{
    if (jh__cfi_memo_for(a, f))
        return 4 + 4 + 16 + 1 + 8 + f->insns->len + 7;
    if (f->nra_signed && a->pac && f->unwind != JH_UNWIND_CFI)
        return 0;
    size_t insns = f->unwind == JH_UNWIND_CFI ? f->cfi_len
        : f->unwind == JH_UNWIND_FRAME_POINTER ? 128 + 128 * (size_t)f->nepilogues
        : f->unwind == JH_UNWIND_FRAMELESS ? 11 + 21 * (size_t)f->nsaved_regs + 16 * (size_t)f->ncfa_steps
        : 0;
    return 4 + 4 + 16 + 1 + 8 + insns + 7;
}

static size_t fde_size(const struct jh__cfi_opts *o, const struct jh__func *f)
{
    struct out w = { NULL, 0, NULL };
    put_fde(&w, o, f, 0, 0);
    return w.n;
}

static int opts_ok(const struct jh__cfi_opts *o)
{
    return o->ptr == JH__CFI_PCREL || o->ptr == JH__CFI_ABS;
}

/* The functions come as an array of structs or of pointers: the i-th either way. */
struct fset {
    const struct jh__func *arr;
    const struct jh__func *const *ptrs;
};
static const struct jh__func *fat(struct fset f, size_t i) { return f.ptrs ? f.ptrs[i] : &f.arr[i]; }

/* The distinct CIEs the functions of a run need, in order of first use (a run with no
 * FDE at all still has the plain CIE: a CIE and the terminator). */
struct cies {
    struct cie_key *k;
    size_t n;
    struct cie_key one;
};

static int cies_collect(struct cies *c, const struct jh__cfi_opts *o, struct fset f, size_t n)
{
    c->k = &c->one;
    c->n = 0;
    for (size_t i = 0; i < n; i++) {
        const struct jh__func *fn = fat(f, i);
        if (fn->unwind == JH_UNWIND_NONE)
            continue;
        struct cie_key k = cie_key_of(o, fn);
        size_t j = 0;
        while (j < c->n && !cie_same(c->k[j], k))
            j++;
        if (j < c->n)
            continue;
        if (c->n == 1 && c->k == &c->one) {
            struct cie_key *a = malloc(n * sizeof *a);
            if (!a)
                return -ENOMEM;
            a[0] = c->one;
            c->k = a;
        }
        c->k[c->n++] = k;
    }
    if (c->n == 0) {
        c->one = (struct cie_key){ 0, false, false };
        c->n = 1;
    }
    return 0;
}

static void cies_free(struct cies *c)
{
    if (c->k != &c->one)
        free(c->k);
}

static size_t frame_size(const struct jh__cfi_opts *o, struct fset f, size_t n)
{
    if (!o || !opts_ok(o) || (n && !f.arr && !f.ptrs))
        return 0;
    size_t sz = 4;
    for (size_t i = 0; i < n; i++) {
        const struct jh__func *fn = fat(f, i);
        if (!fn || !jh__cfi_func_ok(arch_or_host(o->arch), fn))
            return 0;
        if (fn->unwind != JH_UNWIND_NONE)
            sz += fde_size(o, fn);
    }
    struct cies c;
    if (cies_collect(&c, o, f, n))
        return 0;
    for (size_t i = 0; i < c.n; i++)
        sz += cie_size(o, c.k[i]);
    cies_free(&c);
    return sz;
}

size_t jh__cfi_eh_frame_size(const struct jh__cfi_opts *o, const struct jh__func *f, size_t n)
{
    return frame_size(o, (struct fset){ .arr = f }, n);
}

size_t jh__cfi_eh_frame_size_p(const struct jh__cfi_opts *o, const struct jh__func *const *f,
                               size_t n)
{
    return frame_size(o, (struct fset){ .ptrs = f }, n);
}

static int fits_s32(int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; }

static int cmp_func(const void *a, const void *b)
{
    const struct jh__func *x = *(const struct jh__func *const *)a;
    const struct jh__func *y = *(const struct jh__func *const *)b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* A run of a few functions (jitdump and the unwinder encode one per add) needs no heap. */
#define EH_SMALL 4

/* Encoded without a dry run for the size unless the caller gave one (o->size, then checked
 * against what was written): the dry run cost as much as the encoding (a third of
 * jitdump's time per function, issue 30). test_cfi compares jh__cfi_eh_frame_size with the
 * bytes written. */
static int eh_frame(struct jh__buf *b, const struct jh__cfi_opts *o, struct fset f, size_t n,
                    struct jh__cfi_index *idx)
{
    if (!b || !o || !opts_ok(o) || (n && !f.arr && !f.ptrs))
        return -EINVAL;
    for (size_t i = 0; i < n; i++)
        if (!fat(f, i) || !func_ok_checked(arch_or_host(o->arch), fat(f, i), o->cfi_checked))
            return -EINVAL;
    size_t want = o->size;
    if (want && jh__buf_reserve(b, want))
        return -ENOMEM;

    const struct jh__func *small[EH_SMALL], **sorted = small;
    if (n > EH_SMALL) {
        sorted = malloc(n * sizeof *sorted);
        if (!sorted)
            return -ENOMEM;
    }
    size_t nf = 0;
    for (size_t i = 0; i < n; i++)
        if (fat(f, i)->unwind != JH_UNWIND_NONE)
            sorted[nf++] = fat(f, i);
    size_t up = 1;              /* (an image's come sorted: no call per pair to see it) */
    while (up < nf && sorted[up - 1]->start <= sorted[up]->start)
        up++;
    if (up < nf)
        jh__sort(sorted, nf, sizeof *sorted, cmp_func);
    for (size_t i = 1; i < nf; i++)
        if (sorted[i]->start < sorted[i - 1]->start + sorted[i - 1]->size) {
            if (sorted != small)
                free(sorted);
            return -EINVAL;         /* overlapping FDEs break every binary search */
        }
    struct cies c;
    size_t cie_small[EH_SMALL], *cie_at = cie_small;
    if (nf > INT32_MAX || cies_collect(&c, o, f, n)) {
        if (sorted != small)
            free(sorted);
        return nf > INT32_MAX ? -ERANGE : -ENOMEM;
    }
    if (c.n > EH_SMALL && !(cie_at = malloc(c.n * sizeof *cie_at))) {
        cies_free(&c);
        if (sorted != small)
            free(sorted);
        return -ENOMEM;
    }

    size_t base = b->len;
    struct out w = { b, 0, NULL };
    int err = 0;
    const struct jh__arch *arch = arch_or_host(o->arch);
    for (size_t k = 0; k < c.n; k++) {         /* every CIE first: FDEs point back to theirs */
        cie_at[k] = w.n;
        raw_begin(&w, base, CIE_BOUND);
        put_cie(&w, o, c.k[k]);
        raw_end(&w, base);
    }
    const struct jh__func *prev = NULL;        /* the last FDE encoded, in raw mode */
    size_t prev_k = 0, prev_at = 0;
    struct jh__cfi_seen seen = { .n = 0 };      /* the last few before it (cfi_reuse.c) */
    for (size_t i = 0; i < nf && !b->err; i++) {
        const struct jh__func *fn = sorted[i];
        size_t at = w.n, k = 0;
        struct cie_key key = cie_key_of(o, fn);
        while (k + 1 < c.n && !cie_same(c.k[k], key))
            k++;                                /* collected above: always found */
        if (idx) {
            idx[i].pc = fn->start;
            idx[i].size = fn->size;
            idx[i].off = at;
        }
        uint64_t pc_field = 0;
        if (o->ptr != JH__CFI_ABS) {
            int64_t rel = (int64_t)(fn->start - (o->addr + at + 8));
            if (!fits_s32(rel) || fn->size > INT32_MAX) {
                err = -ERANGE;
                break;
            }
            pc_field = (uint32_t)rel;
        }
        raw_begin(&w, base, jh__cfi_fde_bound(arch, fn));
        uint32_t cie_ptr = (uint32_t)(at + 4 - cie_at[k]);
        bool plain = !fn->nra_signed || !arch->pac || fn->unwind == JH_UNWIND_CFI;
        size_t from = SIZE_MAX, len = 0;
        if (w.raw && plain && !key.lsda && prev && k == prev_k && jh__cfi_same_insns(prev, fn))
            from = prev_at, len = at - prev_at;
        else if (w.raw && plain && !key.lsda &&
                 (prev = jh__cfi_seen_find(&seen, prev, k, fn, &from, &len)))
            prev_k = k;
        if (from != SIZE_MAX) {
            jh__cfi_copy_fde(&w, o, fn, from, len, cie_ptr, pc_field);  /* cfi_reuse.c */
        } else {
            put_fde(&w, o, fn, cie_ptr, pc_field);
            prev = w.raw && plain ? fn : NULL;  /* (a spliced one: raw from its memo only) */
            prev_k = k;
            if (prev && !key.lsda)
                jh__cfi_seen_add(&seen, fn, k, at, w.n - at);
        }
        prev_at = at;
        raw_end(&w, base);
    }
    o32(&w, 0);                                 /* terminator */
    if (cie_at != cie_small)
        free(cie_at);
    cies_free(&c);
    if (sorted != small)
        free(sorted);

    if (!err && b->err)
        err = b->err;
    if (!err && want && b->len - base != want)
        err = -EPROTO;                          /* the caller's size and the encoder disagree: a bug */
    if (err) {
        if (!b->err)
            b->len = base;
        return err;
    }
    return (int)nf;
}

int jh__cfi_eh_frame(struct jh__buf *b, const struct jh__cfi_opts *o,
                     const struct jh__func *f, size_t n, struct jh__cfi_index *idx)
{
    return eh_frame(b, o, (struct fset){ .arr = f }, n, idx);
}

int jh__cfi_eh_frame_p(struct jh__buf *b, const struct jh__cfi_opts *o,
                       const struct jh__func *const *f, size_t n, struct jh__cfi_index *idx)
{
    return eh_frame(b, o, (struct fset){ .ptrs = f }, n, idx);
}

/* DWARF 4, 6.4.1: in .debug_frame a CIE is marked by the id 0xffffffff, an FDE's second word
 * is its CIE's offset in the section, and version 1 has no address-size fields. No
 * augmentation: a personality or an LSDA means nothing to a reader of a file. */
void jh__cfi_debug_frame_cie(struct jh__buf *b, const struct jh__arch *arch)
{
    const struct jh__arch *a = arch_or_host(arch);
    struct out w = { b, 0, NULL };
    size_t at = b->len;
    o32(&w, 0);                                 /* length, patched below */
    o32(&w, 0xffffffffu);                       /* CIE id */
    o8(&w, 1);                                  /* version */
    o8(&w, 0);                                  /* augmentation "" */
    cie_factors(&w, a);
    cie_rules(&w, a);
    while (w.n % 8)
        o8(&w, JH__CFA_nop);
    if (!b->err)
        jh__buf_set_u32(b, at, (uint32_t)(w.n - 4));
}

int jh__cfi_debug_frame_fde(struct jh__buf *b, const struct jh__arch *arch, uint64_t cie_off,
                            const struct jh__func *f)
{
    const struct jh__arch *a = arch_or_host(arch);
    if (!b || !f || !jh__cfi_func_ok(a, f) || cie_off > UINT32_MAX)
        return -EINVAL;
    if (f->unwind == JH_UNWIND_NONE)
        return 0;
    struct out w = { b, 0, NULL };
    size_t at = b->len;
    /* raw mode where the record's size can be bounded: elfmap writes one per add, and the
     * checked writes, a capacity test per byte, were most of it (issue 30) */
    raw_begin(&w, at, jh__cfi_fde_bound(a, f));
    o32(&w, 0);
    o32(&w, (uint32_t)cie_off);
    o64(&w, f->start);
    o64(&w, f->size);
    jh__cfi_put_insns(&w, a, f);
    while (w.n % 8)
        o8(&w, JH__CFA_nop);
    olength(&w, 0, at);
    raw_end(&w, at);
    return b->err ? b->err : 1;
}

/* elfmap's growing .eh_frame: see cfi.h. The CIE a function needs (plain, or arm64's B key)
 * is appended the first time one needs it. */
int jh__cfi_eh_frame_grow(struct jh__buf *b, const struct jh__arch *arch, size_t cie_off[2],
                          const struct jh__func *f, size_t *fde_off)
{
    const struct jh__arch *a = arch_or_host(arch);
    if (!b || !f || !jh__cfi_func_ok(a, f))
        return -EINVAL;
    if (f->unwind == JH_UNWIND_NONE)
        return 0;
    struct jh__cfi_opts o = { .arch = a, .ptr = JH__CFI_ABS };
    struct cie_key k = cie_key_of(&o, f);
    size_t base = b->len, old = cie_off[k.b_key];
    struct out w = { b, 0, NULL };
    if (old == SIZE_MAX) {
        cie_off[k.b_key] = b->len;
        raw_begin(&w, base, CIE_BOUND);
        put_cie(&w, &o, k);
        raw_end(&w, base);
    }
    size_t at = b->len;
    if (at - cie_off[k.b_key] + 4 > UINT32_MAX) {
        b->err = b->err ? b->err : -E2BIG;
    } else {
        raw_begin(&w, base, jh__cfi_fde_bound(a, f));     /* (as jh__cfi_debug_frame_fde) */
        put_fde(&w, &o, f, (uint32_t)(at + 4 - cie_off[k.b_key]), 0);
        raw_end(&w, base);
    }
    if (b->err) {
        int err = b->err;
        b->err = 0;
        b->len = base;
        cie_off[k.b_key] = old;
        return err;
    }
    if (fde_off)
        *fde_off = at;
    return 1;
}
