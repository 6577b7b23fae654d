/*
 * test_unwind_info.c — the Windows x64 UNWIND_INFO encoder, on Linux, against two real
 * tools that know the format:
 *   1. for each prologue, GNU as (x86_64-w64-mingw32-as) assembles the same instructions
 *      with .seh_* directives: its .xdata must be byte for byte what we encode;
 *   2. our bytes wrapped in a COFF object (.xdata + a .pdata entry) are decoded by
 *      llvm-readobj --unwind, where we look for the codes a Windows unwinder follows;
 *   3. CFI that Windows cannot express is refused with -ENOTSUP and the row named.
 * The bytes at work (RtlVirtualUnwind, C++ exceptions, longjmp) are tested under Wine by
 * tests/integration/win64_unwind.sh.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "check.h"
#include "fmt/unwind_info.h"

static char tmpdir[] = "/tmp/jh-test-uwi.XXXXXX";
static int have_as, have_readobj;

/* DWARF register numbers (x86-64 psABI) and DW_CFA_* bytes, written out as a JIT would. */
enum { RBX = 3, RSI = 4, RDI = 5, RBP = 6, R12 = 12, XMM6 = 23 };
#define ADV(n) (uint8_t)(0x40 | (n))
#define CFA_OFF(n) 0x0e, (uint8_t)(n)
#define SAVE(r, k) (uint8_t)(0x80 | (r)), (uint8_t)(k)        /* at cfa - 8k */

static int encode(const struct jh__func *f, uint8_t *out, size_t *len, struct jh__uwi_error *e)
{
    struct jh__buf b = { 0 };
    int n = jh__uwi_encode(&b, f, e);
    if (n > 0) {
        memcpy(out, b.p, (size_t)n);
        *len = (size_t)n;
    }
    jh__buf_free(&b);
    return n;
}

static struct jh__func cfi_func(const uint8_t *cfi, size_t len, uint64_t size)
{
    return (struct jh__func){ .start = 0x10000, .size = size, .name = "f",
                              .unwind = JH_UNWIND_CFI, .cfi = cfi, .cfi_len = len };
}

/* GNU as's .xdata for a prologue written with .seh_* directives. */
static size_t gas_xdata(const char *prologue, uint8_t *out, size_t cap)
{
    char path[256], cmd[1024];
    snprintf(path, sizeof path, "%s/gas.s", tmpdir);
    FILE *f = fopen(path, "w");
    if (!f)
        return 0;
    fprintf(f, "\t.text\n\t.globl f\n\t.def f; .scl 2; .type 32; .endef\n\t.seh_proc f\nf:\n"
               "%s\n\t.seh_endprologue\n\tret\n\t.seh_endproc\n", prologue);
    fclose(f);
    snprintf(cmd, sizeof cmd, "cd %s && x86_64-w64-mingw32-as gas.s -o gas.o && "
             "x86_64-w64-mingw32-objcopy -O binary --only-section=.xdata gas.o gas.bin", tmpdir);
    int st;
    free(capture(cmd, &st));
    if (st != 0)
        return 0;
    snprintf(path, sizeof path, "%s/gas.bin", tmpdir);
    f = fopen(path, "rb");
    size_t n = f ? fread(out, 1, cap, f) : 0;
    if (f)
        fclose(f);
    return n;
}

/* llvm-readobj's reading of our bytes, for a function of size bytes. */
static char *readobj(const uint8_t *x, size_t len, uint64_t size)
{
    char path[256], cmd[1024];
    snprintf(path, sizeof path, "%s/ours.s", tmpdir);
    FILE *f = fopen(path, "w");
    if (!f)
        return NULL;
    fprintf(f, "\t.text\nf:\n\t.skip %llu, 0x90\nf_end:\n\t.section .xdata,\"dr\"\n\t.p2align 2\n"
               "xd:\n", (unsigned long long)size);
    for (size_t i = 0; i < len; i++)
        fprintf(f, "\t.byte 0x%02x\n", x[i]);
    fprintf(f, "\t.section .pdata,\"dr\"\n\t.rva f, f_end, xd\n");
    fclose(f);
    snprintf(cmd, sizeof cmd, "cd %s && x86_64-w64-mingw32-as ours.s -o ours.o && "
             "llvm-readobj-14 --unwind ours.o", tmpdir);
    return capture(cmd, NULL);
}

