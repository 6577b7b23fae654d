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

#include "fmt/cfa.h"

/* DWARF register numbers. */
enum { X86_RBP = 6, X86_RSP = 7, X86_RA = 16, A64_FP = 29, A64_LR = 30, A64_SP = 31 };

#define CIE_FIXED 13    /* id 4, version 1, "zR\0" 3, caf 1, daf 1, ra 1, auglen 1, R 1 */

static size_t align8(size_t n) { return (n + 7) & ~(size_t)7; }

int jh__cfi_validate(const uint8_t *cfi, size_t len, uint64_t code_size)
{
    if (len && !cfi)
        return -EINVAL;
    const uint8_t *p = cfi, *end = cfi + len;
    struct jh__cfa_insn in;
    uint64_t loc = 0;
    int r;
    while ((r = jh__cfa_next(&p, end, &in)) > 0) {
        if (in.advance > code_size - loc)
            return -EINVAL;
        loc += in.advance;
    }
    /* -ENOTSUP too: set_loc needs the CIE's pointer encoding, which differs per flavour;
     * anything else unknown to us is probably unknown to some consumer. */
    return r == 0 ? 0 : -EINVAL;
}

/* ---- encoding ------------------------------------------------------------------------ */

static void put_advance(struct jh__buf *b, uint32_t d)
{
    if (d == 0)
        return;
    if (d < 0x40) {
        jh__buf_u8(b, (uint8_t)(JH__CFA_advance_loc | d));
    } else if (d <= 0xff) {
        jh__buf_u8(b, JH__CFA_advance_loc1);
        jh__buf_u8(b, (uint8_t)d);
    } else if (d <= 0xffff) {
        jh__buf_u8(b, JH__CFA_advance_loc2);
        jh__buf_u16(b, (uint16_t)d);
    } else {
        jh__buf_u8(b, JH__CFA_advance_loc4);
        jh__buf_u32(b, d);
    }
}

static size_t advance_size(uint32_t d)
{
    return d == 0 ? 0 : d < 0x40 ? 1 : d <= 0xff ? 2 : d <= 0xffff ? 3 : 5;
}

static int arch_of(const struct jh__cfi_opts *o)
{
    return o->arch ? o->arch : JH__CFI_HOST;
}

static size_t cie_insn_size(int arch) { return arch == JH__CFI_ARM64 ? 3 : 5; }

static size_t cie_size(int arch) { return align8(4 + CIE_FIXED + cie_insn_size(arch)); }

static void put_cie_insns(struct jh__buf *b, int arch)
{
    if (arch == JH__CFI_ARM64) {
        jh__buf_u8(b, JH__CFA_def_cfa);
        jh__buf_u8(b, A64_SP);
        jh__buf_u8(b, 0);
    } else {
        jh__buf_u8(b, JH__CFA_def_cfa);
        jh__buf_u8(b, X86_RSP);
        jh__buf_u8(b, 8);
        jh__buf_u8(b, JH__CFA_offset | X86_RA);     /* return address at cfa-8 */
        jh__buf_u8(b, 1);
    }
}

static int func_ok(const struct jh__func *f)
{
    if (f->size == 0 || f->start + (f->size - 1) < f->start)
        return 0;
    switch (f->unwind) {
    case JH_UNWIND_NONE:
        return 1;
    case JH_UNWIND_FRAME_POINTER:
        return f->fp_push_end > 0 && f->fp_push_end <= f->fp_set_end &&
               f->fp_set_end <= f->size;
    case JH_UNWIND_CFI:
        return f->cfi_len > 0 && jh__cfi_validate(f->cfi, f->cfi_len, f->size) == 0;
    }
    return 0;
}

static size_t fde_insn_size(int arch, const struct jh__func *f)
{
    if (f->unwind == JH_UNWIND_CFI)
        return f->cfi_len;
    /* def_cfa_offset 16 (2) + offsets (2 per register) + def_cfa_register (2) */
    return advance_size(f->fp_push_end) + 2 + (arch == JH__CFI_ARM64 ? 4 : 2) +
           advance_size(f->fp_set_end - f->fp_push_end) + 2;
}

