/*
 * test_eh_frame.c — JH_UNWIND_EH_FRAME, the library's one reader and translator of a
 * compiler's .eh_frame (src/fmt/eh_frame.c):
 *   1. records built byte by byte: the contract's CIE passes the FDE through; other factors
 *      and initial rules are translated (checked by decoding the result); refusals say why
 *      (another return-address column, a signal frame, the B key, set_loc, DW_CFA_restore
 *      under foreign initial rules, an offset -8 does not divide, cut-short records);
 *   2. pointers: absolute and pc-relative, bytes in place or described at another address,
 *      an indirect personality read from its slot, an LSDA from the FDE;
 *   3. end to end: x86-64 code that calls back into C, described only by its .eh_frame
 *      (foreign factors: data alignment -4), announced on the unwind channel; libgcc's
 *      _Unwind_Backtrace from the callback walks through the JIT frame to its C caller;
 *   4. jh_frame_at: an FDE the "VM" registered itself with libgcc (LuaJIT's shape: a
 *      frame of CFA = rsp+80 with four registers saved, a personality in a "zPR" CIE) is
 *      read back as a FRAMELESS description, with its range and personality; a pc with
 *      no FDE is -ENOENT; too little room is -ENOSPC.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "check.h"
#include "base/buf.h"
#include "core/describe.h"
#include "fmt/cfa.h"
#include "fmt/eh_frame.h"
#include "jitherald.h"

/* ---- building records ------------------------------------------------------------------ */
struct cie_spec {
    const char *aug;
    uint64_t caf, ra;
    int64_t daf;
    uint8_t fde_enc;                /* 'R' */
    uint8_t pers_enc;               /* 'P' */
    uint64_t pers;
    const uint8_t *init;
    size_t init_len;
};

static size_t put_cie(struct jh__buf *b, uint64_t addr, const struct cie_spec *s)
{
    size_t at = b->len;
    jh__buf_u32(b, 0);                              /* length, set below */
    jh__buf_u32(b, 0);
    jh__buf_u8(b, 1);
    jh__buf_str(b, s->aug);
    jh__buf_uleb(b, s->caf);
    jh__buf_sleb(b, s->daf);
    jh__buf_u8(b, (uint8_t)s->ra);
    if (s->aug[0] == 'z') {
        struct jh__buf a = { 0 };
        for (const char *c = s->aug + 1; *c; c++) {
            if (*c == 'R') {
                jh__buf_u8(&a, s->fde_enc);
            } else if (*c == 'L') {
                jh__buf_u8(&a, 0x1b);
            } else if (*c == 'P') {
                jh__buf_u8(&a, s->pers_enc);
                /* the pointer's field: after the length byte of the data and what precedes */
                uint64_t field = addr + b->len + 1 + a.len;
                if ((s->pers_enc & 0x70) == 0x10)
                    jh__buf_u32(&a, (uint32_t)(int32_t)(s->pers - field));
                else
                    jh__buf_u64(&a, s->pers);
            }
        }
        jh__buf_uleb(b, a.len);
        jh__buf_put(b, a.p, a.len);
        jh__buf_free(&a);
    }
    jh__buf_put(b, s->init, s->init_len);
    jh__buf_align(b, 4);
    jh__buf_set_u32(b, at, (uint32_t)(b->len - at - 4));
    return at;
}

/* An FDE with pcrel sdata4 pointers (or absptr with abs); lsda_field: 0 none. */
static size_t put_fde(struct jh__buf *b, uint64_t addr, size_t cie, uint64_t pc, uint64_t range,
                      bool abs, bool z, bool with_lsda, uint64_t lsda, const uint8_t *ins,
                      size_t n)
{
    size_t at = b->len;
    jh__buf_u32(b, 0);
    jh__buf_u32(b, (uint32_t)(at + 4 - cie));
    if (abs) {
        jh__buf_u64(b, pc);
        jh__buf_u64(b, range);
    } else {
        jh__buf_u32(b, (uint32_t)(int32_t)(pc - (addr + b->len)));
        jh__buf_u32(b, (uint32_t)range);
    }
    if (z) {
        jh__buf_uleb(b, with_lsda ? 4 : 0);
        if (with_lsda)
            jh__buf_u32(b, (uint32_t)(int32_t)(lsda - (addr + b->len)));
    }
    jh__buf_put(b, ins, n);
    jh__buf_align(b, 4);
    jh__buf_set_u32(b, at, (uint32_t)(b->len - at - 4));
    return at;
}

