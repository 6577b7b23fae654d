/*
 * test_cfi.c — the CFI encoder against the real decoders and the real unwinder:
 *   1. runs wrapped in a minimal ELF, decoded by `readelf --debug-dump=frames[-interp]` and
 *      `llvm-dwarfdump-14 --eh-frame`; we look for the rules a user relies on;
 *   2. hand-assembled x86-64 code (one frame-pointer function, one raw-CFI function)
 *      registered with libgcc's __register_frame, then _Unwind_Backtrace from a C callback
 *      must walk through both JIT frames back to the C caller, in both pointer flavours;
 *   3. the error paths (bad descriptions, pc-relative overflow, overlap).
 */
#include <elf.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "capture.h"
#include "check.h"
#include "elf_wrap.h"
#include "fmt/cfi.h"

/* libgcc's unwinder, declared here because -Isrc makes <unwind.h> find src/unwind.h.
 * _Unwind_Reason_Code is an enum: int on every ABI we build for. */
void __register_frame(void *);
void __deregister_frame(void *);
struct _Unwind_Context;
int _Unwind_Backtrace(int (*fn)(struct _Unwind_Context *, void *), void *arg);
uintptr_t _Unwind_GetIP(struct _Unwind_Context *);
#define URC_NO_REASON 0

static char tmpdir[] = "/tmp/jh-test-cfi.XXXXXX";

/* The output of a decoder run on one file (fmt holds one %s), NULL if it failed. */
static char *run_cmd(const char *fmt, const char *arg)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, fmt, arg);
    int st;
    char *out = capture(cmd, &st);
    if (out && st != 0) {
        fprintf(stderr, "command failed (%d): %s\n%s\n", st, cmd, out);
        free(out);
        return NULL;
    }
    return out;
}

#define EXPECT_IN(hay, needle) do { check_count++; if (!(hay) || !strstr((hay), (needle))) { \
    check_failures++; fprintf(stderr, "%s:%d: expected in output: \"%s\"\n%s\n", __FILE__, \
    __LINE__, (needle), (hay) ? (hay) : "(no output)"); } } while (0)