static void put_fde_insns(struct jh__buf *b, int arch, const struct jh__func *f)
{
    if (f->unwind == JH_UNWIND_CFI) {
        jh__buf_put(b, f->cfi, f->cfi_len);
        return;
    }
    put_advance(b, f->fp_push_end);
    jh__buf_u8(b, JH__CFA_def_cfa_offset);
    jh__buf_u8(b, 16);
    if (arch == JH__CFI_ARM64) {
        jh__buf_u8(b, JH__CFA_offset | A64_FP);     /* x29 at cfa-16 */
        jh__buf_u8(b, 2);
        jh__buf_u8(b, JH__CFA_offset | A64_LR);     /* x30 at cfa-8 */
        jh__buf_u8(b, 1);
    } else {
        jh__buf_u8(b, JH__CFA_offset | X86_RBP);    /* rbp at cfa-16 */
        jh__buf_u8(b, 2);
    }
    put_advance(b, f->fp_set_end - f->fp_push_end);
    jh__buf_u8(b, JH__CFA_def_cfa_register);
    jh__buf_u8(b, arch == JH__CFI_ARM64 ? A64_FP : X86_RBP);
}

/* length, CIE pointer, pc_begin, pc_range, augmentation length 0, instructions, padding */
static size_t fde_size(const struct jh__cfi_opts *o, const struct jh__func *f)
{
    size_t ptr = o->ptr == JH__CFI_ABS ? 8 : 4;
    return align8(4 + 4 + 2 * ptr + 1 + fde_insn_size(arch_of(o), f));
}

static void pad_nops(struct jh__buf *b, size_t from)
{
    while ((b->len - from) % 8 && !b->err)
        jh__buf_u8(b, JH__CFA_nop);
}

static int opts_ok(const struct jh__cfi_opts *o)
{
    int arch = arch_of(o);
    return (arch == JH__CFI_X86_64 || arch == JH__CFI_ARM64) &&
           (o->ptr == JH__CFI_PCREL || o->ptr == JH__CFI_ABS);
}

/* The functions come as an array of structs or of pointers: the i-th either way. */
struct fset {
    const struct jh__func *arr;
    const struct jh__func *const *ptrs;
};
static const struct jh__func *fat(struct fset f, size_t i) { return f.ptrs ? f.ptrs[i] : &f.arr[i]; }