static const uint8_t contract_init[] = { 0x0c, 7, 8, 0x90, 1 };     /* rsp+8, rip at cfa-8 */

/* The translation of the FDE starting at pc, or NULL (why in msg). */
static struct jh__buf translate(const struct jh__buf *eh, uint64_t addr, uint64_t pc, int *rc,
                                char *msg, size_t n)
{
    struct jh__eh_cie c;
    struct jh__eh_fde f;
    struct jh__buf out = { 0 };
    *rc = jh__eh_find(eh->p, eh->len, addr, pc, &c, &f, msg, n);
    if (!*rc)
        *rc = jh__eh_translate(NULL, &c, &f, &out, msg, n);
    return out;
}

static bool same_bytes(const struct jh__buf *b, const uint8_t *want, size_t n)
{
    if (b->len != n || memcmp(b->p, want, n)) {
        fprintf(stderr, "got:");
        for (size_t i = 0; i < b->len; i++)
            fprintf(stderr, " %02x", b->p[i]);
        fprintf(stderr, "\nwant:");
        for (size_t i = 0; i < n; i++)
            fprintf(stderr, " %02x", want[i]);
        fprintf(stderr, "\n");
        return false;
    }
    return true;
}

static void test_translation(void)
{
    const uint64_t A = 0x7f0000001000, pc = 0x7f0000200000;
    static const uint8_t fde_ins[] = { 0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06 };
    char msg[200];
    int rc;

    /* 1. the contract's CIE: the FDE's bytes as they are */
    struct jh__buf eh = { 0 };
    struct cie_spec s = { "zR", 1, 16, -8, 0x1b, 0, 0, contract_init, sizeof contract_init };
    size_t cie = put_cie(&eh, A, &s);
    put_fde(&eh, A, cie, pc, 64, false, true, false, 0, fde_ins, sizeof fde_ins);
    jh__buf_u32(&eh, 0);
    struct jh__buf out = translate(&eh, A, pc, &rc, msg, sizeof msg);
    CHECK_EQ(rc, 0);
    /* with the record's padding (DW_CFA_nop) */
    CHECK(out.len >= sizeof fde_ins && same_bytes(&(struct jh__buf){ .p = out.p,
                                                                     .len = sizeof fde_ins },
                                                  fde_ins,
                                                  sizeof fde_ins));
    for (size_t i = sizeof fde_ins; i < out.len; i++)
        CHECK_EQ(out.p[i], 0);
    jh__buf_free(&out);
    /* the same bytes read at another address find no FDE at pc, and say so */
    out = translate(&eh, A + 0x100, pc, &rc, msg, sizeof msg);
    CHECK_EQ(rc, -ENOENT);
    CHECK(strstr(msg, "no FDE") != NULL);
    jh__buf_free(&out);
    jh__buf_free(&eh);

    /* 2. code alignment 4, data alignment -4: advances scaled, offsets refactored */
    static const uint8_t init4[] = { 0x0c, 7, 8, 0x90, 2 };
    static const uint8_t ins4[] = { 0x41, 0x13, 0x7c, 0x86, 4, 0x42, 0x0d, 6, 0x83, 6 };
    /* advance 4; def_cfa_offset 16; rbp at cfa-16 (2); advance 8; def_cfa_register rbp;
     * rbx at cfa-24 (3) */
    static const uint8_t want4[] = { 0x44, 0x0e, 16, 0x86, 2, 0x48, 0x0d, 6, 0x83, 3 };
    s = (struct cie_spec){ "zR", 4, 16, -4, 0x1b, 0, 0, init4, sizeof init4 };
    cie = put_cie(&eh, A, &s);
    put_fde(&eh, A, cie, pc, 64, false, true, false, 0, ins4, sizeof ins4);
    out = translate(&eh, A, pc, &rc, msg, sizeof msg);
    CHECK_EQ(rc, 0);
    CHECK(same_bytes(&out, want4, sizeof want4));
    jh__buf_free(&out);
    jh__buf_free(&eh);

    /* 3. other initial rules (rbx same_value too, no rule for rip): rip made undefined,
     * then the CIE's rules, then the FDE's; absolute pointers, no 'z' */
    static const uint8_t init3[] = { 0x0c, 7, 8, 0x08, 3 };
    static const uint8_t ins3[] = { 0x41, 0x0e, 16 };
    static const uint8_t want3[] = { 0x07, 16, 0x0c, 7, 8, 0x08, 3, 0x41, 0x0e, 16 };
    s = (struct cie_spec){ "", 1, 16, -8, 0, 0, 0, init3, sizeof init3 };
    cie = put_cie(&eh, A, &s);
    put_fde(&eh, A, cie, pc, 64, true, false, false, 0, ins3, sizeof ins3);
    out = translate(&eh, A, pc, &rc, msg, sizeof msg);
    CHECK_EQ(rc, 0);
    CHECK(same_bytes(&out, want3, sizeof want3));
    jh__buf_free(&out);
    /* ... where DW_CFA_restore would restore the contract's rule: refused */
    static const uint8_t ins_restore[] = { 0x41, 0xc3 };
    put_fde(&eh, A, cie, pc + 64, 64, true, false, false, 0, ins_restore, sizeof ins_restore);
    out = translate(&eh, A, pc + 64, &rc, msg, sizeof msg);
    CHECK_EQ(rc, -EINVAL);
    CHECK(strstr(msg, "DW_CFA_restore") != NULL);
    jh__buf_free(&out);
    jh__buf_free(&eh);

    /* 4. refusals, each saying why */
    struct { struct cie_spec s; const uint8_t *ins; size_t n; const char *says; } bad[] = {
        { { "zR", 1, 30, -8, 0x1b, 0, 0, contract_init, sizeof contract_init }, fde_ins,
          sizeof fde_ins, "register 30" },
        { { "zRS", 1, 16, -8, 0x1b, 0, 0, contract_init, sizeof contract_init }, fde_ins,
          sizeof fde_ins, "signal frame" },
        { { "zRB", 1, 16, -8, 0x1b, 0, 0, contract_init, sizeof contract_init }, fde_ins,
          sizeof fde_ins, "B key" },
        { { "zR", 1, 16, -4, 0x1b, 0, 0, init4, sizeof init4 },
          (const uint8_t[]){ 0x41, 0x83, 3 }, 3, "not a multiple of 8" },
        { { "zR", 1, 16, -8, 0x1b, 0, 0, contract_init, sizeof contract_init },
          (const uint8_t[]){ 0x01, 0, 0, 0, 0, 0, 0, 0, 0 }, 9, "DW_CFA_set_loc" },
        { { "zR", 1, 16, -8, 0x1b, 0, 0, contract_init, sizeof contract_init },
          (const uint8_t[]){ 0x0e, 0x80, 0x80 }, 3, "cut short" },   /* no padding after */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cie = put_cie(&eh, A, &bad[i].s);
        put_fde(&eh, A, cie, pc, 64, false, true, false, 0, bad[i].ins, bad[i].n);
        out = translate(&eh, A, pc, &rc, msg, sizeof msg);
        CHECK_EQ(rc, -EINVAL);
        if (!strstr(msg, bad[i].says))
            fprintf(stderr, "case %zu says \"%s\", expected \"%s\"\n", i, msg, bad[i].says);
        CHECK(strstr(msg, bad[i].says) != NULL);
        jh__buf_free(&out);
        jh__buf_free(&eh);
    }

    /* 5. damaged records: every cut of a good run is refused or ends cleanly, never read
     * past its end (ASan would say) */
    s = (struct cie_spec){ "zPLR", 1, 16, -8, 0x1b, 0x9b, A + 0x800, contract_init,
                           sizeof contract_init };
    cie = put_cie(&eh, A, &s);
    put_fde(&eh, A, cie, pc, 64, false, true, true, A + 0x900, fde_ins, sizeof fde_ins);
    for (size_t n = 0; n < eh.len; n++) {
        uint8_t *cut = malloc(n ? n : 1);
        memcpy(cut, eh.p, n);
        struct jh__buf part = { .p = cut, .len = n, .cap = n };
        out = translate(&part, A, pc, &rc, msg, sizeof msg);
        CHECK(rc != 0);
        jh__buf_free(&out);
        free(cut);
    }
    jh__buf_free(&eh);
}

