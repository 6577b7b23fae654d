/*
 * unwind_test.cc — run under Wine by tests/integration/win64_unwind.sh: JIT frames (wjit.h)
 * crossed by what Windows programs do, with the unwind channel switched on from the
 * environment (JITHERALD=unwind), exactly as a user would:
 *     unwind_test.exe throw       a C++ exception thrown below the JIT frames, caught in
 *                                 test_main; a destructor between them must run
 *     unwind_test.exe longjmp     msvcrt's longjmp (it unwinds frame by frame) across them
 *     unwind_test.exe backtrace   RtlCaptureStackBackTrace from below them reaches test_main
 *     unwind_test.exe virtual     RtlLookupFunctionEntry + RtlVirtualUnwind, frame by frame:
 *                                 every JIT frame found, rbx/rsi restored, test_main reached
 *     unwind_test.exe reuse       removal (lookups then fail), code re-used at the same
 *                                 addresses, jh_code_move
 *     unwind_test.exe threads     8 threads adding, throwing through and removing chains
 *     unwind_test.exe many N      N functions registered, lookups right, half removed
 *     unwind_test.exe refused     CFI Windows cannot express: reported, call still succeeds
 * Each prints "ok ..." lines and exits 0, or says FAIL and exits 1 (or crashes: without
 * jitherald the first four do, which the script checks too).
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

#include "jitherald.h"
#include "wjit.h"

static int failures;
#define CHECK(c) do { if (!(c)) { printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); \
    fflush(stdout); failures++; } } while (0)

static char logbuf[8192];
static void on_log(void *arg, int level, const char *msg)
{
    (void)arg;
    size_t n = strlen(logbuf);
    snprintf(logbuf + n, sizeof logbuf - n, "%d %s\n", level, msg);
    fprintf(stderr, "jitherald: %s\n", msg);
}

static jh_ctx *open_ctx(void)
{
    jh_ctx *jh;
    struct jh_options o = {};
    o.sz = sizeof o;
    o.engine = "wjit";
    o.log = on_log;
    if (jh_open(&jh, &o) < 0) {
        printf("FAIL jh_open\n");
        exit(1);
    }
    printf("channels %#x\n", jh_channels(jh));
    return jh;
}

/* Where pc is: the start of its function by the system's own lookup, 0 if none. */
static uintptr_t fn_start(uintptr_t pc)
{
    DWORD64 base;
    RUNTIME_FUNCTION *rf = RtlLookupFunctionEntry(pc, &base, NULL);
    return rf ? (uintptr_t)(base + rf->BeginAddress) : 0;
}

extern "C" int test_main(int argc, char **argv);

/* A VM function with a 2 KiB frame, and a code address inside it past its prologue: what
 * `middle` keeps in its frame (wjit.c, emit_fp). An unwinder that scans the stack through
 * JIT frames it knows nothing of takes it for a return address and unwinds 2 KiB at once. */
__attribute__((noinline)) static void vm_busy(volatile char *out)
{
    volatile char buf[2048];
    for (int i = 0; i < 2048; i += 64)
        buf[i] = (char)i;
    *out = buf[(unsigned char)out[1]];
}
static const void *vm_pc;

static void find_vm_pc(void)
{
    DWORD64 base;
    RUNTIME_FUNCTION *rf = RtlLookupFunctionEntry((DWORD64)(uintptr_t)vm_busy, &base, NULL);
    const uint8_t *info = (const uint8_t *)(uintptr_t)(base + rf->UnwindData);
    vm_pc = (const uint8_t *)(uintptr_t)vm_busy + info[1] + 1;      /* SizeOfProlog */
}

/* ---- a C++ exception ------------------------------------------------------------------- */
struct vm_error {
    int code;
};
static int guards_run;
struct Guard {
    ~Guard() { guards_run++; }
};

static void cb_throw(uint64_t arg) { throw vm_error{ (int)arg }; }