static size_t frame_size(const struct jh__cfi_opts *o, struct fset f, size_t n)
{
    if (!o || !opts_ok(o) || (n && !f.arr && !f.ptrs))
        return 0;
    size_t sz = cie_size(arch_of(o)) + 4;
    for (size_t i = 0; i < n; i++) {
        const struct jh__func *fn = fat(f, i);
        if (!fn || !func_ok(fn))
            return 0;
        if (fn->unwind != JH_UNWIND_NONE)
            sz += fde_size(o, fn);
    }
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

static int eh_frame(struct jh__buf *b, const struct jh__cfi_opts *o, struct fset f, size_t n,
                    struct jh__cfi_index *idx)
{
    size_t want = frame_size(o, f, n);
    if (!b || !want)
        return -EINVAL;
    if (jh__buf_reserve(b, want))
        return -ENOMEM;

    const struct jh__func **sorted = NULL;
    if (n) {
        sorted = malloc(n * sizeof *sorted);
        if (!sorted)
            return -ENOMEM;
    }
    size_t nf = 0;
    for (size_t i = 0; i < n; i++)
        if (fat(f, i)->unwind != JH_UNWIND_NONE)
            sorted[nf++] = fat(f, i);
    if (nf > 1)
        qsort(sorted, nf, sizeof *sorted, cmp_func);
    for (size_t i = 1; i < nf; i++)
        if (sorted[i]->start < sorted[i - 1]->start + sorted[i - 1]->size) {
            free(sorted);
            return -EINVAL;         /* overlapping FDEs break every binary search */
        }
    if (nf > INT32_MAX) {
        free(sorted);
        return -ERANGE;
    }

    int arch = arch_of(o);
    int abs = o->ptr == JH__CFI_ABS;
    size_t base = b->len;
    int err = 0;

    /* CIE */
    jh__buf_u32(b, 0);                          /* length, patched below */
    jh__buf_u32(b, 0);                          /* CIE id: 0 in .eh_frame */
    jh__buf_u8(b, 1);                           /* version */
    jh__buf_put(b, "zR", 3);
    jh__buf_uleb(b, 1);                         /* code alignment */
    jh__buf_sleb(b, -8);                        /* data alignment */
    jh__buf_u8(b, arch == JH__CFI_ARM64 ? A64_LR : X86_RA);
    jh__buf_uleb(b, 1);                         /* augmentation data: R */
    jh__buf_u8(b, abs ? JH__DW_EH_PE_absptr : (JH__DW_EH_PE_pcrel | JH__DW_EH_PE_sdata4));
    put_cie_insns(b, arch);
    pad_nops(b, base);
    jh__buf_set_u32(b, base, (uint32_t)(b->len - base - 4));

    for (size_t i = 0; i < nf && !b->err; i++) {
        const struct jh__func *fn = sorted[i];
        size_t at = b->len;
        if (idx) {
            idx[i].pc = fn->start;
            idx[i].size = fn->size;
            idx[i].off = at - base;
        }
        jh__buf_u32(b, 0);
        jh__buf_u32(b, (uint32_t)(at + 4 - base));      /* back to the CIE */
        if (abs) {
            jh__buf_u64(b, fn->start);
            jh__buf_u64(b, fn->size);
        } else {
            uint64_t field = o->addr + (at + 8 - base);
            int64_t rel = (int64_t)(fn->start - field);
            if (!fits_s32(rel) || fn->size > INT32_MAX) {
                err = -ERANGE;
                break;
            }
            jh__buf_u32(b, (uint32_t)rel);
            jh__buf_u32(b, (uint32_t)fn->size);
        }
        jh__buf_uleb(b, 0);                     /* augmentation data length */
        put_fde_insns(b, arch, fn);
        pad_nops(b, at);
        jh__buf_set_u32(b, at, (uint32_t)(b->len - at - 4));
    }
    jh__buf_u32(b, 0);                          /* terminator */
    free(sorted);

    if (!err && b->err)
        err = b->err;
    if (!err && b->len - base != want)
        err = -EPROTO;                          /* dry run and encoder disagree: a bug */
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

size_t jh__cfi_eh_frame_hdr_size(size_t nfde) { return 12 + 8 * nfde; }

int jh__cfi_eh_frame_hdr(struct jh__buf *b, uint64_t hdr_addr, uint64_t eh_addr,
                         const struct jh__cfi_index *idx, size_t nfde)
{
    if (!b || (nfde && !idx) || nfde > UINT32_MAX)
        return -EINVAL;
    int64_t rel = (int64_t)(eh_addr - (hdr_addr + 4));
    if (!fits_s32(rel))
        return -ERANGE;
    for (size_t i = 0; i < nfde; i++) {
        if (i && idx[i].pc < idx[i - 1].pc)
            return -EINVAL;                     /* the table is binary-searched */
        if (!fits_s32((int64_t)(idx[i].pc - hdr_addr)) ||
            !fits_s32((int64_t)(eh_addr + idx[i].off - hdr_addr)))
            return -ERANGE;
    }
    size_t base = b->len;
    jh__buf_u8(b, 1);                                   /* version */
    jh__buf_u8(b, JH__DW_EH_PE_pcrel | JH__DW_EH_PE_sdata4);   /* eh_frame_ptr */
    jh__buf_u8(b, JH__DW_EH_PE_udata4);                  /* fde_count */
    jh__buf_u8(b, JH__DW_EH_PE_datarel | JH__DW_EH_PE_sdata4); /* table */
    jh__buf_u32(b, (uint32_t)rel);
    jh__buf_u32(b, (uint32_t)nfde);
    for (size_t i = 0; i < nfde; i++) {
        jh__buf_u32(b, (uint32_t)(idx[i].pc - hdr_addr));
        jh__buf_u32(b, (uint32_t)(eh_addr + idx[i].off - hdr_addr));
    }
    if (b->err)
        return b->err;
    if (b->len - base != jh__cfi_eh_frame_hdr_size(nfde)) {
        b->len = base;
        return -EPROTO;
    }
    return 0;
}

int jh__cfi_perf_unwinding(struct jh__buf *b, const struct jh__func *f, uint64_t text_addr,
                           int arch, size_t *hdr_size)
{
    if (!b || !f)
        return -EINVAL;
    if (f->unwind == JH_UNWIND_NONE) {
        if (hdr_size)
            *hdr_size = 0;
        return 0;
    }
    struct jh__func g = *f;
    g.start = text_addr;
    /* genelf.c: .eh_frame at ALIGN_8(text + csize), .eh_frame_hdr right after it. */
    uint64_t eh_addr = (text_addr + g.size + 7) & ~(uint64_t)7;
    struct jh__cfi_opts o = { .arch = arch, .ptr = JH__CFI_PCREL, .addr = eh_addr };
    struct jh__cfi_index idx;
    size_t base = b->len;
    int n = jh__cfi_eh_frame(b, &o, &g, 1, &idx);
    if (n < 0)
        return n;
    int err = jh__cfi_eh_frame_hdr(b, eh_addr + (b->len - base), eh_addr, &idx, (size_t)n);
    if (err) {
        if (!b->err)
            b->len = base;
        return err;
    }
    if (hdr_size)
        *hdr_size = jh__cfi_eh_frame_hdr_size((size_t)n);
    return n;
}