/* ---- personality and LSDA through jh__code_lower ---------------------------------------- */
static int fake_personality(void) { return 0; }
static void *pers_slot = (void *)(uintptr_t)fake_personality;
static const uint8_t lsda_bytes[16];

static void test_lower(void)
{
    static uint8_t code[64];
    /* the bytes described at another address (near: the pointers are 32-bit pc-relative) */
    uint64_t addr = ((uintptr_t)code & ~(uint64_t)0xfff) + 0x40000;
    struct jh__buf eh = { 0 };
    struct cie_spec s = { "zPLR", 1, 16, -8, 0x1b, 0x9b, (uintptr_t)&pers_slot,
                          contract_init, sizeof contract_init };
    size_t cie = put_cie(&eh, addr, &s);
    static const uint8_t ins[] = { 0x41, 0x0e, 16 };
    put_fde(&eh, addr, cie, (uintptr_t)code, sizeof code, false, true, true,
            (uintptr_t)lsda_bytes, ins, sizeof ins);
    struct jh_code c = { .sz = sizeof c, .name = "f", .start = code, .size = sizeof code,
                         .unwind = JH_UNWIND_EH_FRAME, .eh_frame = eh.p,
                         .eh_frame_len = eh.len, .eh_frame_addr = addr };
    struct jh__buf cfi = { 0 };
    char why[300] = "";
    CHECK_EQ(jh__code_lower(&c, &cfi, why, sizeof why), 0);
    CHECK_EQ(c.unwind, JH_UNWIND_CFI);
    CHECK(c.cfi_len == sizeof ins && !memcmp(c.cfi, ins, sizeof ins));
    CHECK(c.personality == (const void *)(uintptr_t)fake_personality);
    CHECK(c.lsda == (const void *)lsda_bytes);
    CHECK(c.eh_frame == NULL);
    CHECK_EQ(jh__code_validate(&c, why, sizeof why), 0);
    jh__buf_free(&cfi);

    /* the JIT's own personality wins */
    c = (struct jh_code){ .sz = sizeof c, .name = "f", .start = code, .size = sizeof code,
                          .unwind = JH_UNWIND_EH_FRAME, .eh_frame = eh.p,
                          .eh_frame_len = eh.len, .eh_frame_addr = addr,
                          .personality = (const void *)&pers_slot };
    CHECK_EQ(jh__code_lower(&c, &cfi, why, sizeof why), 0);
    CHECK(c.personality == (const void *)&pers_slot);
    jh__buf_free(&cfi);

    /* an FDE longer than the code, and eh_frame fields on another kind: refused */
    c = (struct jh_code){ .sz = sizeof c, .name = "f", .start = code, .size = 16,
                          .unwind = JH_UNWIND_EH_FRAME, .eh_frame = eh.p,
                          .eh_frame_len = eh.len, .eh_frame_addr = addr };
    CHECK_EQ(jh__code_lower(&c, &cfi, why, sizeof why), -EINVAL);
    CHECK(strstr(why, "more than the code's") != NULL);
    jh__buf_free(&cfi);
    c = (struct jh_code){ .sz = sizeof c, .name = "f", .start = code, .size = sizeof code,
                          .unwind = JH_UNWIND_NONE, .eh_frame = eh.p, .eh_frame_len = eh.len };
    CHECK_EQ(jh__code_validate(&c, why, sizeof why), -EINVAL);
    CHECK(strstr(why, "JH_UNWIND_EH_FRAME") != NULL);
    jh__buf_free(&eh);
}

