/*
 * test_prologue.c — tools/lib/prologue.c, the frame `jitherald run` derives from a
 * function's first bytes when the VM says only its name and range:
 *   1. the prologues real VMs emit, as their bytes were read from the running VMs here
 *      (HotSpot 17 C1/C2 with -XX:+PreserveFramePointer and its native wrappers, Mono 6.8,
 *      node 20's interpreter-trampoline copies, gcc with endbr64), each found at the right
 *      offsets; near misses that must prove nothing (PHP 8.2's traces, Mono's and C2's
 *      frameless methods, a push before `push rbp`, the prologue's bytes inside another
 *      instruction, a branch into the prologue, a write to the return address...);
 *   2. the CFI said for C2's push-less frame and for "no frame", accepted by the library;
 *   3. the real unwinder (libgcc's _Unwind_Backtrace) through hand-assembled code in each
 *      shape, registered through the public API as `jitherald run` describes it: through
 *      a proven frame it reaches this file's caller; at code with no frame it ends there,
 *      cleanly, with _URC_END_OF_STACK.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "check.h"
#include "fmt/arch.h"
#include "fmt/cfi.h"
#include "jitherald.h"
#include "lib/prologue.h"

#define B(...) ((const uint8_t[]){ __VA_ARGS__ }), sizeof((const uint8_t[]){ __VA_ARGS__ })

struct want {
    enum jhr_frame_kind kind;
    uint32_t push_end, set_end;
};

static void expect(const char *what, const uint8_t *code, size_t len, size_t size,
                   struct want w)
{
    struct jhr_frame f;
    enum jhr_frame_kind k = jhr_prologue_frame(code, size ? size : len, &f);
    check_count++;
    if (k != w.kind || f.kind != w.kind ||
        (w.kind == JHR_FRAME_PUSH && (f.push_end != w.push_end || f.set_end != w.set_end))) {
        check_failures++;
        fprintf(stderr, "%s: kind %d push_end %u set_end %u, expected %d %u %u\n", what,
                (int)k, f.push_end, f.set_end, (int)w.kind, w.push_end, w.set_end);
    }
}

#define PUSH(p, s) ((struct want){ JHR_FRAME_PUSH, p, s })
#define NONE ((struct want){ JHR_FRAME_NONE, 0, 0 })

/* node 20, `--interpreted-frames-native-stack`: the copy of the interpreter entry
 * trampoline for JS:~kill (0x378 bytes), up to its prologue at 0x6e; its branches go
 * to 0x28 (before), 0x6e (the prologue) and past it (0x19c, 0x1d2, 0x2d2: paths that
 * build frames of their own). */
static const uint8_t v8_trampoline[0x378] = {       /* the rest: zeros */
    0x4c, 0x8b, 0x57, 0x17, 0x4d, 0x8b, 0x62, 0x07, 0x4d, 0x8b, 0x54, 0x24, 0xff, 0x66, 0x41,
    0x81, 0x7a, 0x0b, 0xf5, 0x00, 0x0f, 0x84, 0xb8, 0x02, 0x00, 0x00, 0x66, 0x41, 0x81, 0x7a,
    0x0b, 0x9f, 0x00, 0x75, 0x05, 0x4d, 0x8b, 0x64, 0x24, 0x07, 0x4d, 0x8b, 0x54, 0x24, 0xff,
    0x66, 0x41, 0x81, 0x7a, 0x0b, 0xbf, 0x00, 0x0f, 0x85, 0x62, 0x01, 0x00, 0x00, 0x48, 0x8b,
    0x5f, 0x27, 0x48, 0x8b, 0x5b, 0x07, 0x48, 0x8b, 0x4b, 0xff, 0x66, 0x81, 0x79, 0x0b, 0xf9,
    0x00, 0x0f, 0x85, 0x1c, 0x00, 0x00, 0x00, 0x0f, 0xb7, 0x4b, 0x15, 0xf6, 0xc1, 0x3e, 0x0f,
    0x85, 0x73, 0x01, 0x00, 0x00, 0x44, 0x8a, 0x53, 0x14, 0x41, 0x80, 0xe2, 0x08, 0x44, 0x88,
    0x53, 0x14, 0xff, 0x43, 0x0b, 0x55, 0x48, 0x89, 0xe5, 0x56, 0x57, 0x50,
};

