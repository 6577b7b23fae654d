/*
 * test_cfi_frameless.c — the unwind descriptions a JIT fills without DWARF, against the
 * real decoders and the real unwinder:
 *   1. JH_UNWIND_FRAMELESS (CFA = sp + constant, changed at given offsets; callee-saved
 *      registers at fixed CFA offsets), JH_UNWIND_FRAME_POINTER with epilogues, and a
 *      personality + LSDA CIE, decoded by readelf and llvm-dwarfdump;
 *   2. frameless JIT code running inside a host frame it was jumped into (the way LuaJIT
 *      runs a trace inside its interpreter's frame), hand-assembled: _Unwind_Backtrace from
 *      a C callback walks out of the JIT code straight to the host's caller, and
 *      _Unwind_GetGR gives that caller's rbx, r14 and r15 back although the JIT code
 *      clobbered them (they are where the host saved them);
 *   3. a frame-pointer function stopped between `leave` and `ret` (an int3 there, the
 *      backtrace taken in the SIGTRAP handler, as a profiler's sample would be): with the
 *      epilogue described the next frame is the real caller; without, it is not.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "capture.h"
#include "check.h"
#include "fmt/cfi.h"
#include "fmt/elf_image.h"

/* libgcc's unwinder, declared here because -Isrc makes <unwind.h> find another header. */
void __register_frame(void *);
void __deregister_frame(void *);
struct _Unwind_Context;
int _Unwind_Backtrace(int (*fn)(struct _Unwind_Context *, void *), void *arg);
uintptr_t _Unwind_GetIP(struct _Unwind_Context *);
uintptr_t _Unwind_GetGR(struct _Unwind_Context *, int);

static char tmpdir[] = "/tmp/jh-test-cfi-frameless.XXXXXX";

#define EXPECT_IN(hay, needle) do { check_count++; if (!(hay) || !strstr((hay), (needle))) { \
    check_failures++; fprintf(stderr, "%s:%d: expected in output: \"%s\"\n%s\n", __FILE__, \
    __LINE__, (needle), (hay) ? (hay) : "(no output)"); } } while (0)

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

/* ---- 1. the decoders -------------------------------------------------------------------- */
static const struct jh_cfa_step trace_steps[] = { { 4, 96 }, { 40, 80 } };
static const struct jh_saved_reg vm_regs[] = { { 6, -16 }, { 3, -24 }, { 15, -32 }, { 14, -40 } };
static const struct jh_epilogue epis[] = { { 20, 21 }, { 30, 32 } };

