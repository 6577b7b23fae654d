/*
 * longjmp_vm.c — Windows x64: the crash MoarVM hit, and the unwind channel that prevents it.
 *
 * A VM written in C reports an error from deep inside an op with longjmp back to its
 * interpreter (MoarVM's MVM_exception_throw_adhoc). Code its JIT compiled calls those ops,
 * so JIT frames lie between the longjmp and its setjmp. On Windows x64 longjmp unwinds frame
 * by frame with RtlUnwindEx — MSVC's always, msvcrt's when the jmp_buf names a frame, which
 * mingw-w64's setjmp does — and every frame it crosses needs unwind data. JIT code has none
 * unless the JIT registers it.
 *
 *   C:\> longjmp_vm.exe                      (JITHERALD unset: no channel)
 *   FAIL: the interpreter's handler ran for 0 of 100 longjmps: ...
 *   C:\> set JITHERALD=unwind
 *   C:\> longjmp_vm.exe
 *   ok: 100 longjmps from an op through 2 JIT frames, the interpreter's handler ran 100 times
 *
 * Without unwind data the unwinder takes a JIT frame for a leaf and reads its slots as return
 * addresses, one after another, until one looks like code: then it unwinds that code's frame
 * from the wrong place. Which slot does it depends on what the frames hold — a stale return
 * address in a slot the JIT never wrote, a code address the VM keeps there — so in a real VM
 * it comes and goes with builds and inputs. This JIT keeps the dispatch loop's resume address
 * in its frame, so the walk goes astray every time: it unwinds the dispatch loop's 2 KiB frame
 * from there and leaves the stack. Windows raises STATUS_BAD_STACK at that point and the
 * process ends (MoarVM's crash); Wine prints "err:unwind:RtlUnwindEx invalid frame", gives up
 * the walk and lands the longjmp anyway, every unwind handler in between skipped. The
 * interpreter's frame (run_jitted) has such a handler, as MSVC's __finally or a C++ destructor
 * makes one: it is how this program sees, under Wine too, whether the walk got through.
 *
 * Other arguments pick a longjmp that does not unwind (MoarVM's and Unicorn's fix:
 * _setjmp(buf, NULL)). Those cross JIT frames with no unwind data, and never run the handlers
 * of the frames they cross either:
 *   longjmp_vm.exe builtin     GCC's __builtin_setjmp/__builtin_longjmp
 *   longjmp_vm.exe noframe     msvcrt's longjmp from _setjmp(buf, NULL)
 * Exit status 0 when the longjmp behaved as it should, 1 otherwise, 2 for a usage error.
 */
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <windows.h>

#include "jitherald.h"

enum { ROUNDS = 100 };

/* The VM's thread state: where errors go, and what the interpreter's handler saw. */
struct tc {
    jmp_buf on_error;
    void *on_error_builtin[5];   /* __builtin_setjmp's buffer */
    int mode;                    /* 0 msvcrt longjmp (unwinds), 1 builtin, 2 msvcrt, no frame */
    const void *resume;          /* where the interpreter resumes: kept in the JIT's frame */
    int errors, unwound;
    int64_t error_value;
};

/* ---- the ops the JIT code calls --------------------------------------------------------- */
static void op_throw(struct tc *tc, int64_t value)
{
    tc->error_value = value;
    if (tc->mode == 1)
        __builtin_longjmp(tc->on_error_builtin, 1);
    longjmp(tc->on_error, 1);
}

/* ---- the interpreter's frame around JIT code ---------------------------------------------
 * run_jitted(fn, tc, x) calls fn(tc, x). Its unwind handler runs when an unwind crosses it
 * (the longjmp's RtlUnwindEx included): it pops what the interpreter pushed for the call, as
 * MSVC's __finally would. GCC has no __try/__finally, so the frame is written out. */
EXCEPTION_DISPOSITION interp_unwind_handler(EXCEPTION_RECORD *rec, void *frame,
                                            CONTEXT *ctx, void *dispatch);
