/*
 * test_cfi_reuse.c — an .eh_frame run whose FDEs are copies of the one before (cfi_reuse.c)
 * says what encoding each alone says. Runs of thousands of functions whose shapes repeat,
 * or differ from the one before in one field (the CFI bytes, a prologue offset, an epilogue
 * ending at the function's end or not, a CFA step, a saved register, the personality, the
 * LSDA, arm64's signing ranges and key), in both pointer flavours, for both architectures,
 * with and without personalities: every FDE is read back and its CIE pointer, addresses,
 * LSDA and instructions (jh__cfi_fde_insns, which encodes one function alone) checked, and
 * the run's length against the dry run's (jh__cfi_eh_frame_size, which copies nothing).
 * Then again with the instructions of some functions encoded once beforehand
 * (jh__cfi_memo, what the core's entries carry): every encoder writes the same bytes as
 * without them, for the host, and ignores them for the other architecture.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fmt/arch.h"
#include "fmt/cfi.h"

#define N 3000

static uint32_t rng = 12345;
static uint32_t rnd(uint32_t n)
{
    rng = rng * 1103515245u + 12345u;
    return (rng >> 8) % n;
}

static const uint8_t cfi_a[] = { 0x41, 0x0e, 0x10, 0x42, 0x0e, 0x18 };
static const uint8_t cfi_b[] = { 0x41, 0x0e, 0x10, 0x42, 0x0e, 0x20 };   /* one byte apart */
static const uint8_t cfi_c[] = { 0x41, 0x0e, 0x10 };
static const struct jh_epilogue epi_mid[] = { { 0x20, 0x24 } };
static const struct jh_epilogue epi_end[] = { { 0x38, 0x40 } };        /* the end of a 0x40 */
static const struct jh_epilogue epi_two[] = { { 0x20, 0x24 }, { 0x30, 0x34 } };
static const struct jh_cfa_step steps_a[] = { { 1, 16 }, { 5, 32 } };
static const struct jh_cfa_step steps_b[] = { { 1, 16 }, { 6, 32 } };
static const struct jh_cfa_step steps_c[] = { { 1, 16 }, { 5, 40 } };
static const struct jh_saved_reg regs_a[] = { { 3, -16 } };
static const struct jh_saved_reg regs_b[] = { { 6, -16 } };
static const struct jh_range signed_a[] = { { 4, 0x30 } };
static const struct jh_range signed_b[] = { { 4, 0x2c } };

/* One field of f changed, or a new shape altogether: start and size are the caller's. */
static void reshape(struct jh__func *f, bool arm64)
{
    switch (rnd(arm64 ? 12 : 10)) {
    case 0:
        *f = (struct jh__func){ .unwind = JH_UNWIND_CFI, .cfi = cfi_a, .cfi_len = sizeof cfi_a };
        break;
    case 1:
        f->unwind = JH_UNWIND_CFI;
        f->cfi = rnd(2) ? cfi_b : cfi_c;
        f->cfi_len = f->cfi == cfi_b ? sizeof cfi_b : sizeof cfi_c;
        break;
    case 2:
        *f = (struct jh__func){ .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = 1,
                                .fp_set_end = 4 };
        break;
    case 3:
        if (f->unwind == JH_UNWIND_FRAME_POINTER)
            f->fp_set_end = f->fp_set_end == 4 ? 5 : 4;
        break;
    case 4: {
        static const struct jh_epilogue *const e[] = { epi_mid, epi_end, epi_two };
        int k = (int)rnd(4);
        *f = (struct jh__func){ .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = 1,
                                .fp_set_end = 4, .nepilogues = k == 3 ? 0 : k == 2 ? 2 : 1,
                                .epilogues = k == 3 ? NULL : e[k] };
        break;
    }
    case 5:
        *f = (struct jh__func){ .unwind = JH_UNWIND_FRAMELESS, .cfa_offset = 8, .ncfa_steps = 2,
                                .cfa_steps = steps_a, .nsaved_regs = 1, .saved_regs = regs_a };
        break;
    case 6:
        if (f->unwind == JH_UNWIND_FRAMELESS) {
            static const struct jh_cfa_step *const st[] = { steps_a, steps_b, steps_c };
            if (rnd(2))
                f->cfa_steps = st[rnd(3)];
            else
                f->saved_regs = f->saved_regs == regs_a ? regs_b : regs_a;
        }
        break;
    case 7:
        f->cfa_offset = f->cfa_offset == 8 ? 24 : 8;
        break;
    case 8:
        f->personality = f->personality ? 0 : 0x7000;
        break;
    case 9:
        *f = (struct jh__func){ .unwind = JH_UNWIND_NONE };
        break;
    case 10:
        f->nra_signed = !f->nra_signed;
        f->ra_signed = f->nra_signed ? (rnd(2) ? signed_a : signed_b) : NULL;
        break;
    case 11:
        f->ra_key = f->ra_key == JH_PAC_KEY_B ? JH_PAC_KEY_A : JH_PAC_KEY_B;
        break;
    }
    if (f->unwind != JH_UNWIND_FRAMELESS && f->unwind != JH_UNWIND_NONE)
        f->cfa_offset = 0;
}