static void test_decoders(void)
{
    struct jh__func f[3] = {
        { .name = "trace", .start = 0x401000, .size = 45, .unwind = JH_UNWIND_FRAMELESS,
          .cfa_offset = 80, .cfa_steps = trace_steps, .ncfa_steps = 2,
          .saved_regs = vm_regs, .nsaved_regs = 4 },
        { .name = "fp", .start = 0x401100, .size = 32, .unwind = JH_UNWIND_FRAME_POINTER,
          .fp_push_end = 1, .fp_set_end = 4, .epilogues = epis, .nepilogues = 2,
          .personality = 0x7f0000001000ull, .lsda = 0x7f0000002000ull },
        { .name = "leaf", .start = 0x401200, .size = 16, .unwind = JH_UNWIND_FRAMELESS,
          .cfa_offset = 8 },
    };
    const struct jh__func *fp[3] = { &f[0], &f[1], &f[2] };
    /* An ELF image holding them (symbols, .eh_frame at its real address) is what
     * readelf and llvm-dwarfdump read best; the process flavour (absolute, personality)
     * goes into a second one. */
    struct jh__elf_spec spec = { .fns = fp, .nfns = 3, .flags = JH__ELF_NO_DWARF };
    struct jh__buf img = { 0 };
    struct jh__elf_layout lay;
    CHECK_EQ(jh__elf_image(&img, &spec, &lay), 0);
    CHECK_EQ(lay.nfde, 3);
    char path[256];
    snprintf(path, sizeof path, "%s/frameless.elf", tmpdir);
    FILE *fo = fopen(path, "wb");
    CHECK(fo && fwrite(img.p, 1, img.len, fo) == img.len);
    if (fo)
        fclose(fo);

    char *out = run_cmd("readelf --debug-dump=frames-interp %s 2>&1", path);
    /* the trace: CFA rsp+80 at entry, +96 after its sub, +80 again before the tail jump;
     * the interpreter's saved registers throughout */
    EXPECT_IN(out, "pc=0000000000401000..000000000040102d");
    EXPECT_IN(out, "0000000000401000 rsp+80   c-24  c-16  c-40  c-32  c-8");
    EXPECT_IN(out, "0000000000401004 rsp+96   c-24  c-16  c-40  c-32  c-8");
    EXPECT_IN(out, "0000000000401028 rsp+80   c-24  c-16  c-40  c-32  c-8");
    /* the frame-pointer function: rbp+16 in the body, rsp+8 (rbp restored) in each
     * epilogue tail, rbp+16 again after the first one */
    EXPECT_IN(out, "0000000000401104 rbp+16   c-16  c-8");
    EXPECT_IN(out, "0000000000401114 rsp+8    u     c-8");
    EXPECT_IN(out, "0000000000401115 rbp+16   c-16  c-8");
    EXPECT_IN(out, "000000000040111e rsp+8    u     c-8");
    /* the leaf: the CIE's rule only */
    EXPECT_IN(out, "pc=0000000000401200..0000000000401210");
    CHECK(out && !strstr(out, "Warning") && !strstr(out, "warning"));
    free(out);

    out = run_cmd("llvm-dwarfdump-14 --eh-frame %s 2>&1", path);
    EXPECT_IN(out, "0x401000: CFA=RSP+80: RBX=[CFA-24], RBP=[CFA-16], R14=[CFA-40], "
                   "R15=[CFA-32], RIP=[CFA-8]");
    EXPECT_IN(out, "0x401004: CFA=RSP+96:");
    EXPECT_IN(out, "0x401028: CFA=RSP+80:");
    EXPECT_IN(out, "0x401114: CFA=RSP+8: RIP=[CFA-8]");
    EXPECT_IN(out, "0x401115: CFA=RBP+16: RBP=[CFA-16], RIP=[CFA-8]");
    CHECK(out && !strstr(out, "error") && !strstr(out, "warning"));
    free(out);

    /* The process flavour with personalities: "zPLR", the routine and each FDE's LSDA. */
    struct jh__buf ab = { 0 };
    struct jh__cfi_opts oa = { .arch = &jh__arch_x86_64, .ptr = JH__CFI_ABS, .personality = true };
    CHECK_EQ(jh__cfi_eh_frame(&ab, &oa, f, 3, NULL), 3);
    CHECK_EQ(ab.len, jh__cfi_eh_frame_size(&oa, f, 3));
    /* (readelf needs the run in a section at its address: the absolute flavour is checked
     * byte by byte here, and by the unwinder in unwind_personality.c.) */
    const uint8_t *p = ab.p;
    CHECK_EQ(memcmp(p + 9, "zR", 3), 0);                    /* the plain CIE first */
    size_t second = 4 + p[0];
    CHECK_EQ(memcmp(p + second + 9, "zPLR", 5), 0);
    uint64_t pers;
    memcpy(&pers, p + second + 9 + 5 + 4 + 1, 8);           /* after caf, daf, ra, len, enc */
    CHECK_EQ(pers, 0x7f0000001000ull);
    jh__buf_free(&img);
    jh__buf_free(&ab);
}

/* ---- 2. frameless JIT code inside a host frame --------------------------------------------- */
#define MAXF 64
static uintptr_t trace_ip[MAXF], trace_rbx[MAXF], trace_r14[MAXF], trace_r15[MAXF];
static int ntrace;

static int collect(struct _Unwind_Context *uc, void *arg)
{
    (void)arg;
    if (ntrace < MAXF) {
        trace_ip[ntrace] = _Unwind_GetIP(uc);
        trace_rbx[ntrace] = _Unwind_GetGR(uc, 3);
        trace_r14[ntrace] = _Unwind_GetGR(uc, 14);
        trace_r15[ntrace] = _Unwind_GetGR(uc, 15);
        ntrace++;
    }
    return 0;
}

__attribute__((noinline)) static void callback(void)
{
    ntrace = 0;
    _Unwind_Backtrace(collect, NULL);
}

static size_t put(uint8_t *p, size_t n, const uint8_t *b, size_t len)
{
    memcpy(p + n, b, len);
    return n + len;
}

static size_t put_movabs_rax(uint8_t *p, size_t n, uintptr_t v)
{
    p[n++] = 0x48;
    p[n++] = 0xb8;
    memcpy(p + n, &v, 8);
    return n + 8;
}

/*
 * shim (at 0):   push rbx; push r14; push r15          CFA rsp+16, +24, +32
 *                mov ebx,0x1111; mov r14d,0x2222; mov r15d,0x3333
 *                mov rax,host; call rax                 (CFA rsp+32: 8-aligned call is fine)
 *                pop r15; pop r14; pop rbx; ret
 * host (at 64):  push rbp; push rbx; push r15; push r14; sub rsp,40     CFA rsp+80
 *                mov rax,jit; jmp rax                   (never returns here)
 *      tail:     add rsp,40; pop r14; pop r15; pop rbx; pop rbp; ret
 * jit (at 128):  sub rsp,16                             CFA rsp+96
 *                xor ebx,ebx; xor r14d,r14d; xor r15d,r15d     (clobbers the host's values)
 *                mov rax,callback; call rax
 *                add rsp,16                             CFA rsp+80
 *                mov rax,tail; jmp rax
 */