/* ---- end to end: libgcc unwinds through code described by its .eh_frame ------------------ */
struct _Unwind_Context;
int _Unwind_Backtrace(int (*fn)(struct _Unwind_Context *, void *), void *arg);
uintptr_t _Unwind_GetIP(struct _Unwind_Context *);

static uintptr_t ips[64];
static int nips;

static int collect(struct _Unwind_Context *uc, void *arg)
{
    (void)arg;
    if (nips < 64)
        ips[nips++] = _Unwind_GetIP(uc);
    return 0;
}

static void callback(void)
{
    nips = 0;
    _Unwind_Backtrace(collect, NULL);
}

typedef void jit_fn(void);

__attribute__((noinline)) static void call_jit(jit_fn *f)
{
    f();
    __asm__ volatile("" ::: "memory");
}

static void test_unwind(bool in_place)
{
    /* push rbx; sub rsp,16; movabs rax,callback; call rax; add rsp,16; pop rbx; ret */
    uint8_t *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(m != MAP_FAILED);
    size_t n = 0;
    m[n++] = 0x53;
    memcpy(m + n, "\x48\x83\xec\x10", 4), n += 4;
    m[n++] = 0x48, m[n++] = 0xb8;
    uintptr_t cb = (uintptr_t)callback;
    memcpy(m + n, &cb, 8), n += 8;
    m[n++] = 0xff, m[n++] = 0xd0;
    size_t after_call = n;
    memcpy(m + n, "\x48\x83\xc4\x10", 4), n += 4;
    m[n++] = 0x5b;
    m[n++] = 0xc3;

    /* As a compiler with data alignment -4 writes it: rbx at cfa-16 is factored 4. In
     * place: in the code's page, as an object's .eh_frame lies near its code (the pointers
     * are 32-bit pc-relative); moved: built for an address 1 MiB away, read from the heap. */
    static const uint8_t init[] = { 0x0c, 7, 8, 0x90, 2 };
    const uint8_t ins[] = { 0x41, 0x0e, 16, 0x83, 4, 0x44, 0x0e, 32,
                            (uint8_t)(0x40 | (after_call + 4 - 5)), 0x0e, 16, 0x41, 0x0e, 8 };
    struct jh__buf eh = { 0 };
    uint64_t base = in_place ? (uintptr_t)m + 2048 : (uintptr_t)m + 0x100000;
    struct cie_spec s = { "zR", 1, 16, -4, 0x1b, 0, 0, init, sizeof init };
    size_t cie = put_cie(&eh, base, &s);
    put_fde(&eh, base, cie, (uintptr_t)m, n, false, true, false, 0, ins, sizeof ins);
    const uint8_t *bytes = eh.p;
    uint64_t addr = base;
    if (in_place) {
        memcpy(m + 2048, eh.p, eh.len);
        bytes = m + 2048;
        addr = 0;
    }
    CHECK_EQ(mprotect(m, 4096, PROT_READ | PROT_EXEC), 0);

    jh_ctx *ctx;
    struct jh_options o = { .sz = sizeof o, .channels = JH_UNWIND };
    CHECK_EQ(jh_open(&ctx, &o), 0);
    struct jh_code c = { .sz = sizeof c, .name = "jit_eh", .start = m, .size = n,
                         .unwind = JH_UNWIND_EH_FRAME, .eh_frame = bytes,
                         .eh_frame_len = eh.len, .eh_frame_addr = addr };
    uint64_t id;
    CHECK_EQ(jh_code_add(ctx, &c, &id), 0);
    jh__buf_free(&eh);                  /* the library kept what it needs */
    call_jit((jit_fn *)(void *)m);
    int jit = -1, caller = -1;
    for (int i = 0; i < nips; i++) {
        if (ips[i] > (uintptr_t)m && ips[i] <= (uintptr_t)m + n)
            jit = i;
        if (jit >= 0 && i == jit + 1 && ips[i] > (uintptr_t)call_jit &&
            ips[i] < (uintptr_t)call_jit + 256)
            caller = i;
    }
    printf("%s: %d frames, JIT frame #%d, its caller #%d\n", in_place ? "in place" : "moved",
           nips, jit, caller);
    CHECK(jit >= 0);
    CHECK(caller == jit + 1);
    CHECK(nips > caller + 1);           /* and on past call_jit: main, libc */
    jh_close(ctx);
    munmap(m, 4096);
}