static void test_decoders(void)
{
    /* Three functions, deliberately out of order; one without unwind info; one with a long
     * prologue so advance_loc2 is used; one raw-CFI. */
    static const uint8_t raw[] = { 0x44, 0x0e, 0x10, 0x4c, 0x0e, 0x08 }; /* adv 4, off 16, adv 12, off 8 */
    struct jh__func f[4] = {
        { .start = 0x402000, .size = 0x400, .unwind = JH_UNWIND_FRAME_POINTER,
          .fp_push_end = 300, .fp_set_end = 303 },
        { .start = 0x401000, .size = 0x20, .unwind = JH_UNWIND_FRAME_POINTER,
          .fp_push_end = 1, .fp_set_end = 4 },
        { .start = 0x401100, .size = 0x10, .unwind = JH_UNWIND_NONE },
        { .start = 0x401200, .size = 0x40, .unwind = JH_UNWIND_CFI, .cfi = raw,
          .cfi_len = sizeof raw },
    };
    uint64_t eh_addr = 0x500000;
    struct jh__cfi_opts o = { .arch = &jh__arch_x86_64, .ptr = JH__CFI_PCREL, .addr = eh_addr };
    struct jh__buf eh = { 0 }, hdr = { 0 };
    struct jh__cfi_index idx[4];
    size_t want = jh__cfi_eh_frame_size(&o, f, 4);
    int n = jh__cfi_eh_frame(&eh, &o, f, 4, idx);
    CHECK_EQ(n, 3);
    CHECK_EQ(eh.len, want);
    CHECK_EQ(eh.len % 8, 4);                    /* 8-aligned records + 4-byte terminator */
    CHECK_EQ(idx[0].pc, 0x401000);
    CHECK_EQ(idx[1].pc, 0x401200);
    CHECK_EQ(idx[2].pc, 0x402000);
    CHECK_EQ(idx[0].off, 24);                   /* right after the 24-byte CIE */
    uint64_t hdr_addr = eh_addr + eh.len;
    CHECK_EQ(jh__cfi_eh_frame_hdr(&hdr, hdr_addr, eh_addr, idx, (size_t)n), 0);
    CHECK_EQ(hdr.len, 12 + 8 * 3);

    char path[256];
    snprintf(path, sizeof path, "%s/pcrel.elf", tmpdir);
    CHECK(elf_wrap_eh_frame(path, 0x401000, 0x1400, eh_addr, eh.p, eh.len, hdr_addr, hdr.p,
                    hdr.len) == 0);

    char *out = run_cmd("readelf --debug-dump=frames %s 2>&1", path);
    EXPECT_IN(out, "Augmentation:          \"zR\"");
    EXPECT_IN(out, "Data alignment factor: -8");
    EXPECT_IN(out, "Return address column: 16");
    EXPECT_IN(out, "DW_CFA_def_cfa: r7 (rsp) ofs 8");
    EXPECT_IN(out, "DW_CFA_offset: r16 (rip) at cfa-8");
    EXPECT_IN(out, "pc=0000000000401000..0000000000401020");
    EXPECT_IN(out, "DW_CFA_advance_loc: 1 to 0000000000401001");
    EXPECT_IN(out, "DW_CFA_def_cfa_offset: 16");
    EXPECT_IN(out, "DW_CFA_offset: r6 (rbp) at cfa-16");
    EXPECT_IN(out, "DW_CFA_advance_loc: 3 to 0000000000401004");
    EXPECT_IN(out, "DW_CFA_def_cfa_register: r6 (rbp)");
    EXPECT_IN(out, "pc=0000000000401200..0000000000401240");
    EXPECT_IN(out, "DW_CFA_advance_loc: 12 to 0000000000401210");
    EXPECT_IN(out, "pc=0000000000402000..0000000000402400");
    EXPECT_IN(out, "DW_CFA_advance_loc2: 300 to 000000000040212c");
    CHECK(out && !strstr(out, "401100"));      /* JH_UNWIND_NONE: no FDE */
    CHECK(out && !strstr(out, "Warning") && !strstr(out, "warning"));
    free(out);

    /* The interpreted table: after `mov rbp,rsp` the CFA is rbp+16. */
    out = run_cmd("readelf --debug-dump=frames-interp %s 2>&1", path);
    EXPECT_IN(out, "0000000000401004 rbp+16   c-16  c-8");
    EXPECT_IN(out, "0000000000401001 rsp+16   c-16  c-8");
    free(out);

    out = run_cmd("llvm-dwarfdump-14 --eh-frame %s 2>&1", path);
    EXPECT_IN(out, "CIE");
    EXPECT_IN(out, "Augmentation:          \"zR\"");
    EXPECT_IN(out, "pc=00401000...00401020");
    EXPECT_IN(out, "DW_CFA_def_cfa_register: RBP");
    EXPECT_IN(out, "DW_CFA_offset: RBP -16");
    EXPECT_IN(out, "pc=00402000...00402400");
    EXPECT_IN(out, "0x401004: CFA=RBP+16: RBP=[CFA-16], RIP=[CFA-8]");
    EXPECT_IN(out, "0x401204: CFA=RSP+16: RIP=[CFA-8]");
    CHECK(out && !strstr(out, "error") && !strstr(out, "warning"));
    free(out);

    /* The absolute flavour decodes to the same ranges. */
    struct jh__buf ab = { 0 };
    struct jh__cfi_opts oa = { .arch = &jh__arch_x86_64, .ptr = JH__CFI_ABS };
    CHECK_EQ(jh__cfi_eh_frame(&ab, &oa, f, 4, NULL), 3);
    snprintf(path, sizeof path, "%s/abs.elf", tmpdir);
    CHECK(elf_wrap_eh_frame(path, 0x401000, 0x1400, 0x7f0000000000ull, ab.p, ab.len, 0, NULL, 0) == 0);
    out = run_cmd("readelf --debug-dump=frames %s 2>&1", path);
    EXPECT_IN(out, "pc=0000000000401000..0000000000401020");
    EXPECT_IN(out, "pc=0000000000402000..0000000000402400");
    EXPECT_IN(out, "DW_CFA_def_cfa_register: r6 (rbp)");
    free(out);
    out = run_cmd("llvm-dwarfdump-14 --eh-frame %s 2>&1", path);
    EXPECT_IN(out, "pc=00401000...00401020");
    free(out);

    /* perf's jitdump layout: text at 0x80, .eh_frame at ALIGN_8(0x80 + size). */
    struct jh__buf pu = { 0 };
    size_t hsz = 0;
    struct jh__func g = f[1];
    g.size = 0x23;
    CHECK_EQ(jh__cfi_perf_unwinding(&pu, &g, 0x80, &jh__arch_x86_64, &hsz), 1);
    CHECK_EQ(hsz, 20);
    uint64_t pe = (0x80 + 0x23 + 7) & ~7ull;
    snprintf(path, sizeof path, "%s/perf.elf", tmpdir);
    CHECK(elf_wrap_eh_frame(path, 0x80, 0x23, pe, pu.p, pu.len - hsz, pe + pu.len - hsz,
                    pu.p + pu.len - hsz, hsz) == 0);
    out = run_cmd("readelf --debug-dump=frames %s 2>&1", path);
    EXPECT_IN(out, "pc=0000000000000080..00000000000000a3");
    free(out);
    /* The header's table points back at the FDE and the code. */
    const uint8_t *h = pu.p + pu.len - hsz;
    int32_t ehp, loc, fde;
    memcpy(&ehp, h + 4, 4);
    memcpy(&loc, h + 12, 4);
    memcpy(&fde, h + 16, 4);
    uint64_t ha = pe + pu.len - hsz;
    CHECK_EQ(h[0], 1);
    CHECK_EQ(ha + 4 + (int64_t)ehp, pe);
    CHECK_EQ(ha + (int64_t)loc, 0x80);
    CHECK_EQ(ha + (int64_t)fde, pe + 24);

    jh__buf_free(&eh);
    jh__buf_free(&hdr);
    jh__buf_free(&ab);
    jh__buf_free(&pu);
}