static uint32_t rd32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* Every FDE of the run at b (n functions, idx from the encoder) against f alone. */
static void check_run(const struct jh__buf *b, const struct jh__cfi_opts *o,
                      const struct jh__func *f, size_t n, const struct jh__cfi_index *idx,
                      int nfde)
{
    int bad = 0;
    size_t k = 0;
    for (size_t i = 0; i < n && bad < 5; i++) {
        if (f[i].unwind == JH_UNWIND_NONE)
            continue;
        size_t off = idx[k].off;
        CHECK_EQ(idx[k].pc, f[i].start);
        k++;
        const uint8_t *p = b->p + off;
        uint32_t len = rd32(p), cie_ptr = rd32(p + 4);
        size_t cie = off + 4 - cie_ptr;
        const uint8_t *q = p + 8;
        bool ok = (4 + len) % 8 == 0 && cie_ptr <= off + 4 && rd32(b->p + cie + 4) == 0;
        if (o->ptr == JH__CFI_ABS) {
            ok = ok && rd64(q) == f[i].start && rd64(q + 8) == f[i].size;
            q += 16;
        } else {
            int32_t rel = (int32_t)rd32(q);
            ok = ok && o->addr + off + 8 + (int64_t)rel == f[i].start && rd32(q + 4) == f[i].size;
            q += 8;
        }
        /* the CIE's augmentation string says whether an LSDA follows */
        bool lsda = strchr((const char *)b->p + cie + 9, 'L') != NULL;
        ok = ok && *q == (lsda ? 8 : 0) && (!lsda || rd64(q + 1) == f[i].lsda);
        q += 1 + (lsda ? 8 : 0);
        struct jh__buf want = { 0 };
        CHECK_EQ(jh__cfi_fde_insns(&want, o->arch, &f[i]), 0);
        size_t have = (size_t)(p + 4 + len - q);
        ok = ok && have >= want.len && have - want.len < 8 && !memcmp(q, want.p, want.len);
        for (size_t j = want.len; ok && j < have; j++)
            ok = q[j] == 0;                             /* DW_CFA_nop padding */
        if (!ok) {
            bad++;
            fprintf(stderr, "FDE %zu (at %zu, unwind %d) is not what it alone encodes to\n", i,
                    off, (int)f[i].unwind);
        }
        jh__buf_free(&want);
        CHECK(ok);
    }
    CHECK_EQ(k, (size_t)nfde);
}

static bool same(const struct jh__buf *a, const struct jh__buf *b)
{
    return a->len == b->len && !a->err && !b->err && (!a->len || !memcmp(a->p, b->p, a->len));
}

/* f[i] alone through every encoder that takes one function, into out[0..5). */
static void each_encoder(const struct jh__arch *arch, const struct jh__func *f, struct jh__buf *out)
{
    size_t cie_off[2] = { SIZE_MAX, SIZE_MAX }, hdr = 0, fde_off = 0;
    struct jh__cfi_opts abs = { .arch = arch, .ptr = JH__CFI_ABS, .personality = true };
    CHECK(jh__cfi_fde_insns(&out[0], arch, f) == 0 || f->unwind == JH_UNWIND_NONE);
    CHECK(jh__cfi_eh_frame(&out[1], &abs, f, 1, NULL) >= 0);
    CHECK(jh__cfi_perf_unwinding(&out[2], f, 0x80, arch, &hdr) >= 0);
    CHECK(jh__cfi_debug_frame_fde(&out[3], arch, 0, f) >= 0);
    CHECK(jh__cfi_eh_frame_grow(&out[4], arch, cie_off, f, &fde_off) >= 0);
}