__attribute__((noinline)) static uint64_t run_guarded(wjit_entry *e, uint64_t arg)
{
    Guard g;
    return e(arg, cb_throw, vm_pc);
}

static void test_throw(jh_ctx *jh)
{
    struct wjit_chain c;
    CHECK(wjit_make_chain(jh, "throw", &c) == 0);
    long sum = 0;
    for (int i = 1; i <= 100; i++) {
        try {
            run_guarded(c.entry, (uint64_t)i);
            printf("FAIL the JIT code returned instead of throwing\n");
            exit(1);
        } catch (const vm_error &e) {
            sum += e.code;
        }
    }
    CHECK(sum == 5050);
    CHECK(guards_run == 100);
    if (sum == 5050 && guards_run == 100)
        printf("ok throw: 100 exceptions caught across 3 JIT frames, 100 destructors run\n");
}

/* ---- longjmp ---------------------------------------------------------------------------- */
static jmp_buf jb;
static void cb_longjmp(uint64_t arg) { longjmp(jb, (int)arg); }

/* msvcrt's longjmp unwinds with RtlUnwindEx, calling the handler of each frame it crosses:
 * a C function's __finally (a termination handler, run by __C_specific_handler) must run.
 * GCC has no __try/__finally, so run_longjmp is written out: it calls e(arg, cb, vm_pc)
 * with finally_ran() as the termination handler of the call. */
static int finallys_run;
extern "C" void finally_ran(unsigned char abnormal, void *frame)
{
    (void)frame;
    if (abnormal)
        finallys_run++;
}
extern "C" void run_longjmp(wjit_entry *e, uint64_t arg, wjit_callback *cb, const void *vm_pc);
__asm__(
    "\t.text\n"
    "\t.globl run_longjmp\n"
    "\t.def run_longjmp; .scl 2; .type 32; .endef\n"
    "\t.seh_proc run_longjmp\n"
    "run_longjmp:\n"
    "\tpush %rbp\n"
    "\t.seh_pushreg %rbp\n"
    "\tmov %rsp, %rbp\n"
    "\t.seh_setframe %rbp, 0\n"
    "\tsub $32, %rsp\n"
    "\t.seh_stackalloc 32\n"
    "\t.seh_endprologue\n"
    "\t.seh_handler __C_specific_handler, @unwind\n"
    "\tmov %rcx, %rax\n"
    "\tmov %rdx, %rcx\n"
    "\tmov %r8, %rdx\n"
    "\tmov %r9, %r8\n"
    ".Ltry_start:\n"
    "\tcall *%rax\n"
    "\tnop\n"
    ".Ltry_end:\n"
    "\tadd $32, %rsp\n"
    "\tpop %rbp\n"
    "\tret\n"
    "\t.seh_handlerdata\n"
    "\t.long 1\n"
    "\t.rva .Ltry_start, .Ltry_end, finally_ran\n"
    "\t.long 0\n"
    "\t.text\n"
    "\t.seh_endproc\n");

static void test_longjmp(jh_ctx *jh)
{
    struct wjit_chain c;
    CHECK(wjit_make_chain(jh, "longjmp", &c) == 0);
    volatile int n = 0;
    for (volatile int i = 1; i <= 100; i++) {
        int r = setjmp(jb);
        if (r == 0) {
            run_longjmp(c.entry, (uint64_t)i, cb_longjmp, vm_pc);
            printf("FAIL the JIT code returned instead of jumping\n");
            exit(1);
        }
        CHECK(r == i);
        n++;
    }
    CHECK(n == 100);
    CHECK(finallys_run == 100);
    if (n == 100 && finallys_run == 100)
        printf("ok longjmp: 100 longjmps across 3 JIT frames, 100 __finally handlers run\n");
    else
        printf("longjmp: %d jumps, %d __finally handlers run\n", (int)n, finallys_run);
}