static void test_matcher(void)
{
    /* ---- the prologues, as the VMs emit them ---- */
    expect("gcc", B(0x55, 0x48, 0x89, 0xe5, 0x53), 0, PUSH(1, 4));
    expect("gcc -fcf-protection: endbr64 first",
           B(0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5, 0xc3), 0, PUSH(5, 8));
    expect("push rbp with an empty REX", B(0x40, 0x55, 0x48, 0x89, 0xe5), 0, PUSH(2, 5));
    expect("Mono, frame-keeping method", B(0x55, 0x48, 0x8b, 0xec, 0x48, 0x83, 0xec, 0x60),
           0, PUSH(1, 4));
    expect("enter 16, 0", B(0xc8, 0x10, 0x00, 0x00, 0x90), 0, PUSH(4, 4));
    expect("HotSpot C1, static: stack bang first",
           B(0x89, 0x84, 0x24, 0x00, 0xc0, 0xfe, 0xff, 0x55, 0x48, 0x8b, 0xec, 0x48, 0x83,
             0xec, 0x40), 0, PUSH(8, 11));
    expect("HotSpot C1, virtual: inline-cache check, nop, stack bang",
           B(0x44, 0x8b, 0x56, 0x08, 0x49, 0xbb, 0x00, 0x00, 0x00, 0x5f, 0xac, 0x7f, 0x00,
             0x00, 0x4d, 0x03, 0xd3, 0x4c, 0x3b, 0xd0, 0x0f, 0x85, 0x06, 0x8c, 0x58, 0x07,
             0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00, 0x89, 0x84, 0x24, 0x00, 0xc0, 0xfe, 0xff,
             0x55, 0x48, 0x8b, 0xec, 0x48, 0x83, 0xec, 0x40), 0, PUSH(0x28, 0x2b));
    expect("HotSpot native wrapper: je over a jmp to the miss stub, then the frame",
           B(0x44, 0x8b, 0x56, 0x08, 0x49, 0xbb, 0x00, 0x00, 0x00, 0x5f, 0xac, 0x7f, 0x00,
             0x00, 0x4d, 0x03, 0xd3, 0x49, 0x3b, 0xc2, 0x0f, 0x84, 0x06, 0x00, 0x00, 0x00,
             0xe9, 0x41, 0x07, 0xac, 0xff, 0x90, 0x89, 0x84, 0x24, 0x00, 0xc0, 0xfe, 0xff,
             0x55, 0x48, 0x8b, 0xec, 0x48, 0x83, 0xec, 0x40), 0, PUSH(0x28, 0x2b));
    expect("node 20: interpreter trampoline copy, 110 bytes before its prologue",
           v8_trampoline, sizeof v8_trampoline, 0, PUSH(0x6f, 0x72));
    expect("a jmp over a byte of padding onto the prologue",
           B(0xeb, 0x01, 0xcc, 0x55, 0x48, 0x89, 0xe5), 0, PUSH(4, 7));

    /* C2 with -XX:+PreserveFramePointer, no stack bang: no push */
    {
        static const uint8_t c2[] = { 0x48, 0x81, 0xec, 0x28, 0x00, 0x00, 0x00, 0x48, 0x89,
                                      0x6c, 0x24, 0x20, 0x48, 0x8b, 0xec, 0x48, 0x83, 0xc5,
                                      0x20, 0x85, 0xf6 };
        struct jhr_frame f;
        CHECK_EQ(jhr_prologue_frame(c2, sizeof c2, &f), JHR_FRAME_SUB);
        CHECK_EQ(f.sub_end, 7);
        CHECK_EQ(f.save_end, 12);
        CHECK_EQ(f.set_end, 19);
        CHECK_EQ(f.frame, 0x28);
        uint8_t cfi[JHR_PROLOGUE_CFI_MAX];
        size_t n = jhr_prologue_cfi(&f, &jh__arch_x86_64, cfi);
        /* advance 7, CFA = rsp+48; advance 5, rbp at CFA-16; advance 7, CFA = rbp+16 */
        static const uint8_t want[] = { 0x47, 0x0e, 0x30, 0x45, 0x86, 0x02, 0x47, 0x0c,
                                        0x06, 0x10 };
        CHECK_EQ(n, sizeof want);
        CHECK(n == sizeof want && !memcmp(cfi, want, n));
        CHECK_EQ(jh__cfi_validate(cfi, n, sizeof c2), 0);
        /* a frame of 8: the store has no displacement and there is no add */
        expect("C2 frame of 8", B(0x48, 0x83, 0xec, 0x08, 0x48, 0x89, 0x2c, 0x24, 0x48, 0x89,
                                  0xe5, 0x90), 0, (struct want){ JHR_FRAME_SUB, 0, 0 });
    }

    /* ---- near misses: nothing proven ---- */
    expect("PHP 8.2 trace (runs in the VM's frame, entered by a jmp)",
           B(0x48, 0xb8, 0x58, 0xf0, 0xad, 0x55, 0x55, 0x55, 0x00, 0x00, 0xc7, 0x00, 0x01,
             0x00, 0x00, 0x00, 0x41, 0x80, 0x7e, 0x58, 0x04), 0, NONE);
    expect("the prologue's bytes inside an immediate",
           B(0x48, 0xb8, 0x00, 0x55, 0x48, 0x89, 0xe5, 0x00, 0x00, 0x00, 0xc3), 0, NONE);
    expect("Mono, frameless method", B(0x48, 0x83, 0xec, 0x18, 0x4c, 0x89, 0x34, 0x24, 0x55,
                                       0x48, 0x89, 0xe5), 0, NONE);
    expect("C2 without PreserveFramePointer", B(0x48, 0x81, 0xec, 0x18, 0x00, 0x00, 0x00,
                                                0x48, 0x89, 0x6c, 0x24, 0x10, 0x85, 0xf6),
           0, NONE);
    expect("C2 shape, rbp saved elsewhere than the frame's top",
           B(0x48, 0x81, 0xec, 0x28, 0x00, 0x00, 0x00, 0x48, 0x89, 0x6c, 0x24, 0x18, 0x48,
             0x8b, 0xec, 0x48, 0x83, 0xc5, 0x20), 0, NONE);
    expect("C2 shape, rbp pointed elsewhere than the saved rbp",
           B(0x48, 0x81, 0xec, 0x28, 0x00, 0x00, 0x00, 0x48, 0x89, 0x6c, 0x24, 0x20, 0x48,
             0x8b, 0xec, 0x48, 0x83, 0xc5, 0x18), 0, NONE);
    expect("push rbx before push rbp (HotSpot's SafepointBlob)",
           B(0x53, 0x55, 0x48, 0x8b, 0xec), 0, NONE);
    expect("push r13, not rbp", B(0x41, 0x55, 0x48, 0x89, 0xe5), 0, NONE);
    expect("mov rsi, rsp", B(0x55, 0x48, 0x89, 0xe6), 0, NONE);
    expect("mov rsp, rbp (the epilogue's)", B(0x55, 0x48, 0x8b, 0xe5), 0, NONE);
    expect("mov r13, rsp", B(0x55, 0x49, 0x89, 0xe5), 0, NONE);
    expect("mov rbp, r12", B(0x55, 0x4c, 0x89, 0xe5), 0, NONE);
    expect("mov rbp, rdi (HotSpot's VM_Version stub)", B(0x55, 0x48, 0x8b, 0xef, 0x53), 0,
           NONE);
    expect("Mono's generic trampoline: pop r11 first",
           B(0x4c, 0x89, 0x5c, 0x24, 0xe8, 0x41, 0x5b, 0x55, 0x48, 0x8b, 0xec), 0, NONE);
    expect("sub rsp before the prologue", B(0x48, 0x83, 0xec, 0x08, 0x55, 0x48, 0x89, 0xe5),
           0, NONE);
    expect("lea rsp before the prologue",
           B(0x48, 0x8d, 0x64, 0x24, 0xf8, 0x55, 0x48, 0x89, 0xe5), 0, NONE);
    expect("a write over the return address", B(0x48, 0x89, 0x04, 0x24, 0x55, 0x48, 0x89,
                                                0xe5), 0, NONE);
    expect("mov rbp, imm first", B(0xbd, 0x01, 0x00, 0x00, 0x00, 0x55, 0x48, 0x89, 0xe5), 0,
           NONE);
    expect("a branch into the prologue", B(0x74, 0x01, 0x55, 0x48, 0x89, 0xe5), 0, NONE);
    expect("a branch into the middle of an instruction",
           B(0x0f, 0x1f, 0x40, 0x00, 0x74, 0xfb, 0x55, 0x48, 0x89, 0xe5), 0, NONE);
    expect("a branch back onto an instruction", B(0x0f, 0x1f, 0x40, 0x00, 0x74, 0xfa, 0x55,
                                                  0x48, 0x89, 0xe5), 0, PUSH(7, 10));
    expect("HotSpot, made not entrant: a jmp over the stack bang",
           B(0xe9, 0xbb, 0x73, 0x58, 0x07, 0xfe, 0xff, 0x55, 0x48, 0x8b, 0xec), 0, NONE);
    expect("int3 first (a debugger's breakpoint)", B(0xcc, 0x55, 0x48, 0x89, 0xe5), 0, NONE);
    expect("ret first", B(0xc3, 0x55, 0x48, 0x89, 0xe5), 0, NONE);
    expect("cut short", B(0x55, 0x48, 0x89), 0, NONE);
    expect("empty", B(0x90), 0, NONE);
    {
        uint8_t far[JHR_PROLOGUE_WINDOW + 4];
        memset(far, 0x90, sizeof far);
        memcpy(far + JHR_PROLOGUE_WINDOW, (const uint8_t[]){ 0x55, 0x48, 0x89, 0xe5 }, 4);
        expect("past the window", far, sizeof far, 0, NONE);
        expect("at the window's last byte", far + 1, sizeof far - 1, 0,
               PUSH(JHR_PROLOGUE_WINDOW, JHR_PROLOGUE_WINDOW + 3));
    }

    /* no frame: the return address undefined, so unwinders end there */
    struct jhr_frame none = { 0 };
    uint8_t cfi[JHR_PROLOGUE_CFI_MAX];
    size_t n = jhr_prologue_cfi(&none, &jh__arch_x86_64, cfi);
    CHECK_EQ(n, 2);
    CHECK(cfi[0] == 0x07 && cfi[1] == 16);              /* DW_CFA_undefined rip */
    CHECK_EQ(jh__cfi_validate(cfi, n, 1), 0);
    CHECK_EQ(jhr_prologue_cfi(&none, &jh__arch_arm64, cfi), 2);
    CHECK(cfi[0] == 0x07 && cfi[1] == 30);              /* DW_CFA_undefined x30 */
}