/* Encode f, compare with GNU as, and look for each of want[] in llvm-readobj's output. */
static void agree(const char *name, const struct jh__func *f, const char *prologue,
                  const char *const *want)
{
    uint8_t ours[256], theirs[256];
    size_t n = 0;
    struct jh__uwi_error e = { 0 };
    int r = encode(f, ours, &n, &e);
    if (r <= 0) {
        fprintf(stderr, "%s: encoder said %d (%s at +%llu)\n", name, r, e.why ? e.why : "",
                (unsigned long long)e.pc);
        CHECK(r > 0);
        return;
    }
    CHECK_EQ(n % 4, 0);
    if (have_as) {
        size_t m = gas_xdata(prologue, theirs, sizeof theirs);
        CHECK(m > 0);
        /* gas pads .xdata to its alignment; the UNWIND_INFO itself must match exactly */
        bool same = m >= n && !memcmp(ours, theirs, n);
        if (!same) {
            fprintf(stderr, "%s: ours   ", name);
            for (size_t i = 0; i < n; i++)
                fprintf(stderr, " %02x", ours[i]);
            fprintf(stderr, "\n%s: GNU as ", name);
            for (size_t i = 0; i < m; i++)
                fprintf(stderr, " %02x", theirs[i]);
            fprintf(stderr, "\n");
        }
        CHECK(same);
    }
    if (have_readobj && have_as && want) {
        char *out = readobj(ours, n, f->size);
        CHECK(out != NULL);
        for (const char *const *w = want; out && *w; w++) {
            if (!strstr(out, *w))
                fprintf(stderr, "%s: llvm-readobj does not show \"%s\":\n%s\n", name, *w, out);
            CHECK(strstr(out, *w) != NULL);
        }
        free(out);
    }
}

/* -ENOTSUP for the row at code offset pc, written at byte `at` of the CFI. */
static void refused(const char *name, const struct jh__func *f, uint64_t pc, size_t at,
                    const char *why)
{
    uint8_t out[256];
    size_t n;
    struct jh__uwi_error e = { 0 };
    int r = encode(f, out, &n, &e);
    if (r != -ENOTSUP || e.pc != pc || e.at != at || !e.why || !strstr(e.why, why))
        fprintf(stderr, "%s: got %d, row +%llu byte %zu \"%s\"; expected -ENOTSUP at +%llu "
                "byte %zu \"%s\"\n", name, r, (unsigned long long)e.pc, e.at,
                e.why ? e.why : "", (unsigned long long)pc, at, why);
    CHECK_EQ(r, -ENOTSUP);
    CHECK_EQ(e.pc, pc);
    CHECK_EQ(e.at, at);
    CHECK(e.why && strstr(e.why, why));
}

static void test_frame_pointer(void)
{
    struct jh__func f = { .start = 0x10000, .size = 32, .name = "f",
                          .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = 1, .fp_set_end = 4 };
    uint8_t out[64];
    size_t n = 0;
    CHECK_EQ(encode(&f, out, &n, NULL), 8);
    static const uint8_t want[8] = { 0x01, 0x04, 0x02, 0x05, 0x04, 0x03, 0x01, 0x50 };
    CHECK(n == 8 && !memcmp(out, want, 8));
    static const char *const rd[] = { "PrologSize: 4", "FrameRegister: RBP", "FrameOffset: 0x0",
        "0x04: SET_FPREG reg=RBP, offset=0x0", "0x01: PUSH_NONVOL reg=RBP", NULL };
    agree("frame pointer", &f, "\tpush %rbp\n\t.seh_pushreg %rbp\n\tmov %rsp,%rbp\n"
          "\t.seh_setframe %rbp, 0", rd);

    /* the same frame said in CFI, as GCC says it, epilogue rows included */
    static const uint8_t cfi[] = { ADV(1), CFA_OFF(16), SAVE(RBP, 2), ADV(3), 0x0d, RBP,
                                   ADV(20), 0x0a, 0x0c, 7, 8, ADV(1), 0x0b };
    struct jh__func g = cfi_func(cfi, sizeof cfi, 32);
    agree("frame pointer in CFI", &g, "\tpush %rbp\n\t.seh_pushreg %rbp\n\tmov %rsp,%rbp\n"
          "\t.seh_setframe %rbp, 0", NULL);

    struct jh__func none = { .start = 0x10000, .size = 8, .name = "leaf" };
    CHECK_EQ(encode(&none, out, &n, NULL), 0);
    f.fp_push_end = 0;
    CHECK_EQ(encode(&f, out, &n, NULL), -EINVAL);
    f.fp_push_end = 1;
    f.fp_set_end = 300;
    f.size = 400;
    refused("long frame-pointer prologue", &f, 300, 0, "longer than 255");
}