/* ---- RtlCaptureStackBackTrace -------------------------------------------------------- */
static void *frames[64];
static int nframes;
static void cb_backtrace(uint64_t arg)
{
    (void)arg;
    nframes = RtlCaptureStackBackTrace(0, 64, frames, NULL);
}

__attribute__((noinline)) static void run_backtrace(wjit_entry *e)
{
    e(0, cb_backtrace, vm_pc);
    __asm__ volatile("");   /* not a tail call: this frame stays */
}

static void test_backtrace(jh_ctx *jh)
{
    struct wjit_chain c;
    CHECK(wjit_make_chain(jh, "backtrace", &c) == 0);
    run_backtrace(c.entry);
    /* inner, middle, outer in a row, then run_backtrace, then test_main */
    int at = -1;
    for (int i = 0; i < nframes; i++) {
        uintptr_t pc = (uintptr_t)frames[i] - 1;
        printf("  #%d %p %s\n", i, frames[i], wjit_which(&c, pc) >= 0 ?
               c.fn[wjit_which(&c, pc)].name : "");
        if (at < 0 && wjit_which(&c, pc) == 2)
            at = i;
    }
    CHECK(at >= 0 && at + 4 < nframes);
    if (at >= 0 && at + 4 < nframes) {
        CHECK(wjit_which(&c, (uintptr_t)frames[at + 1] - 1) == 1);
        CHECK(wjit_which(&c, (uintptr_t)frames[at + 2] - 1) == 0);
        CHECK(fn_start((uintptr_t)frames[at + 3] - 1) == (uintptr_t)run_backtrace);
        CHECK(fn_start((uintptr_t)frames[at + 4] - 1) == (uintptr_t)test_main);
        if (!failures)
            printf("ok backtrace: inner, middle, outer, run_backtrace, test_main\n");
    }
}

/* ---- RtlVirtualUnwind, by hand ---------------------------------------------------------- */
struct frame {
    uintptr_t pc;
    bool described;
    DWORD64 rbx, rsi;
};
static struct frame walk[64];
static int nwalk;

static void cb_virtual(uint64_t arg)
{
    (void)arg;
    CONTEXT ctx;
    RtlCaptureContext(&ctx);
    for (nwalk = 0; nwalk < 64 && ctx.Rip; nwalk++) {
        DWORD64 base, frame;
        void *data;
        RUNTIME_FUNCTION *rf = RtlLookupFunctionEntry(ctx.Rip, &base, NULL);
        walk[nwalk] = (struct frame){ (uintptr_t)ctx.Rip, rf != NULL, ctx.Rbx, ctx.Rsi };
        if (rf) {
            RtlVirtualUnwind(UNW_FLAG_NHANDLER, base, ctx.Rip, rf, &ctx, &data, &frame, NULL);
        } else {            /* what Windows does for a function it knows nothing of */
            ctx.Rip = *(DWORD64 *)ctx.Rsp;
            ctx.Rsp += 8;
        }
    }
}

__attribute__((noinline)) static void run_virtual(wjit_entry *e)
{
    e(0, cb_virtual, vm_pc);
    __asm__ volatile("");
}

static void test_virtual(jh_ctx *jh)
{
    struct wjit_chain c;
    CHECK(wjit_make_chain(jh, "virtual", &c) == 0);
    run_virtual(c.entry);
    int at = -1;
    for (int i = 0; i < nwalk; i++) {
        int w = wjit_which(&c, walk[i].pc);
        printf("  #%d %p %s%s rbx=%llx rsi=%llx\n", i, (void *)walk[i].pc, w >= 0 ?
               c.fn[w].name : "", walk[i].described ? "" : " (no function entry)",
               (unsigned long long)walk[i].rbx, (unsigned long long)walk[i].rsi);
        if (at < 0 && w == 2)
            at = i;
    }
    CHECK(at >= 0 && at + 4 < nwalk);
    if (at < 0 || at + 4 >= nwalk)
        return;
    for (int k = 0; k < 3; k++) {
        CHECK(walk[at + k].described);
        CHECK(wjit_which(&c, walk[at + k].pc) == 2 - k);
        CHECK(fn_start(walk[at + k].pc) == (uintptr_t)c.fn[2 - k].code);
    }
    CHECK(walk[at + 1].rbx == WJIT_RBX && walk[at + 1].rsi == WJIT_RSI);
    CHECK(fn_start(walk[at + 3].pc) == (uintptr_t)run_virtual);
    CHECK(fn_start(walk[at + 4].pc) == (uintptr_t)test_main);
    if (!failures)
        printf("ok virtual: 3 JIT frames described, rbx/rsi restored in middle, test_main "
               "reached\n");
}