struct layout {
    size_t shim_len, host_len, jit_len, after_call_in_shim, tail, jit_add, jit_sub_end;
};

static void emit_frameless(uint8_t *m, struct layout *L)
{
    static const uint8_t shim_pre[] = { 0x53, 0x41, 0x56, 0x41, 0x57,
                                        0xbb, 0x11, 0x11, 0, 0, 0x41, 0xbe, 0x22, 0x22, 0, 0,
                                        0x41, 0xbf, 0x33, 0x33, 0, 0 };
    static const uint8_t shim_post[] = { 0x41, 0x5f, 0x41, 0x5e, 0x5b, 0xc3 };
    static const uint8_t host_pre[] = { 0x55, 0x53, 0x41, 0x57, 0x41, 0x56,
                                        0x48, 0x83, 0xec, 0x28 };
    static const uint8_t host_tail[] = { 0x48, 0x83, 0xc4, 0x28, 0x41, 0x5e, 0x41, 0x5f, 0x5b,
                                         0x5d, 0xc3 };
    static const uint8_t jit_pre[] = { 0x48, 0x83, 0xec, 0x10, 0x31, 0xdb, 0x45, 0x31, 0xf6,
                                       0x45, 0x31, 0xff };
    static const uint8_t jit_add[] = { 0x48, 0x83, 0xc4, 0x10 };
    static const uint8_t call_rax[] = { 0xff, 0xd0 }, jmp_rax[] = { 0xff, 0xe0 };
    uint8_t *shim = m, *host = m + 64, *jit = m + 128;
    size_t n = put(shim, 0, shim_pre, sizeof shim_pre);
    n = put_movabs_rax(shim, n, (uintptr_t)host);
    n = put(shim, n, call_rax, 2);
    L->after_call_in_shim = n;
    n = put(shim, n, shim_post, sizeof shim_post);
    L->shim_len = n;
    n = put(host, 0, host_pre, sizeof host_pre);
    n = put_movabs_rax(host, n, (uintptr_t)jit);
    n = put(host, n, jmp_rax, 2);
    L->tail = n;
    n = put(host, n, host_tail, sizeof host_tail);
    L->host_len = n;
    n = put(jit, 0, jit_pre, sizeof jit_pre);
    L->jit_sub_end = 4;
    n = put_movabs_rax(jit, n, (uintptr_t)callback);
    n = put(jit, n, call_rax, 2);
    n = put(jit, n, jit_add, sizeof jit_add);
    L->jit_add = n;
    n = put_movabs_rax(jit, n, (uintptr_t)host + L->tail);
    n = put(jit, n, jmp_rax, 2);
    L->jit_len = n;
}

static int frame_in(uintptr_t lo, size_t len)
{
    for (int i = 0; i < ntrace; i++)
        if (trace_ip[i] > lo && trace_ip[i] <= lo + len)
            return i;
    return -1;
}