/* ---- 3. libgcc's unwinder through each shape (x86-64 code: run where it runs) ---- */
#if defined(__x86_64__)
struct _Unwind_Context;
int _Unwind_Backtrace(int (*fn)(struct _Unwind_Context *, void *), void *arg);
uintptr_t _Unwind_GetIP(struct _Unwind_Context *);

#define MAXF 64
static uintptr_t ips[MAXF];
static int nips;

static int collect(struct _Unwind_Context *uc, void *arg)
{
    (void)arg;
    if (nips < MAXF)
        ips[nips++] = _Unwind_GetIP(uc);
    return 0;
}

static int walk_rc;
__attribute__((noinline)) static void callback(void)
{
    nips = 0;
    walk_rc = _Unwind_Backtrace(collect, NULL);
}

/* the JIT code is called with the callback in rdi */
__attribute__((noinline)) static void call_jit(void (*fn)(void (*)(void)))
{
    fn(callback);
    __asm__ volatile("" ::: "memory");
}

static int seen_in(uintptr_t lo, size_t len)
{
    for (int i = 0; i < nips; i++)
        if (ips[i] - 1 >= lo && ips[i] - 1 < lo + len)
            return i;
    return -1;
}

static void test_unwinder(void)
{
    static const uint8_t c1[] = {       /* HotSpot C1: bang, push rbp; mov rbp,rsp */
        0x89, 0x84, 0x24, 0x00, 0xc0, 0xfe, 0xff, 0x55, 0x48, 0x8b, 0xec, 0x48, 0x83, 0xec,
        0x10, 0xff, 0xd7, 0xc9, 0xc3 };
    static const uint8_t c2[] = {       /* C2 -XX:+PreserveFramePointer, no bang */
        0x48, 0x81, 0xec, 0x28, 0x00, 0x00, 0x00, 0x48, 0x89, 0x6c, 0x24, 0x20, 0x48, 0x8b,
        0xec, 0x48, 0x83, 0xc5, 0x20, 0xff, 0xd7, 0x48, 0x83, 0xc4, 0x20, 0x5d, 0xc3 };
    static const uint8_t flat[] = {     /* frameless: sub rsp, 8; call rdi; add rsp, 8; ret */
        0x48, 0x83, 0xec, 0x08, 0xff, 0xd7, 0x48, 0x83, 0xc4, 0x08, 0xc3 };
    static const struct { const char *name; const uint8_t *code; size_t len;
                          enum jhr_frame_kind kind; int through; } fns[] = {
        { "c1", c1, sizeof c1, JHR_FRAME_PUSH, 1 },
        { "c2", c2, sizeof c2, JHR_FRAME_SUB, 1 },
        { "flat", flat, sizeof flat, JHR_FRAME_NONE, 0 },
    };
    uint8_t *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(m != MAP_FAILED);
    if (m == MAP_FAILED)
        return;
    /* call_jit's code: up to callback's if that follows it */
    size_t call_len = (uintptr_t)callback > (uintptr_t)call_jit &&
                      (uintptr_t)callback - (uintptr_t)call_jit < 256
                      ? (uintptr_t)callback - (uintptr_t)call_jit : 64;
    jh_ctx *jh = NULL;
    struct jh_options o = { .sz = sizeof o, .channels = JH_UNWIND,
                            .flags = JH_OPT_IGNORE_ENV | JH_OPT_STRICT };
    CHECK_EQ(jh_open(&jh, &o), 0);
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        uint8_t *at = m + 256 * i;
        memcpy(at, fns[i].code, fns[i].len);
        uint8_t cfi[JHR_PROLOGUE_CFI_MAX];
        struct jh_code c = { .sz = sizeof c, .name = fns[i].name, .start = at,
                             .size = fns[i].len };
        CHECK_EQ(jhr_prologue_describe(&c, cfi), fns[i].kind);
        CHECK_EQ(jh_code_add(jh, &c, NULL), 0);
        CHECK_EQ(jh_flush(jh), 0);
        call_jit((void (*)(void (*)(void)))(uintptr_t)at);
        int jit = seen_in((uintptr_t)at, fns[i].len);
        printf("%s: %d frames, the JIT frame #%d, rc %d\n", fns[i].name, nips, jit, walk_rc);
        CHECK(jit > 0);
        CHECK_EQ(walk_rc, 5);                   /* _URC_END_OF_STACK: a clean end */
        if (jit <= 0 || jit + 1 >= nips)
            continue;
        uintptr_t ra = ips[jit + 1];
        if (fns[i].through) {
            /* through the JIT frame to its caller, and on to _start's end (ip 0) */
            CHECK(ra - 1 >= (uintptr_t)call_jit && ra - 1 < (uintptr_t)call_jit + call_len);
            CHECK(nips > jit + 3 && ips[nips - 1] == 0);
        } else {
            /* ends at the JIT frame as the stack ends at _start: nothing read from [rsp] */
            CHECK_EQ(nips, jit + 2);
            CHECK_EQ(ra, 0);
        }
    }
    jh_close(jh);
    munmap(m, 4096);
}
#endif

int main(void)
{
    test_matcher();
#if defined(__x86_64__)
    test_unwinder();
#endif
    return check_done();
}