static void test_cfi_prologues(void)
{
    /* push rbx; push rsi; sub rsp,40 */
    static const uint8_t pushes[] = { ADV(1), CFA_OFF(16), SAVE(RBX, 2), ADV(1), CFA_OFF(24),
                                      SAVE(RSI, 3), ADV(4), CFA_OFF(64) };
    struct jh__func f = cfi_func(pushes, sizeof pushes, 64);
    static const char *const rd[] = { "PrologSize: 6", "0x06: ALLOC_SMALL size=40",
        "0x02: PUSH_NONVOL reg=RSI", "0x01: PUSH_NONVOL reg=RBX", NULL };
    agree("pushes and an allocation", &f, "\tpush %rbx\n\t.seh_pushreg %rbx\n\tpush %rsi\n"
          "\t.seh_pushreg %rsi\n\tsub $40,%rsp\n\t.seh_stackalloc 40", rd);

    /* MSVC's shape: push rbp; push rdi; sub rsp,64; lea rbp,[rsp+32]; movaps [rsp+16],xmm6 */
    static const uint8_t msvc[] = { ADV(1), CFA_OFF(16), SAVE(RBP, 2), ADV(1), CFA_OFF(24),
                                    SAVE(RDI, 3), ADV(4), CFA_OFF(88), ADV(5), 0x0c, RBP, 56,
                                    ADV(5), 0x05, XMM6, 9 };
    f = cfi_func(msvc, sizeof msvc, 64);
    static const char *const rd2[] = { "FrameRegister: RBP", "FrameOffset: 0x2",
        "0x10: SAVE_XMM128 reg=XMM6, offset=0x10", "0x0B: SET_FPREG reg=RBP, offset=0x20",
        "0x06: ALLOC_SMALL size=64", NULL };
    agree("frame register at an offset, an xmm save", &f, "\tpush %rbp\n\t.seh_pushreg %rbp\n"
          "\tpush %rdi\n\t.seh_pushreg %rdi\n\tsub $0x40,%rsp\n\t.seh_stackalloc 64\n"
          "\tlea 0x20(%rsp),%rbp\n\t.seh_setframe %rbp, 32\n\tmovaps %xmm6,0x10(%rsp)\n"
          "\t.seh_savexmm %xmm6, 16", rd2);

    /* sub rsp,0x1000; mov [rsp+8],rbx; mov [rsp+16],r12: CFA offsets and saves in LEB128 */
    static const uint8_t saves_ok[] = { ADV(7), 0x0e, 0x88, 0x20, ADV(5), 0x80 | RBX, 0x80, 0x04,
                                        ADV(5), 0x80 | R12, 0xff, 0x03 };
    f = cfi_func(saves_ok, sizeof saves_ok, 64);
    static const char *const rd3[] = { "ALLOC_LARGE size=4096", "SAVE_NONVOL reg=RBX, offset=0x8",
        "SAVE_NONVOL reg=R12, offset=0x10", NULL };
    agree("a large allocation and mov-saves", &f, "\tsub $0x1000,%rsp\n\t.seh_stackalloc 4096\n"
          "\tmov %rbx,8(%rsp)\n\t.seh_savereg %rbx, 8\n\tmov %r12,16(%rsp)\n"
          "\t.seh_savereg %r12, 16", rd3);

    /* sub rsp,0x100000: ALLOC_LARGE with an unscaled 32-bit size */
    static const uint8_t huge[] = { ADV(7), 0x0e, 0x88, 0x80, 0x40 };
    f = cfi_func(huge, sizeof huge, 64);
    static const char *const rd4[] = { "ALLOC_LARGE size=1048576", NULL };
    agree("an allocation past 512 KiB", &f, "\tsub $0x100000,%rsp\n\t.seh_stackalloc 0x100000",
          rd4);
}