/* ---- real unwinding through hand-assembled JIT frames ------------------------------- */

#define MAXF 64
static uintptr_t trace[MAXF];
static int ntrace;

static int collect(struct _Unwind_Context *uc, void *arg)
{
    (void)arg;
    if (ntrace < MAXF)
        trace[ntrace++] = _Unwind_GetIP(uc);
    return URC_NO_REASON;
}

__attribute__((noinline)) static long callback(void)
{
    ntrace = 0;
    _Unwind_Backtrace(collect, NULL);
    return 42;
}

__attribute__((noinline)) static long call_jit(long (*fn)(void))
{
    long r = fn();
    __asm__ volatile("" ::: "memory");      /* keep the call a call, not a tail jump */
    return r + 1;
}

/* f_cfi: sub rsp,8; mov rax,f_fp; call rax; add rsp,8; ret        (no frame pointer)
 * f_fp:  push rbp; mov rbp,rsp; mov rax,callback; call rax; pop rbp; ret */
static size_t emit_code(uint8_t *p, uintptr_t f_fp, uintptr_t cb, size_t *fp_off)
{
    size_t n = 0;
    static const uint8_t sub8[] = { 0x48, 0x83, 0xec, 0x08 }, add8[] = { 0x48, 0x83, 0xc4, 0x08 };
    memcpy(p + n, sub8, 4); n += 4;
    p[n++] = 0x48; p[n++] = 0xb8; memcpy(p + n, &f_fp, 8); n += 8;
    p[n++] = 0xff; p[n++] = 0xd0;
    memcpy(p + n, add8, 4); n += 4;
    p[n++] = 0xc3;
    while (n % 16) p[n++] = 0xcc;
    *fp_off = n;
    p[n++] = 0x55;
    p[n++] = 0x48; p[n++] = 0x89; p[n++] = 0xe5;
    p[n++] = 0x48; p[n++] = 0xb8; memcpy(p + n, &cb, 8); n += 8;
    p[n++] = 0xff; p[n++] = 0xd0;
    p[n++] = 0x5d;
    p[n++] = 0xc3;
    return n;
}

static int in(uintptr_t x, uintptr_t lo, size_t len) { return x >= lo && x < lo + len; }

/* Index of the first frame after frame `after` in [lo, lo+len), or -1. The window for a C
 * function is a guess at its size, which may take in its neighbour (the callback, frame
 * #0, sat 252 bytes past call_jit once): so look for callers only above their callees. */
static int find_frame(int after, uintptr_t lo, size_t len)
{
    for (int i = after + 1; i < ntrace; i++)
        if (in(trace[i], lo, len))
            return i;
    return -1;
}