/* ---- removal, re-use, move ----------------------------------------------------------- */
static bool throws_through(const struct wjit_chain *c)
{
    try {
        run_guarded(c->entry, 7);
    } catch (const vm_error &e) {
        return e.code == 7;
    }
    return false;
}

static void test_reuse(jh_ctx *jh)
{
    uint8_t *at = wjit_here();
    struct wjit_chain c;
    CHECK(wjit_make_chain(jh, "first", &c) == 0);
    CHECK(throws_through(&c));
    CHECK(fn_start((uintptr_t)c.fn[2].code + 3) == (uintptr_t)c.fn[2].code);
    wjit_unchain(jh, &c);
    for (int i = 0; i < 3; i++)
        CHECK(fn_start((uintptr_t)c.fn[i].code + 3) == 0);
    printf("ok removed: no function entry left at the old addresses\n");

    wjit_rewind(at);
    struct wjit_chain d;
    CHECK(wjit_make_chain(jh, "second", &d) == 0);
    CHECK(d.fn[0].code == c.fn[0].code);
    CHECK(throws_through(&d));
    CHECK(fn_start((uintptr_t)d.fn[1].code + 3) == (uintptr_t)d.fn[1].code);
    printf("ok re-used: the same addresses described again, exceptions cross them\n");

    /* jh_code_move: the same chain compiled elsewhere (its calls retargeted) */
    struct wjit_chain e;
    CHECK(wjit_make_chain(NULL, "moved", &e) == 0);
    for (int i = 0; i < 3; i++) {
        CHECK(e.fn[i].size == d.fn[i].size);
        CHECK(jh_code_move(jh, d.fn[i].id, e.fn[i].code) == 0);
        e.fn[i].id = d.fn[i].id;
    }
    CHECK(throws_through(&e));
    for (int i = 0; i < 3; i++) {
        CHECK(fn_start((uintptr_t)d.fn[i].code + 3) == 0);
        CHECK(fn_start((uintptr_t)e.fn[i].code + 3) == (uintptr_t)e.fn[i].code);
    }
    wjit_unchain(jh, &e);
    if (!failures)
        printf("ok moved: described at the new place only\n");
}

/* ---- threads ----------------------------------------------------------------------------- */
static jh_ctx *shared;
static volatile LONG thrown;

static DWORD WINAPI worker(void *arg)
{
    char tag[32];
    for (int round = 0; round < 25; round++) {
        snprintf(tag, sizeof tag, "t%d_%d", (int)(intptr_t)arg, round);
        struct wjit_chain c;
        if (wjit_make_chain(shared, tag, &c) != 0) {
            printf("FAIL wjit_chain in a thread\n");
            failures++;
            return 1;
        }
        for (int i = 0; i < 20; i++) {
            if (throws_through(&c))
                InterlockedIncrement(&thrown);
            else
                failures++;
        }
        wjit_unchain(shared, &c);
    }
    return 0;
}