static struct tc *handler_tc;
EXCEPTION_DISPOSITION interp_unwind_handler(EXCEPTION_RECORD *rec, void *frame,
                                            CONTEXT *ctx, void *dispatch)
{
    (void)frame, (void)ctx, (void)dispatch;
    if ((rec->ExceptionFlags & EXCEPTION_UNWINDING) && rec->ExceptionCode == STATUS_LONGJUMP)
        handler_tc->unwound++;
    return ExceptionContinueSearch;
}

typedef int64_t jit_fn(struct tc *tc, int64_t x);
int64_t run_jitted(jit_fn *fn, struct tc *tc, int64_t x);
__asm__("\t.text\n"
        "\t.globl run_jitted\n"
        "\t.def run_jitted; .scl 2; .type 32; .endef\n"
        "\t.seh_proc run_jitted\n"
        "run_jitted:\n"
        "\tpush %rbp\n"
        "\t.seh_pushreg %rbp\n"
        "\tmov %rsp, %rbp\n"
        "\t.seh_setframe %rbp, 0\n"
        "\tsub $32, %rsp\n"
        "\t.seh_stackalloc 32\n"
        "\t.seh_endprologue\n"
        "\t.seh_handler interp_unwind_handler, @unwind\n"
        "\tmov %rcx, %rax\n"
        "\tmov %rdx, %rcx\n"
        "\tmov %r8, %rdx\n"
        "\tcall *%rax\n"
        "\tnop\n"
        "\tadd $32, %rsp\n"
        "\tpop %rbp\n"
        "\tret\n"
        "\t.seh_endproc\n");

/* ---- the JIT ----------------------------------------------------------------------------
 * Two functions in the VM's usual frame (push rbp; mov rbp,rsp; sub rsp,48), every slot of
 * which they initialise (a JIT whose GC scans frames must):
 *   outer(tc, x): tc in its slots, and tc->resume in one of them; calls inner(tc, x + 1)
 *   inner(tc, x): tc in its slots; calls op_throw(tc, x)
 * written into one VirtualAlloc'd area, made read+execute, then announced. */
static uint8_t *put(uint8_t *p, const char *bytes, size_t n)
{
    memcpy(p, bytes, n);
    return p + n;
}

static size_t emit(uint8_t *code, const void *callee, int keep_resume)
{
    uint8_t *p = put(code, "\x55\x48\x89\xe5\x48\x83\xec\x30", 8); /* push rbp; mov rbp,rsp; sub rsp,48 */
    for (uint8_t off = 0; off < 48; off += 8) {
        p = put(p, "\x48\x89\x4c\x24", 4);                /* mov [rsp+off], rcx */
        *p++ = off;
    }
    if (keep_resume) {
        int32_t at = (int32_t)offsetof(struct tc, resume);
        p = put(p, "\x48\x8b\x81", 3);                    /* mov rax, [rcx + resume] */
        memcpy(p, &at, 4);
        p = put(p + 4, "\x48\x89\x44\x24\x28", 5);        /* mov [rsp+40], rax */
        p = put(p, "\x48\x83\xc2\x01", 4);                /* add rdx, 1 */
    }
    uint64_t to = (uint64_t)(uintptr_t)callee;            /* rcx, rdx passed on */
    p = put(p, "\x48\xb8", 2);                              /* mov rax, callee */
    memcpy(p, &to, 8);
    p = put(p + 8, "\xff\xd0", 2);                          /* call rax */
    p = put(p, "\x48\x83\xc4\x30\x5d\xc3", 6);              /* add rsp,48; pop rbp; ret */
    return (size_t)(p - code);
}

static jit_fn *compile(jh_ctx *jh)
{
    uint8_t *area = VirtualAlloc(NULL, 65536, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE);
    if (!area)
        return NULL;
    uint8_t *inner = area, *outer = area + 64;
    size_t n_inner = emit(inner, (const void *)op_throw, 0);
    size_t n_outer = emit(outer, inner, 1);
    DWORD old;
    if (!VirtualProtect(area, 65536, PAGE_EXECUTE_READ, &old))
        return NULL;
    FlushInstructionCache(GetCurrentProcess(), area, 128);
    /* What every function of this JIT looks like to an unwinder: rbp pushed at +1, set at
     * +4; the frame below it is found from rbp. */
    struct jh_code c = { .sz = sizeof c, .unwind = JH_UNWIND_FRAME_POINTER,
                         .fp_push_end = 1, .fp_set_end = 4 };
    uint64_t id;
    c.name = "inner", c.start = inner, c.size = n_inner;
    int err = jh_code_add(jh, &c, &id);
    c.name = "outer", c.start = outer, c.size = n_outer;
    if (!err)
        err = jh_code_add(jh, &c, &id);
    if (err)
        fprintf(stderr, "longjmp_vm: jh_code_add: %s\n", jh_strerror(err));
    return (jit_fn *)(void *)outer;
}