static void test_unwind(int flavour)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    uint8_t *mem = mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE | PROT_EXEC,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(mem != MAP_FAILED);
    if (mem == MAP_FAILED)
        return;
    uint8_t *code = mem;
    size_t fp_off = 0;
    /* f_fp's address is needed inside f_cfi: it is code + 32 once emitted. */
    size_t len = emit_code(code, (uintptr_t)code + 32, (uintptr_t)callback, &fp_off);
    CHECK_EQ(fp_off, 32);
    /* sub rsp,8 ends at 4: CFA = rsp+16; add rsp,8 ends at 18: CFA = rsp+8 again. */
    static const uint8_t cfi[] = { 0x44, 0x0e, 0x10, 0x4e, 0x0e, 0x08 };
    struct jh__func f[2] = {
        { .start = (uintptr_t)code + fp_off, .size = len - fp_off,
          .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = 1, .fp_set_end = 4 },
        { .start = (uintptr_t)code, .size = 19, .unwind = JH_UNWIND_CFI, .cfi = cfi,
          .cfi_len = sizeof cfi },
    };

    /* Without unwind info, libgcc stops at the first JIT frame. */
    long (*entry)(void) = (long (*)(void))(void *)code;
    CHECK_EQ(call_jit(entry), 43);
    int jf = find_frame(-1, (uintptr_t)code + fp_off, len - fp_off);
    CHECK(jf >= 0);
    CHECK_EQ(find_frame(jf, (uintptr_t)call_jit, 256), -1);

    /* The run: on the heap (absolute) or right after the code (pc-relative). */
    struct jh__buf b = { 0 };
    struct jh__cfi_opts o = { .arch = &jh__arch_x86_64, .ptr = flavour };
    uint8_t *run;
    if (flavour == JH__CFI_PCREL) {
        o.addr = (uintptr_t)mem + pg;
        CHECK_EQ(jh__cfi_eh_frame(&b, &o, f, 2, NULL), 2);
        memcpy(mem + pg, b.p, b.len);
        run = mem + pg;
    } else {
        CHECK_EQ(jh__cfi_eh_frame(&b, &o, f, 2, NULL), 2);
        run = b.p;
    }
    __register_frame(run);
    CHECK_EQ(call_jit(entry), 43);
    int a = find_frame(-1, (uintptr_t)code + fp_off, len - fp_off);
    int c = find_frame(a, (uintptr_t)code, 19);
    int d = find_frame(c, (uintptr_t)call_jit, 256);
    CHECK(a >= 0);
    CHECK(c == a + 1);                  /* f_fp's caller is f_cfi */
    CHECK(d == c + 1);                  /* f_cfi's caller is call_jit */
    if (d < 0 || d != c + 1) {
        fprintf(stderr, "flavour %d trace (code at %p, call_jit at %p):\n", flavour,
                (void *)code, (void *)call_jit);
        for (int i = 0; i < ntrace; i++)
            fprintf(stderr, "  #%d %p\n", i, (void *)trace[i]);
    }
    CHECK(ntrace > d + 1);              /* and beyond, into main */
    __deregister_frame(run);
    jh__buf_free(&b);
    munmap(mem, 4 * pg);
}

/* ---- errors ---------------------------------------------------------------------------- */