static void test_refusals(void)
{
    struct jh__func f;
    /* push rbp; mov rbp,rsp; push rbx: rbx lands below the frame base */
    static const uint8_t late_push[] = { ADV(1), CFA_OFF(16), SAVE(RBP, 2), ADV(3), 0x0d, RBP,
                                         ADV(1), SAVE(RBX, 3) };
    f = cfi_func(late_push, sizeof late_push, 32);
    refused("push after the frame pointer", &f, 5, 9, "below the frame base");

    /* push rbx; sub rsp,32 ... the body pushes again after the stack shrank */
    static const uint8_t body_push[] = { ADV(1), CFA_OFF(16), SAVE(RBX, 2), ADV(4), CFA_OFF(48),
                                         ADV(10), CFA_OFF(40), ADV(2), CFA_OFF(56) };
    f = cfi_func(body_push, sizeof body_push, 64);
    refused("the CFA moving in the body", &f, 15, 9, "after the prologue");

    static const uint8_t at_entry[] = { CFA_OFF(16), ADV(1) };
    f = cfi_func(at_entry, sizeof at_entry, 16);
    refused("a row at entry", &f, 0, 0, "before the first instruction");

    static const uint8_t expr[] = { ADV(1), 0x10, RBX, 2, 0x77, 0x08 };
    f = cfi_func(expr, sizeof expr, 16);
    refused("an expression", &f, 1, 1, "DWARF expression");

    static const uint8_t in_reg[] = { ADV(1), 0x09, RBX, 0 };
    f = cfi_func(in_reg, sizeof in_reg, 16);
    refused("a register in a register", &f, 1, 1, "another register");

    static const uint8_t mov_then_sub[] = { ADV(4), CFA_OFF(40), ADV(5), SAVE(RBX, 4), ADV(4),
                                            CFA_OFF(72) };
    f = cfi_func(mov_then_sub, sizeof mov_then_sub, 32);
    refused("rsp moved after a mov-save", &f, 13, 7, "after a register was saved");

    static const uint8_t far[] = { 0x02, 0xff, 0x02, 0x30, CFA_OFF(16) };  /* advance 255+48 */
    f = cfi_func(far, sizeof far, 400);
    refused("a long prologue", &f, 303, 4, "longer than 255");

    static const uint8_t bad[] = { ADV(1), 0x0e };     /* operand cut short */
    f = cfi_func(bad, sizeof bad, 16);
    uint8_t out[64];
    size_t n;
    CHECK_EQ(encode(&f, out, &n, NULL), -EINVAL);
}

/* JH_UNWIND_FRAMELESS goes through the same translation as CFI: a function entered by a
 * call (CFA = rsp+8) that allocates its frame is expressible; code running inside a
 * host's frame (a LuaJIT trace: CFA = rsp+96 at its first byte, registers the host saved)
 * has no Windows form. */
static void test_frameless(void)
{
    static const struct jh_cfa_step steps[] = { { 4, 56 }, { 40, 8 } };
    struct jh__func f = { .start = 0x10000, .size = 64, .name = "f",
                          .unwind = JH_UNWIND_FRAMELESS, .cfa_offset = 8, .cfa_steps = steps,
                          .ncfa_steps = 2 };
    static const char *const rd[] = { "PrologSize: 4", "0x04: ALLOC_SMALL size=48", NULL };
    agree("frameless: an allocation, freed before the end", &f,
          "\tsub $48,%rsp\n\t.seh_stackalloc 48", rd);
    static const struct jh_saved_reg regs[] = { { RBX, -16 } };
    struct jh__func leaf = { .start = 0x10000, .size = 16, .name = "leaf",
                             .unwind = JH_UNWIND_FRAMELESS, .cfa_offset = 8 };
    uint8_t out[64];
    size_t n;
    CHECK_EQ(encode(&leaf, out, &n, NULL), 0);     /* nothing to say: a leaf */
    static const struct jh_cfa_step tsteps[] = { { 4, 112 } };
    struct jh__func trace = { .start = 0x10000, .size = 64, .name = "trace",
                              .unwind = JH_UNWIND_FRAMELESS, .cfa_offset = 96,
                              .cfa_steps = tsteps, .ncfa_steps = 1, .saved_regs = regs,
                              .nsaved_regs = 1 };
    refused("code inside a host frame", &trace, 0, 0, "before the first instruction");
}

int main(void)
{
    if (!mkdtemp(tmpdir))
        SKIP("no temporary directory");
    int st;
    free(capture("x86_64-w64-mingw32-as --version", &st));
    have_as = st == 0;
    free(capture("llvm-readobj-14 --version", &st));
    have_readobj = st == 0;
    test_frame_pointer();
    test_cfi_prologues();
    test_refusals();
    test_frameless();
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    free(capture(cmd, NULL));
    if (!have_as)
        SKIP_PART("x86_64-w64-mingw32-as not installed (Debian package binutils-mingw-w64-x86-64): "
                  "not compared with GNU as");
    else if (!have_readobj)
        SKIP_PART("llvm-readobj-14 not installed (Debian package llvm-14): not decoded");
    return check_done();
}