static void test_frameless_unwind(void)
{
    uint8_t *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(m != MAP_FAILED);
    if (m == MAP_FAILED)
        return;
    struct layout L;
    emit_frameless(m, &L);
    /* The shim and the host describe their pushes as steps; their saved registers are
     * their callers' (the shim's caller is C: rbx, r14, r15 belong to it). */
    static const struct jh_cfa_step shim_steps[] = { { 1, 16 }, { 3, 24 }, { 5, 32 } };
    static const struct jh_saved_reg shim_regs[] = { { 3, -16 }, { 14, -24 }, { 15, -32 } };
    static const struct jh_cfa_step host_steps[] = { { 1, 16 }, { 2, 24 }, { 4, 32 },
                                                     { 6, 40 }, { 10, 80 } };
    struct jh_cfa_step jit_steps[2] = { { (uint32_t)L.jit_sub_end, 96 },
                                        { (uint32_t)L.jit_add, 80 } };
    struct jh__func f[3] = {
        { .start = (uintptr_t)m, .size = L.shim_len, .unwind = JH_UNWIND_FRAMELESS,
          .cfa_offset = 8, .cfa_steps = shim_steps, .ncfa_steps = 3, .saved_regs = shim_regs,
          .nsaved_regs = 3 },
        { .start = (uintptr_t)m + 64, .size = L.host_len, .unwind = JH_UNWIND_FRAMELESS,
          .cfa_offset = 8, .cfa_steps = host_steps, .ncfa_steps = 5, .saved_regs = vm_regs,
          .nsaved_regs = 4 },
        { .start = (uintptr_t)m + 128, .size = L.jit_len, .unwind = JH_UNWIND_FRAMELESS,
          .cfa_offset = 80, .cfa_steps = jit_steps, .ncfa_steps = 2, .saved_regs = vm_regs,
          .nsaved_regs = 4 },
    };
    struct jh__buf b = { 0 };
    struct jh__cfi_opts o = { .ptr = JH__CFI_ABS };
    CHECK_EQ(jh__cfi_eh_frame(&b, &o, f, 3, NULL), 3);
    __register_frame(b.p);
    void (*shim)(void) = (void (*)(void))(void *)m;
    shim();
    int j = frame_in((uintptr_t)m + 128, L.jit_len);
    int s = frame_in((uintptr_t)m, L.shim_len);
    CHECK(j >= 0);
    CHECK_EQ(s, j + 1);                         /* straight out to the host's caller */
    CHECK_EQ(frame_in((uintptr_t)m + 64, L.host_len), -1);
    if (s >= 0) {
        CHECK_EQ(trace_ip[s], (uintptr_t)m + L.after_call_in_shim);
        CHECK_EQ(trace_rbx[s], 0x1111);         /* from the host's save area */
        CHECK_EQ(trace_r14[s], 0x2222);
        CHECK_EQ(trace_r15[s], 0x3333);
    }
    CHECK(s >= 0 && ntrace > s + 1);            /* and on into this test's C frames */
    __deregister_frame(b.p);
    jh__buf_free(&b);
    munmap(m, 4096);
}

/* ---- 3. a sample between `leave` and `ret` ------------------------------------------------- */
static volatile int in_handler;

static void on_trap(int sig)
{
    (void)sig;
    in_handler = 1;
    callback();
}

__attribute__((noinline)) static long call_jit(long (*fn)(void))
{
    long r = fn();
    __asm__ volatile("" ::: "memory");
    return r + 1;
}

static void test_epilogue(void)
{
    uint8_t *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(m != MAP_FAILED);
    if (m == MAP_FAILED)
        return;
    /* push rbp; mov rbp,rsp; push rbx; mov eax,7; mov rbx,[rbp-8]; leave; int3; ret
     * (the push keeps rbp != rsp in the body, as in any frame with locals) */
    static const uint8_t fn[] = { 0x55, 0x48, 0x89, 0xe5, 0x53, 0xb8, 7, 0, 0, 0,
                                  0x48, 0x8b, 0x5d, 0xf8, 0xc9, 0xcc, 0xc3 };
    memcpy(m, fn, sizeof fn);
    struct jh_epilogue epi = { 15, 17 };        /* after leave, up to after ret */
    struct sigaction sa = { .sa_handler = on_trap };
    sigaction(SIGTRAP, &sa, NULL);
    for (int described = 0; described < 2; described++) {
        struct jh__func f = { .start = (uintptr_t)m, .size = sizeof fn,
                              .unwind = JH_UNWIND_FRAME_POINTER, .fp_push_end = 1,
                              .fp_set_end = 4, .epilogues = described ? &epi : NULL,
                              .nepilogues = described ? 1 : 0 };
        struct jh__buf b = { 0 };
        struct jh__cfi_opts o = { .ptr = JH__CFI_ABS };
        CHECK_EQ(jh__cfi_eh_frame(&b, &o, &f, 1, NULL), 1);
        __register_frame(b.p);
        callback();         /* libgcc sorts the new object now, not in the signal handler
                               (malloc there: TSan objects, rightly) */
        in_handler = 0;
        CHECK_EQ(call_jit((long (*)(void))(void *)m), 8);
        CHECK(in_handler);
        /* the interrupted frame's pc is exact: the ret itself */
        int k = -1;
        for (int i = 0; i < ntrace; i++)
            if (trace_ip[i] == (uintptr_t)m + 16)
                k = i;
        CHECK(k >= 0);
        int caller_next = k >= 0 && k + 1 < ntrace &&
                          trace_ip[k + 1] > (uintptr_t)call_jit &&
                          trace_ip[k + 1] < (uintptr_t)call_jit + 256;
        if (described)
            CHECK(caller_next);         /* ret -> call_jit, as the hardware will */
        else
            CHECK(!caller_next);        /* rbp is the caller's already: call_jit skipped */
        __deregister_frame(b.p);
        jh__buf_free(&b);
    }
    signal(SIGTRAP, SIG_DFL);
    munmap(m, 4096);
}

int main(void)
{
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_decoders();
    test_frameless_unwind();
    test_epilogue();
    if (!getenv("JH_KEEP")) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", tmpdir);
    }
    return check_done();
}