/* The run b (of f) and each function alone, encoded again with memos for some of f. */
static void with_memos(struct jh__func *f, const struct jh__func *const *fp,
                       struct jh__cfi_opts *o, const struct jh__buf *b, int nfde)
{
    static struct jh__buf alone[N][5];
    for (size_t i = 0; i < N; i += 7)
        each_encoder(o->arch, &f[i], alone[i]);
    size_t made = 0;
    for (size_t i = 0; i < N; i++)
        if (rnd(3) && f[i].unwind != JH_UNWIND_NONE) {
            CHECK_EQ(jh__cfi_memo(&f[i]), 0);
            made += f[i].insns != NULL;
            CHECK_EQ(jh__cfi_memo(&f[i]), 0);           /* made once */
        }
    CHECK(made > N / 3);
    struct jh__buf m = { 0 }, m2 = { 0 };
    o->size = 0;
    CHECK_EQ(jh__cfi_eh_frame(&m, o, f, N, NULL), nfde);
    CHECK(same(&m, b));
    o->size = jh__cfi_eh_frame_size_p(o, fp, N);
    CHECK_EQ(jh__cfi_eh_frame_p(&m2, o, fp, N, NULL), nfde);
    CHECK(same(&m2, b));
    int differ = 0;
    for (size_t i = 0; i < N; i += 7) {
        struct jh__buf again[5] = { { 0 } };
        each_encoder(o->arch, &f[i], again);
        for (int k = 0; k < 5; k++) {
            differ += !same(&again[k], &alone[i][k]);
            jh__buf_free(&again[k]);
            jh__buf_free(&alone[i][k]);
        }
    }
    CHECK_EQ(differ, 0);
    for (size_t i = 0; i < N; i++) {
        free((void *)f[i].insns);
        f[i].insns = NULL;
    }
    jh__buf_free(&m);
    jh__buf_free(&m2);
}

/* pool: each function takes one of a few shapes at random (a run coming back to a shape
 * seen a few FDEs before: copied from there), not mostly the one before. */
static void one(const struct jh__arch *arch, int ptr, bool personality, uint32_t seed, int pool)
{
    static struct jh__func f[N];
    static struct jh__cfi_index idx[N];
    rng = seed;
    struct jh__func shape = { .unwind = JH_UNWIND_CFI, .cfi = cfi_a, .cfi_len = sizeof cfi_a };
    struct jh__func shapes[8];
    uint64_t at = 0x40000000;
    bool arm64 = arch == &jh__arch_arm64;
    for (int k = 0; k < pool; k++) {
        reshape(&shape, arm64);
        shapes[k] = shape;
    }
    for (size_t i = 0; i < N; i++) {
        if (pool)
            shape = shapes[rnd((uint32_t)pool)];
        else if (rnd(10) >= 6)      /* most in a row the same, as a VM's builtins */
            reshape(&shape, arm64);
        f[i] = shape;
        f[i].start = at;
        f[i].size = rnd(3) ? 0x40 : 0x80;
        if (f[i].personality && rnd(2))
            f[i].lsda = 0x9000 + i * 16;
        if (f[i].unwind == JH_UNWIND_FRAME_POINTER && f[i].size < 0x40)
            f[i].size = 0x40;
        at += f[i].size + rnd(3) * 8;
    }
    struct jh__cfi_opts o = { .arch = arch, .ptr = ptr, .addr = 0x40000000 + N * 0x100,
                              .personality = personality };
    struct jh__buf b = { 0 };
    int nfde = jh__cfi_eh_frame(&b, &o, f, N, idx);
    CHECK(nfde > (pool ? 0 : N / 2));      /* (a pool may hold shapes with no FDE) */
    if (nfde <= 0)
        return;
    CHECK_EQ(b.len, jh__cfi_eh_frame_size(&o, f, N));
    check_run(&b, &o, f, N, idx, nfde);
    /* the same through the sized path (elf_image.c's), and the array-of-pointers entry */
    static const struct jh__func *fp[N];
    for (size_t i = 0; i < N; i++)
        fp[i] = &f[i];
    struct jh__buf b2 = { 0 };
    o.size = jh__cfi_eh_frame_size_p(&o, fp, N);
    CHECK_EQ(jh__cfi_eh_frame_p(&b2, &o, fp, N, NULL), nfde);
    CHECK(b2.len == b.len && !memcmp(b2.p, b.p, b.len));
    with_memos(f, fp, &o, &b, nfde);
    jh__buf_free(&b);
    jh__buf_free(&b2);
}

int main(void)
{
    const struct jh__arch *arches[] = { &jh__arch_x86_64, &jh__arch_arm64 };
    for (int a = 0; a < 2; a++)
        for (int ptr = 0; ptr < 2; ptr++)
            for (int pers = 0; pers < 2; pers++)
                for (uint32_t seed = 1; seed <= 3; seed++)
                    for (int pool = 0; pool <= 8; pool += 2)
                        one(arches[a], ptr ? JH__CFI_ABS : JH__CFI_PCREL, pers,
                            seed * 7919 + (uint32_t)a + (uint32_t)pool, pool);
    return check_done();
}