static void test_threads(jh_ctx *jh)
{
    shared = jh;
    HANDLE t[8];
    for (int i = 0; i < 8; i++)
        t[i] = CreateThread(NULL, 0, worker, (void *)(intptr_t)i, 0, NULL);
    WaitForMultipleObjects(8, t, TRUE, INFINITE);
    for (int i = 0; i < 8; i++)
        CloseHandle(t[i]);
    CHECK(thrown == 8 * 25 * 20);
    if (thrown == 8 * 25 * 20)
        printf("ok threads: 4000 exceptions across chains added and removed by 8 threads\n");
}

/* ---- many functions ---------------------------------------------------------------------- */
static void test_many(jh_ctx *jh, int n)
{
    struct wjit_fn *f = (struct wjit_fn *)calloc((size_t)n, sizeof *f);
    for (int i = 0; i < n; i++)
        CHECK(wjit_leaf(jh, "leaf", 48, &f[i]) == 0);
    struct wjit_chain c;
    CHECK(wjit_make_chain(jh, "after_many", &c) == 0);
    CHECK(throws_through(&c));
    int wrong = 0;
    for (int i = 0; i < n; i++)
        wrong += fn_start((uintptr_t)f[i].code + 5) != (uintptr_t)f[i].code;
    CHECK(wrong == 0);
    for (int i = 0; i < n; i += 2)
        jh_code_remove(jh, f[i].id);
    for (int i = 0; i < n; i++)
        wrong += fn_start((uintptr_t)f[i].code + 5) != (i % 2 ? (uintptr_t)f[i].code : 0);
    CHECK(wrong == 0);
    CHECK(throws_through(&c));
    if (!failures)
        printf("ok many: %d functions looked up right, half removed, the rest still found\n", n);
    free(f);
}

/* ---- CFI Windows cannot express -------------------------------------------------------- */
static void test_refused(jh_ctx *jh)
{
    /* push rbp; mov rbp,rsp; push rbx: rbx below the frame base */
    static const uint8_t cfi[] = { 0x41, 0x0e, 16, 0x86, 2, 0x43, 0x0d, 6, 0x41, 0x83, 3 };
    struct wjit_fn leaf;
    CHECK(wjit_leaf(NULL, "x", 32, &leaf) == 0);
    struct jh_code code = {};
    code.sz = sizeof code;
    code.name = "late_push";
    code.start = leaf.code;
    code.size = 32;
    code.unwind = JH_UNWIND_CFI;
    code.cfi = cfi;
    code.cfi_len = sizeof cfi;
    uint64_t id;
    CHECK(jh_code_add(jh, &code, &id) == 0);
    CHECK(jh_channels(jh) & JH_UNWIND);
    CHECK(strstr(logbuf, "late_push") && strstr(logbuf, "+0x5") &&
          strstr(logbuf, "below the frame base"));
    CHECK(fn_start((uintptr_t)leaf.code) == 0);
    if (!failures)
        printf("ok refused: the row is named, the call succeeds, the channel stays on\n");
}

extern "C" int test_main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc < 2 || wjit_init(64u << 20) < 0) {
        printf("usage: unwind_test throw|longjmp|backtrace|virtual|reuse|threads|many N|refused\n");
        return 2;
    }
    find_vm_pc();
    jh_ctx *jh = open_ctx();
    const char *t = argv[1];
    if (!strcmp(t, "throw"))
        test_throw(jh);
    else if (!strcmp(t, "longjmp"))
        test_longjmp(jh);
    else if (!strcmp(t, "backtrace"))
        test_backtrace(jh);
    else if (!strcmp(t, "virtual"))
        test_virtual(jh);
    else if (!strcmp(t, "reuse"))
        test_reuse(jh);
    else if (!strcmp(t, "threads"))
        test_threads(jh);
    else if (!strcmp(t, "many"))
        test_many(jh, argc > 2 ? atoi(argv[2]) : 10000);
    else if (!strcmp(t, "refused"))
        test_refused(jh);
    else
        return 2;
    jh_close(jh);
    return failures ? 1 : 0;
}

int main(int argc, char **argv) { return test_main(argc, argv); }