void __register_frame(void *);
void __deregister_frame(void *);

static void test_frame_at(void)
{
    uint8_t *area = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(area != MAP_FAILED);
    uint8_t *eh = area + 4096;                  /* the records, in place, near the "code" */
    static const uint8_t vm_ins[] = { 0x0e, 80, 0x86, 2, 0x83, 3, 0x8f, 4, 0x8e, 5,
                                      0x48, 0x0e, 96 };   /* at +8: CFA = rsp+96 */
    struct jh__buf b = { 0 };
    struct cie_spec s = { "zPR", 1, 16, -8, 0x1b, 0x00, (uintptr_t)fake_personality,
                          contract_init, sizeof contract_init };
    size_t cie = put_cie(&b, (uintptr_t)eh, &s);
    put_fde(&b, (uintptr_t)eh, cie, (uintptr_t)area, 1024, false, true, false, 0, vm_ins,
            sizeof vm_ins);
    jh__buf_u32(&b, 0);
    CHECK(b.len < 4096);
    memcpy(eh, b.p, b.len);
    jh__buf_free(&b);
    __register_frame(eh);

    struct jh_saved_reg regs[8];
    struct jh_frame f = { .sz = sizeof f, .saved_regs = regs, .nsaved_regs = 8 };
    CHECK_EQ(jh_frame_at(area + 4, &f), 0);
    CHECK_EQ(f.flags, JH_FRAME_PLAIN);
    CHECK_EQ(f.cfa_offset, 80);
    CHECK_EQ(f.nsaved_regs, 4);
    /* by register number: rbx 3, rbp 6, r14 14, r15 15 */
    CHECK(regs[0].reg == 3 && regs[0].cfa_offset == -24);
    CHECK(regs[1].reg == 6 && regs[1].cfa_offset == -16);
    CHECK(regs[2].reg == 14 && regs[2].cfa_offset == -40);
    CHECK(regs[3].reg == 15 && regs[3].cfa_offset == -32);
    CHECK(f.fde_start == area && f.fde_size == 1024);
    CHECK(f.personality == (const void *)(uintptr_t)fake_personality);
    CHECK_EQ(jh_frame_at(area + 100, &f), 0);   /* after the advance */
    CHECK_EQ(f.cfa_offset, 96);
    f.nsaved_regs = 2;
    CHECK_EQ(jh_frame_at(area + 4, &f), -ENOSPC);
    CHECK_EQ(f.nsaved_regs, 4);
    f.nsaved_regs = 8;
    CHECK_EQ(jh_frame_at(area + 2048, &f), -ENOENT);   /* past the FDE */
    struct jh_frame small = { .sz = 8 };
    CHECK_EQ(jh_frame_at(area, &small), -EINVAL);
    __deregister_frame(eh);
    munmap(area, 8192);
}

int main(void)
{
    test_translation();
    test_lower();
    test_unwind(true);
    test_unwind(false);
    test_frame_at();
    return check_done();
}