/* ---- the interpreter --------------------------------------------------------------------
 * interp_call runs compiled code; an op's error lands at its setjmp, as in MoarVM's run
 * loop. vm_dispatch is the VM's dispatch loop, with its register file on the stack. */
__attribute__((noinline)) static void interp_call(struct tc *tc, jit_fn *code, int64_t x)
{
    if (tc->mode == 1) {
        if (__builtin_setjmp(tc->on_error_builtin)) {
            tc->errors++;
            return;
        }
    } else if (tc->mode == 2) {
        if (_setjmp(tc->on_error, NULL)) {
            tc->errors++;
            return;
        }
    } else if (setjmp(tc->on_error)) {
        tc->errors++;
        return;
    }
    run_jitted(code, tc, x);
    printf("FAIL: the op returned instead of throwing\n");
}

/* Where the dispatch loop resumes: the return address of this call. */
__attribute__((noinline)) static void note_resume(struct tc *tc)
{
    tc->resume = __builtin_return_address(0);
}

__attribute__((noinline)) static int vm_dispatch(struct tc *tc, jit_fn *code)
{
    volatile int64_t regs[256];         /* the VM's registers */
    for (int r = 0; r < 256; r++)
        regs[r] = r;
    note_resume(tc);
    for (int i = 1; i <= ROUNDS; i++) {
        interp_call(tc, code, regs[i % 256] - i % 256 + i);
        if (tc->error_value != i + 1) {
            printf("FAIL: round %d: the error carried %lld\n", i, (long long)tc->error_value);
            return -1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const char *const modes[] = { "msvcrt", "builtin", "noframe" };
    static struct tc tc;
    const char *mode = argc > 1 ? argv[1] : "msvcrt";
    while (tc.mode < 3 && strcmp(mode, modes[tc.mode]))
        tc.mode++;
    if (tc.mode == 3) {
        fprintf(stderr, "usage: longjmp_vm.exe [msvcrt|builtin|noframe]\n");
        return 2;
    }
    handler_tc = &tc;

    jh_ctx *jh;
    struct jh_options o = { .sz = sizeof o, .engine = "longjmp_vm" };  /* $JITHERALD */
    int err = jh_open(&jh, &o);
    if (err < 0) {
        fprintf(stderr, "longjmp_vm: jh_open: %s\n", jh_strerror(err));
        return 1;
    }
    int unwind = (jh_channels(jh) & JH_UNWIND) != 0;
    printf("longjmp: %s; JIT unwind data: %s\n", mode,
           unwind ? "registered (JITHERALD=unwind)" : "none");
    fflush(stdout);
    jit_fn *code = compile(jh);
    if (!code)
        return 1;
    if (vm_dispatch(&tc, code) < 0)
        return 1;
    int ok;
    if (tc.mode == 0) {
        ok = tc.errors == ROUNDS && tc.unwound == ROUNDS;
        if (ok)
            printf("ok: %d longjmps from an op through 2 JIT frames, the interpreter's handler "
                   "ran %d times\n", tc.errors, tc.unwound);
        else
            printf("FAIL: the interpreter's handler ran for %d of %d longjmps: the unwinder lost "
                   "its way in JIT frames that have no unwind data (Windows ends the process "
                   "there: STATUS_BAD_STACK). Set JITHERALD=unwind\n", tc.unwound, tc.errors);
    } else {
        ok = tc.errors == ROUNDS && tc.unwound == 0;
        printf("%s: %d longjmps through 2 JIT frames without unwinding (handler ran %d times)\n",
               ok ? "ok" : "FAIL", tc.errors, tc.unwound);
    }
    jh_close(jh);
    return ok ? 0 : 1;
}