static void test_errors(void)
{
    struct jh__buf b = { 0 };
    struct jh__cfi_opts o = { .arch = &jh__arch_x86_64, .ptr = JH__CFI_PCREL, .addr = 0x1000 };
    struct jh__func f = { .start = 0x10000, .size = 16, .unwind = JH_UNWIND_FRAME_POINTER,
                             .fp_push_end = 1, .fp_set_end = 4 };
    struct jh__func bad = f;
    bad.fp_push_end = 0;
    CHECK_EQ(jh__cfi_eh_frame(&b, &o, &bad, 1, NULL), -EINVAL);
    bad = f; bad.fp_set_end = 17;
    CHECK_EQ(jh__cfi_eh_frame(&b, &o, &bad, 1, NULL), -EINVAL);
    bad = f; bad.fp_push_end = 5;
    CHECK_EQ(jh__cfi_eh_frame(&b, &o, &bad, 1, NULL), -EINVAL);
    bad = f; bad.size = 0;
    CHECK_EQ(jh__cfi_eh_frame(&b, &o, &bad, 1, NULL), -EINVAL);
    CHECK_EQ(b.len, 0);

    /* pc-relative but 4 GiB away: refused, buffer unchanged. */
    bad = f; bad.start = 0x100000000ull + 0x1000;
    CHECK_EQ(jh__cfi_eh_frame(&b, &o, &bad, 1, NULL), -ERANGE);
    CHECK_EQ(b.len, 0);
    /* ...which the absolute flavour handles. */
    struct jh__cfi_opts oa = { .arch = &jh__arch_x86_64, .ptr = JH__CFI_ABS };
    CHECK_EQ(jh__cfi_eh_frame(&b, &oa, &bad, 1, NULL), 1);
    b.len = 0;

    /* Overlapping functions. */
    struct jh__func two[2] = { f, f };
    two[1].start += 8;
    CHECK_EQ(jh__cfi_eh_frame(&b, &o, two, 2, NULL), -EINVAL);
    two[1].start += 8;
    CHECK_EQ(jh__cfi_eh_frame(&b, &o, two, 2, NULL), 2);
    b.len = 0;

    /* No functions at all: a CIE and the terminator. */
    CHECK_EQ(jh__cfi_eh_frame(&b, &o, NULL, 0, NULL), 0);
    CHECK_EQ(b.len, 28);
    b.len = 0;

    /* Raw CFI validation. */
    static const uint8_t ok[] = { 0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06, 0x00 };
    static const uint8_t trunc[] = { 0x0c, 0x07 };               /* def_cfa missing offset */
    static const uint8_t far[] = { 0x02, 0x20 };                 /* advance 32 > size 16 */
    static const uint8_t setloc[] = { 0x01, 0, 0, 0, 0 };
    static const uint8_t unk[] = { 0x1f };
    static const uint8_t blk[] = { 0x0f, 0x05, 0x77 };           /* block longer than data */
    static const uint8_t leb[] = { 0x0e, 0x80, 0x80 };           /* unterminated uleb */
    CHECK_EQ(jh__cfi_validate(ok, sizeof ok, 16), 0);
    CHECK_EQ(jh__cfi_validate(trunc, sizeof trunc, 16), -EINVAL);
    CHECK_EQ(jh__cfi_validate(far, sizeof far, 16), -EINVAL);
    CHECK_EQ(jh__cfi_validate(setloc, sizeof setloc, 16), -EINVAL);
    CHECK_EQ(jh__cfi_validate(unk, sizeof unk, 16), -EINVAL);
    CHECK_EQ(jh__cfi_validate(blk, sizeof blk, 16), -EINVAL);
    CHECK_EQ(jh__cfi_validate(leb, sizeof leb, 16), -EINVAL);
    bad = f; bad.unwind = JH_UNWIND_CFI; bad.cfi = far; bad.cfi_len = sizeof far;
    CHECK_EQ(jh__cfi_eh_frame(&b, &o, &bad, 1, NULL), -EINVAL);
    /* a caller that checked its programs (the gdb channel: the core's entries) is taken at
     * its word, the program copied as it is; the other checks stay */
    struct jh__cfi_opts checked = o;
    checked.cfi_checked = true;
    size_t at = b.len;
    CHECK_EQ(jh__cfi_eh_frame(&b, &checked, &bad, 1, NULL), 1);
    CHECK(b.len > at && memmem(b.p + at, b.len - at, far, sizeof far) != NULL);
    bad.cfi_len = 0;
    CHECK_EQ(jh__cfi_eh_frame(&b, &checked, &bad, 1, NULL), -EINVAL);
    bad.cfi = ok; bad.cfi_len = sizeof ok;
    CHECK_EQ(jh__cfi_eh_frame(&b, &o, &bad, 1, NULL), 1);

    /* A header whose table is not sorted is refused. */
    struct jh__cfi_index idx[2] = { { 0x2000, 16, 24 }, { 0x1000, 16, 48 } };
    struct jh__buf h = { 0 };
    CHECK_EQ(jh__cfi_eh_frame_hdr(&h, 0x3000, 0x2800, idx, 2), -EINVAL);
    CHECK_EQ(h.len, 0);
    jh__buf_free(&h);                   /* the room it reserved stays the caller's */

    /* arm64 CIE: RA column 30, CFA = sp. Only sizes here; x86-64 is what we can run. */
    struct jh__cfi_opts o64 = { .arch = &jh__arch_arm64, .ptr = JH__CFI_PCREL, .addr = 0x1000 };
    b.len = 0;
    CHECK_EQ(jh__cfi_eh_frame(&b, &o64, &f, 1, NULL), 1);
    CHECK_EQ(b.len, jh__cfi_eh_frame_size(&o64, &f, 1));
    CHECK_EQ(b.p[4 + 4 + 1 + 3 + 1 + 1], 30);
    jh__buf_free(&b);
}

int main(void)
{
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_errors();
    test_decoders();
    test_unwind(JH__CFI_ABS);
    test_unwind(JH__CFI_PCREL);
    if (getenv("JH_KEEP"))          /* JH_KEEP=1: leave the ELF files for a look */
        return check_done();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return check_done();
}
